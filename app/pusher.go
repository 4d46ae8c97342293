package app

import (
	"context"
	"sort"
	"strings"
)

// PushQuery asks who should push a run's commits to one repository.
type PushQuery struct {
	// Owner owns the session.
	Owner AccountID
	// Origin is where the run came from. For a GitHub origin its Login
	// is the requester; for other origins a non-empty GitHubAccount names
	// the stored account the caller chose.
	Origin Origin
	Repo   string
	// AppCanPush is true when a GitHub App installation covers Repo.
	AppCanPush bool
}

// Pusher is who pushes: a stored login with its opened token, or the App
// when Login is empty. Like GitHubToken, it is for in-process adapters.
type Pusher struct {
	Login  string
	Name   string
	UserID int64
	Token  string
}

// GitHubPusher decides whose credentials publish a run's commits to a
// repository (SPEC §4.1 Identity):
//   - a run asked for on GitHub by login L pushes as L when L has a
//     stored token that can push there, else as the App;
//   - other runs push with the session owner's stored account that can
//     push (the one named by Origin.GitHubAccount when given); when several can
//     and none was named, the run asks which; when none can, as the App;
//   - with neither a usable token nor an App installation the run asks
//     for a token.
//
// Refusals are EINVALID errors whose message is the question for the
// user. It is for in-process adapters (the forge); no actor is needed.
func (s *Service) GitHubPusher(ctx context.Context, q PushQuery) (Pusher, error) {
	if _, _, err := ParseRepo(q.Repo); err != nil {
		return Pusher{}, err
	}
	needToken := func(why string) error {
		return Errorf(EINVALID, "%s, and the GitHub App is not installed on %s. Add a token that can push there with the gh_token_add tool or on the dashboard's GitHub accounts page, then run the task again.", why, q.Repo)
	}
	if s.github == nil || s.sealer == nil {
		if q.AppCanPush {
			return Pusher{}, nil
		}
		return Pusher{}, needToken("no GitHub tokens can be stored on this controller")
	}
	fromGitHub := q.Origin.Kind == OriginGitHubComment || q.Origin.Kind == OriginGitHubLabel
	type cand struct {
		acct   GitHubAccount
		sealed []byte
	}
	var cands []cand
	err := s.store.View(ctx, func(tx Tx) error {
		var list []GitHubAccount
		var err error
		if fromGitHub {
			list, err = tx.ListGitHubAccounts("")
		} else {
			list, err = tx.ListGitHubAccounts(q.Owner)
		}
		if err != nil {
			return err
		}
		for _, a := range list {
			if fromGitHub && !strings.EqualFold(a.Login, q.Origin.Login) {
				continue
			}
			if !fromGitHub && q.Origin.GitHubAccount != "" && !strings.EqualFold(a.Login, q.Origin.GitHubAccount) {
				continue
			}
			_, sealed, err := tx.GetGitHubAccount(a.ID)
			if err != nil {
				return err
			}
			cands = append(cands, cand{a, sealed})
		}
		return nil
	})
	if err != nil {
		return Pusher{}, err
	}
	// Newest check first, so a login stored twice uses its latest token.
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].acct.CheckedAt.After(cands[j].acct.CheckedAt) })
	var able []Pusher
	seen := map[string]bool{}
	for _, c := range cands {
		key := strings.ToLower(c.acct.Login)
		if seen[key] {
			continue
		}
		tok, err := s.openToken(c.acct, c.sealed)
		if err != nil {
			return Pusher{}, err
		}
		ok, err := s.github.CanPush(ctx, tok, q.Repo)
		if err != nil {
			if ErrorCode(err) == EUNAUTHORIZED {
				s.log.Warn("a stored GitHub token was refused", "login", c.acct.Login, "account", c.acct.ID)
				continue
			}
			return Pusher{}, err
		}
		if ok {
			seen[key] = true
			able = append(able, Pusher{Login: c.acct.Login, Name: c.acct.Name, UserID: c.acct.UserID, Token: tok})
		}
	}
	switch {
	case len(able) == 1:
		return able[0], nil
	case len(able) > 1:
		logins := make([]string, len(able))
		for i, p := range able {
			logins[i] = p.Login
		}
		sort.Strings(logins)
		return Pusher{}, Errorf(EINVALID, "several stored GitHub accounts can push to %s: %s. Which one should push? Delegate again naming it (githubAccount), or remove the others.", q.Repo, strings.Join(logins, ", "))
	case q.AppCanPush:
		return Pusher{}, nil
	case fromGitHub:
		return Pusher{}, needToken(q.Origin.Login + " has no stored GitHub token that can push to " + q.Repo)
	case q.Origin.GitHubAccount != "":
		return Pusher{}, needToken("the stored account " + q.Origin.GitHubAccount + " cannot push to " + q.Repo)
	}
	return Pusher{}, needToken("no stored GitHub account can push to " + q.Repo)
}

type sessionKey struct{}

// WithSession returns a context that tells adapters which session the
// work is for, so that fetching a repository for the box can use the
// same identity as publishing to it (see GitHubPusher).
func WithSession(ctx context.Context, sess Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, sess)
}

// SessionFrom returns the session WithSession attached, if any.
func SessionFrom(ctx context.Context) (Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(Session)
	return s, ok && s.ID != ""
}
