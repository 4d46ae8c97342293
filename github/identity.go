package github

import (
	"context"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// UserClients builds go-github clients that act as a person through their
// personal token: the prober asb's core uses when a token is stored
// (app.GitHubProber), the client of the events-feed poller, and the
// replies made as that login. The token only ever travels in the
// Authorization header go-github sets.
type UserClients struct {
	apiURL    string // "" for api.github.com
	transport http.RoundTripper
	// repoPage and repoLimit override Repos' page size and bound (tests).
	repoPage, repoLimit int
}

var _ app.GitHubProber = (*UserClients)(nil)

// NewUserClients returns clients for the REST API at apiURL (GitHub
// Enterprise style, e.g. "https://ghe.example.com/api/v3/"; empty for
// api.github.com). transport defaults to http.DefaultTransport.
func NewUserClients(apiURL string, transport http.RoundTripper) (*UserClients, error) {
	if transport == nil {
		transport = http.DefaultTransport
	}
	u := &UserClients{apiURL: strings.TrimRight(apiURL, "/"), transport: transport}
	if _, err := u.Client("probe"); err != nil {
		return nil, err
	}
	return u, nil
}

// Client returns a client authenticated with token.
func (u *UserClients) Client(token string) (*gh.Client, error) {
	c := gh.NewClient(&http.Client{Transport: u.transport}).WithAuthToken(token)
	if u.apiURL == "" {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(u.apiURL+"/", u.apiURL+"/")
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "GitHub API URL is not valid")
	}
	return c, nil
}

// tokenError maps a failed call made with a personal token: a refused
// token is EUNAUTHORIZED with a message about the token (not the App).
func tokenError(err error, what string) error {
	err = APIError(err, what)
	if app.ErrorCode(err) == app.EUNAUTHORIZED {
		return app.WrapError(app.EUNAUTHORIZED, err, "GitHub rejected the token (invalid, expired or revoked)")
	}
	return err
}

// Probe identifies a token: GET /user (login, name, id, and the classic
// scopes in X-OAuth-Scopes) and GET /user/orgs.
func (u *UserClients) Probe(ctx context.Context, token string) (app.GitHubIdentity, error) {
	c, err := u.Client(token)
	if err != nil {
		return app.GitHubIdentity{}, err
	}
	me, resp, err := c.Users.Get(ctx, "")
	if err != nil {
		return app.GitHubIdentity{}, tokenError(err, "identify the token")
	}
	id := app.GitHubIdentity{Login: me.GetLogin(), Name: me.GetName(), UserID: me.GetID()}
	if resp != nil {
		for _, s := range strings.Split(resp.Header.Get("X-OAuth-Scopes"), ",") {
			if s = strings.TrimSpace(s); s != "" {
				id.Scopes = append(id.Scopes, s)
			}
		}
	}
	opt := &gh.ListOptions{PerPage: 100}
	for page := 0; page < 10; page++ {
		orgs, resp, err := c.Organizations.List(ctx, "", opt)
		if err != nil {
			err = tokenError(err, "list the token's organizations")
			if app.ErrorCode(err) == app.EFORBIDDEN {
				break // a fine-grained token without organization access: no orgs
			}
			return app.GitHubIdentity{}, err
		}
		for _, o := range orgs {
			id.Orgs = append(id.Orgs, o.GetLogin())
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return id, nil
}

// CanPush reads the repository as the token sees it: push permission in
// its "permissions" means the token may push. A repository the token
// cannot see is false.
func (u *UserClients) CanPush(ctx context.Context, token, repo string) (bool, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return false, err
	}
	c, err := u.Client(token)
	if err != nil {
		return false, err
	}
	r, _, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		err = tokenError(err, "read "+repo)
		if app.ErrorCode(err) == app.ENOTFOUND {
			return false, nil
		}
		return false, err
	}
	return r.GetPermissions()["push"], nil
}
