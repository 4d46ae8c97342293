package app

import (
	"context"
	"strings"
)

// SignInWithGitHub signs in the GitHub user whose OAuth token this is
// ("Continue with GitHub"). The account whose GitHub login matches is
// used (an admin-created user links this way); with none, an account is
// created when sign-up is open or the login is in AdminGitHubLogins, and
// refused otherwise. The token is only used to ask GitHub who it is.
func (s *Service) SignInWithGitHub(ctx context.Context, token, client string) (Actor, error) {
	if s.github == nil {
		return Actor{}, Errorf(EUNAVAILABLE, "signing in with GitHub is not configured on this controller")
	}
	id, err := s.github.Probe(ctx, token)
	if err != nil {
		return Actor{}, err
	}
	if !ValidLogin(id.Login) {
		return Actor{}, Errorf(EUNAVAILABLE, "GitHub answered with an unusable login")
	}
	var acct Account
	err = s.store.View(ctx, func(tx Tx) error {
		acct, err = tx.AccountByGitHubLogin(id.Login)
		return err
	})
	switch {
	case err == nil:
		if acct.Disabled || acct.ID == OperatorAccount {
			return Actor{}, Errorf(EFORBIDDEN, "this account is disabled")
		}
	case ErrorCode(err) != ENOTFOUND:
		return Actor{}, err
	case !s.cfg.Accounts.SignupOpen && !s.adminLogin(id.Login):
		return Actor{}, Errorf(EFORBIDDEN, "no account here is linked to the GitHub login %s: ask an admin to add you with that GitHub login", id.Login)
	default:
		if acct, err = s.newGitHubAccount(ctx, id.Login); err != nil {
			return Actor{}, err
		}
	}
	s.audit(ctx, AuditEntry{At: s.clock.Now(), Actor: acct.Username, Action: "signin.github", Target: id.Login, Detail: clip(client, 64)})
	actor := actorOf(acct)
	// The sign-in's user-to-server token becomes the account's GitHub
	// identity (sealed, like a token added by hand), so its pushes and
	// events feed need no second step. Failing that only costs that.
	if s.sealer != nil {
		if _, err := s.AddGitHubToken(WithActor(ctx, actor), token); err != nil {
			s.log.Warn("could not keep the GitHub sign-in's token as the account's GitHub identity", "login", id.Login, "err", ErrorMessage(err))
		}
	}
	return actor, nil
}

// newGitHubAccount creates an account for a GitHub login, named after it
// when that name is free and valid, else after it with a random suffix.
func (s *Service) newGitHubAccount(ctx context.Context, login string) (Account, error) {
	base := strings.ToLower(login)
	if len(base) > MaxUsername-6 {
		base = base[:MaxUsername-6]
	}
	names := []string{strings.ToLower(login)}
	for range 3 {
		names = append(names, base+"-"+randomID("")[:5])
	}
	var last error
	for _, name := range names {
		if _, err := CheckUsername(name); err != nil {
			last = err
			continue
		}
		acct, err := s.insertAccount(ctx, NewAccount{Username: name, GitHubLogin: login}, login, "user.signup.github")
		if err == nil {
			return acct, nil
		}
		if ErrorCode(err) != ECONFLICT {
			return Account{}, err
		}
		last = err
	}
	return Account{}, last
}
