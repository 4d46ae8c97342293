package app

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"
)

// GitHubAccount is a GitHub login whose personal token an owner stored,
// so that asb can push, open pull requests and read the login's events
// feed as that person. It never carries the token: the token is sealed
// in the store and opened only by GitHubToken and GitHubPusher.
type GitHubAccount struct {
	// ID is "gha_" followed by lowercase base32.
	ID    string    `json:"id"`
	Owner AccountID `json:"owner"`
	// Login is the GitHub login the token belongs to, as GitHub spells it.
	Login string `json:"login"`
	// Name is the profile's display name, if any.
	Name string `json:"name,omitempty"`
	// UserID is the numeric GitHub user id (for noreply commit emails).
	UserID int64    `json:"user_id,omitempty"`
	Orgs   []string `json:"orgs,omitempty"`
	// Scopes are a classic token's OAuth scopes (empty for fine-grained tokens).
	Scopes []string `json:"scopes,omitempty"`
	// TokenType is "fine-grained", "classic" or "unknown", for display.
	TokenType string    `json:"token_type"`
	AddedAt   time.Time `json:"added_at"`
	CheckedAt time.Time `json:"checked_at"`
}

// GitHubIdentity is what probing a token found out about its login.
type GitHubIdentity struct {
	Login  string
	Name   string
	UserID int64
	Orgs   []string
	Scopes []string
}

// GitHubProber asks GitHub about a personal token. Implementations send
// the token only in an Authorization header and never log it.
type GitHubProber interface {
	// Probe identifies the token's login (GET /user), its organisations
	// (GET /user/orgs) and its OAuth scopes (X-OAuth-Scopes). A token
	// GitHub refuses is EUNAUTHORIZED.
	Probe(ctx context.Context, token string) (GitHubIdentity, error)
	// CanPush reports whether the token may push to repo ("owner/name").
	// A repository the token cannot see is false, not an error.
	CanPush(ctx context.Context, token, repo string) (bool, error)
}

// MaxGitHubAccounts bounds the accounts one owner may store.
const MaxGitHubAccounts = 20

// NewGitHubAccountID returns a fresh account id.
func NewGitHubAccountID() string { return randomID("gha_") }

// CheckGitHubToken validates a personal token from outside without ever
// echoing it: GitHub's token charset, 20 to 255 bytes.
func CheckGitHubToken(token string) error {
	if token == "" {
		return Errorf(EINVALID, "no token provided")
	}
	if len(token) < 20 || len(token) > 255 {
		return Errorf(EINVALID, "that does not look like a GitHub token (expected 20 to 255 characters)")
	}
	for _, c := range token {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return Errorf(EINVALID, "that does not look like a GitHub token (only letters, digits and '_' are allowed)")
		}
	}
	return nil
}

// GitHubTokenType names a token's kind from its prefix, for display.
func GitHubTokenType(token string) string {
	switch {
	case strings.HasPrefix(token, "github_pat_"):
		return "fine-grained"
	case strings.HasPrefix(token, "ghp_"), strings.HasPrefix(token, "gho_"):
		return "classic"
	}
	return "unknown"
}

// ValidLogin reports whether s can be a GitHub user login (letters,
// digits and '-'; '_' too, for Enterprise managed users' "login_shortcode").
func ValidLogin(s string) bool { return validOwner(s) }

func tokenLabel(id string) string { return "github-account:" + id }

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
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	owner := a.Account
	if a.Operator || a.Admin {
		owner = ""
	}
	var out []GitHubAccount
	err = s.store.View(ctx, func(tx Tx) error {
		out, err = tx.ListGitHubAccounts(owner)
		return err
	})
	return out, err
}

// RemoveGitHubAccount forgets a stored account and its token. Accounts the
// caller may not see are ENOTFOUND.
func (s *Service) RemoveGitHubAccount(ctx context.Context, id string) error {
	a, err := s.actor(ctx)
	if err != nil {
		return err
	}
	if !validID(id, "gha_") {
		return Errorf(EINVALID, "account id must look like gha_ followed by lowercase letters or digits")
	}
	return s.store.Tx(ctx, func(tx Tx) error {
		acct, _, err := tx.GetGitHubAccount(id)
		if err != nil {
			return err
		}
		if !a.sees(acct.Owner) {
			return Errorf(ENOTFOUND, "GitHub account %s not found", id)
		}
		if err := tx.DeleteGitHubAccount(id); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: s.clock.Now(), Actor: a.Name, Action: "github.account.remove", Target: id, Detail: "login=" + acct.Login})
	})
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
	owner := a.Account
	if a.Operator || a.Admin {
		owner = ""
	}
	acct, sealed, ok, err := s.accountByLogin(ctx, owner, login)
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
