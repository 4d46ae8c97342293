package github

import (
	"context"
	"encoding/json"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// feedLoginField is the top-level field the events-feed poller adds to
// the issue_comment deliveries it synthesizes: the stored login whose
// token found the comment and acts on it. GitHub's own payloads never
// carry it, and it is honoured only without an installation.
const feedLoginField = "asb_feed_login"

func feedLogin(payload []byte) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(payload, &v) != nil {
		return ""
	}
	var login string
	if json.Unmarshal(v[feedLoginField], &login) != nil || !app.ValidLogin(login) {
		return ""
	}
	return login
}

// UserClientFunc returns a client acting as a stored login.
type UserClientFunc func(ctx context.Context, login string) (*gh.Client, error)

// StoredTokenClients builds clients from tokens stored in the core
// (Service.GitHubToken, called as the operator), so the token is opened
// only for the call that needs it.
func StoredTokenClients(users *UserClients, token func(ctx context.Context, login string) (string, bool, error)) UserClientFunc {
	return func(ctx context.Context, login string) (*gh.Client, error) {
		tok, ok, err := token(app.WithActor(ctx, app.OperatorActor), login)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, app.Errorf(app.ENOTFOUND, "no stored GitHub token for %s", login)
		}
		return users.Client(tok)
	}
}

// userAPI is GitHubAPI acting as one person. A permission query the
// person may not make (403: they cannot push there) reads as "none".
type userAPI struct{ GitHubAPI }

func (u userAPI) Permission(ctx context.Context, inst int64, repo, login string) (string, error) {
	perm, err := u.GitHubAPI.Permission(ctx, inst, repo, login)
	if err != nil && app.ErrorCode(APIError(err, "")) == app.EFORBIDDEN {
		return "none", nil
	}
	return perm, err
}

func userClientsAPI(clients UserClientFunc, login string) GitHubAPI {
	return userAPI{NewClientsAPI(func(ctx context.Context, _ int64) (*gh.Client, error) { return clients(ctx, login) })}
}

// apiFor is the API a trigger is answered through: the App's
// installation, or the feed login's own token.
func (p *Processor) apiFor(t Trigger) GitHubAPI {
	if t.AsLogin != "" && p.opts.UserClient != nil {
		return userClientsAPI(p.opts.UserClient, t.AsLogin)
	}
	return p.api
}

// orNoApp is clients, or, with no App configured, a ClientsFunc that
// says so.
func orNoApp(clients ClientsFunc) ClientsFunc {
	if clients != nil {
		return clients
	}
	return func(context.Context, int64) (*gh.Client, error) {
		return nil, app.Errorf(app.EUNAVAILABLE, "no GitHub App is configured")
	}
}

// apiFor is the API that edits a run's tracking comment: the App's
// installation of the repository, or, where the App is not installed,
// the requester's stored token (the run came from their events feed).
func (t *Tracker) apiFor(ctx context.Context, o app.Origin) (GitHubAPI, int64, error) {
	inst, err := t.installation(ctx, o.Repo)
	if err == nil {
		return t.api, inst, nil
	}
	noApp := t.opts.Installation == nil || app.ErrorCode(err) == app.ENOTFOUND
	if t.opts.UserClient != nil && noApp && app.ValidLogin(o.Login) {
		return userClientsAPI(t.opts.UserClient, o.Login), 0, nil
	}
	return nil, 0, err
}
