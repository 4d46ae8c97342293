package main

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
	gh "github.com/asb-dev/asb/github"
)

// repoSuggestionsTTL is how long a caller's repository list is reused:
// listing asks GitHub for every stored token, and the new-run page should
// stay fast when opened again.
const repoSuggestionsTTL = time.Minute

// repoSuggestions fills the new-run page's repository picker: the
// repositories the caller's stored GitHub accounts can push to and, for
// the operator and admins, those of the App's installations. Lists are
// cached per caller for ttl.
type repoSuggestions struct {
	userRepos func(ctx context.Context) ([]string, error)
	// installed is nil without a configured App.
	installed func(ctx context.Context) ([]gh.InstalledRepo, error)
	ttl       time.Duration
	now       func() time.Time
	log       *slog.Logger

	mu    sync.Mutex
	cache map[app.AccountID]cachedRepos
}

type cachedRepos struct {
	repos []string
	at    time.Time
}

func newRepoSuggestions(svc *app.Service, githubApp *gh.App, log *slog.Logger) *repoSuggestions {
	r := &repoSuggestions{userRepos: svc.GitHubRepos, ttl: repoSuggestionsTTL, now: time.Now, log: log,
		cache: map[app.AccountID]cachedRepos{}}
	if githubApp != nil {
		r.installed = gh.AppInstallations(githubApp)
	}
	return r
}

// List answers for the caller in ctx.
func (r *repoSuggestions) List(ctx context.Context) ([]string, error) {
	a, ok := app.ActorFrom(ctx)
	if !ok {
		return nil, app.Errorf(app.EUNAUTHORIZED, "no caller")
	}
	now := r.now()
	r.mu.Lock()
	for k, c := range r.cache {
		if now.Sub(c.at) >= r.ttl {
			delete(r.cache, k)
		}
	}
	c, hit := r.cache[a.Account]
	r.mu.Unlock()
	if hit {
		return c.repos, nil
	}
	repos, err := r.userRepos(ctx)
	if err != nil {
		return nil, err
	}
	if r.installed != nil && (a.Operator || a.Admin) {
		inst, err := r.installed(ctx)
		if err != nil {
			// The stored accounts' list is still worth showing.
			r.log.Warn("cannot list the App installations' repositories", "err", err)
		}
		for _, in := range inst {
			repos = append(repos, in.Repo)
		}
	}
	repos = sortedUnique(repos)
	r.mu.Lock()
	r.cache[a.Account] = cachedRepos{repos: repos, at: now}
	r.mu.Unlock()
	return repos, nil
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if k := strings.ToLower(s); !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i]) < strings.ToLower(out[j]) })
	return out
}
