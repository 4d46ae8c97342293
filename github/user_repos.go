package github

import (
	"context"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// Repos lists the repositories the token may push to (GET /user/repos,
// owned, collaborated on and through organisations), skipping archived
// ones, at most app.MaxGitHubRepos.
func (u *UserClients) Repos(ctx context.Context, token string) ([]string, error) {
	c, err := u.Client(token)
	if err != nil {
		return nil, err
	}
	per, limit := 100, app.MaxGitHubRepos
	if u.repoPage > 0 {
		per, limit = u.repoPage, u.repoLimit
	}
	var out []string
	opt := &gh.RepositoryListByAuthenticatedUserOptions{Sort: "pushed", ListOptions: gh.ListOptions{PerPage: per}}
	for page := 0; page < (limit+per-1)/per; page++ {
		list, resp, err := c.Repositories.ListByAuthenticatedUser(ctx, opt)
		if err != nil {
			return nil, tokenError(err, "list the token's repositories")
		}
		for _, r := range list {
			if r.GetFullName() != "" && !r.GetArchived() && r.GetPermissions()["push"] && len(out) < limit {
				out = append(out, r.GetFullName())
			}
		}
		if resp.NextPage == 0 || len(out) >= limit {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}
