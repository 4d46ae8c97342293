package app

import (
	"context"
	"slices"
	"sort"
	"strings"
)

func (s *Service) prober() (GitHubProber, error) {
	if s.github == nil || s.sealer == nil {
		return nil, Errorf(EUNAVAILABLE, "storing GitHub tokens is not configured on this controller")
	}
	return s.github, nil
}

// AddGitHubToken probes a personal token, seals it and stores it for the
// caller, keyed by the token's login: adding a token for a login the
// caller already stored replaces that login's token. The token is never
// returned, logged or audited.
func (s *Service) AddGitHubToken(ctx context.Context, token string) (GitHubAccount, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return GitHubAccount{}, err
	}
	if err := CheckGitHubToken(token); err != nil {
		return GitHubAccount{}, err
	}
	pr, err := s.prober()
	if err != nil {
		return GitHubAccount{}, err
	}
	id, err := pr.Probe(ctx, token)
	if err != nil {
		if ErrorCode(err) == EUNAUTHORIZED {
			return GitHubAccount{}, Errorf(EINVALID, "that token is invalid or expired (GitHub /user rejected it)")
		}
		return GitHubAccount{}, err
	}
	if !ValidLogin(id.Login) {
		return GitHubAccount{}, Errorf(EINVALID, "GitHub named an unusable login for that token")
	}
	now := s.clock.Now()
	acct := GitHubAccount{
		Owner: a.Account, Login: id.Login, Name: clip(id.Name, 200), UserID: id.UserID,
		Orgs: cleanNames(id.Orgs, 100), Scopes: cleanNames(id.Scopes, 50),
		TokenType: GitHubTokenType(token), AddedAt: now, CheckedAt: now,
	}
	err = s.store.Tx(ctx, func(tx Tx) error {
		cur, _, ok, err := tx.GitHubAccountByLogin(a.Account, id.Login)
		if err != nil {
			return err
		}
		acct.ID = NewGitHubAccountID()
		if ok {
			acct.ID, acct.AddedAt = cur.ID, cur.AddedAt
		} else {
			mine, err := tx.ListGitHubAccounts(a.Account)
			if err != nil {
				return err
			}
			if len(mine) >= MaxGitHubAccounts {
				return Errorf(EFORBIDDEN, "at most %d GitHub accounts per owner; remove one first", MaxGitHubAccounts)
			}
		}
		sealed, err := s.sealer.Seal([]byte(token), tokenLabel(acct.ID))
		if err != nil {
			return WrapError(EINTERNAL, err, "cannot seal the token")
		}
		if err := tx.PutGitHubAccount(acct, sealed); err != nil {
			return err
		}
		action := "github.account.add"
		if ok {
			action = "github.account.replace"
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: action, Target: acct.ID,
			Detail: "login=" + acct.Login + " type=" + acct.TokenType + " scopes=" + strings.Join(acct.Scopes, ",")})
	})
	if err != nil {
		return GitHubAccount{}, err
	}
	return acct, nil
}

// cleanNames keeps at most n short printable names, sorted.
func cleanNames(in []string, n int) []string {
	var out []string
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v != "" && len(v) <= 100 && !strings.ContainsAny(v, "\x00\n\r\t") && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// GitHubAccounts lists the caller's stored GitHub accounts (every
// owner's for the operator and admins), by login.
func (s *Service) GitHubAccounts(ctx context.Context) ([]GitHubAccount, error) {
	return listOwned(ctx, s, Tx.ListGitHubAccounts)
}

// RemoveGitHubAccount forgets a stored account and its token. Accounts the
// caller may not see are ENOTFOUND.
func (s *Service) RemoveGitHubAccount(ctx context.Context, id string) error {
	return s.removeOwned(ctx, ownedKind{prefix: "gha_", noun: "GitHub account", action: "github.account.remove",
		badID: "account id must look like gha_ followed by lowercase letters or digits"}, id,
		func(tx Tx, id string) (AccountID, string, error) {
			acct, _, err := tx.GetGitHubAccount(id)
			return acct.Owner, "login=" + acct.Login, err
		}, Tx.DeleteGitHubAccount)
}

// CheckGitHubAccess reports whether the caller's stored account id can
// push to repo, probing GitHub with its token.
func (s *Service) CheckGitHubAccess(ctx context.Context, id, repo string) (bool, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return false, err
	}
	if _, _, err := ParseRepo(repo); err != nil {
		return false, err
	}
	pr, err := s.prober()
	if err != nil {
		return false, err
	}
	var acct GitHubAccount
	var sealed []byte
	err = s.store.View(ctx, func(tx Tx) error {
		acct, sealed, err = tx.GetGitHubAccount(id)
		if err == nil && !a.sees(acct.Owner) {
			err = Errorf(ENOTFOUND, "GitHub account %s not found", id)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	tok, err := s.openToken(acct, sealed)
	if err != nil {
		return false, err
	}
	return pr.CanPush(ctx, tok, repo)
}

func (s *Service) openToken(acct GitHubAccount, sealed []byte) (string, error) {
	if s.sealer == nil {
		return "", Errorf(EUNAVAILABLE, "storing GitHub tokens is not configured on this controller")
	}
	b, err := s.sealer.Open(sealed, tokenLabel(acct.ID))
	if err != nil {
		return "", WrapError(EINTERNAL, err, "cannot open the stored token of %s", acct.Login)
	}
	return string(b), nil
}

// GitHubToken returns the opened token stored for login by the caller
// (by any owner for the operator and admins; the most recently checked
// one when several owners stored the same login).
//
// It is for adapters in the same process (the events-feed poller, the
// replies made as that login): the token must go straight into an
// Authorization header or git's environment, and must never be rendered,
// logged or sent to a client.
func (s *Service) GitHubToken(ctx context.Context, login string) (string, bool, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return "", false, err
	}
	if !ValidLogin(login) {
		return "", false, nil
	}
	acct, sealed, ok, err := s.accountByLogin(ctx, a.listOwner(), login)
	if err != nil || !ok {
		return "", false, err
	}
	tok, err := s.openToken(acct, sealed)
	return tok, err == nil, err
}

// accountByLogin finds login among owner's accounts ("" for every owner).
func (s *Service) accountByLogin(ctx context.Context, owner AccountID, login string) (GitHubAccount, []byte, bool, error) {
	var acct GitHubAccount
	var sealed []byte
	var ok bool
	err := s.store.View(ctx, func(tx Tx) error {
		if owner != "" {
			var err error
			acct, sealed, ok, err = tx.GitHubAccountByLogin(owner, login)
			return err
		}
		all, err := tx.ListGitHubAccounts("")
		if err != nil {
			return err
		}
		for _, c := range all {
			if strings.EqualFold(c.Login, login) && (!ok || c.CheckedAt.After(acct.CheckedAt)) {
				acct, ok = c, true
			}
		}
		if ok {
			_, sealed, err = tx.GetGitHubAccount(acct.ID)
		}
		return err
	})
	return acct, sealed, ok, err
}
