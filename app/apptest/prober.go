package apptest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/asb-dev/asb/app"
)

// FakeProber is an app.GitHubProber over a table of known tokens.
type FakeProber struct {
	mu     sync.Mutex
	tokens map[string]fakeIdentity
	probes int
}

type fakeIdentity struct {
	id    app.GitHubIdentity
	repos []string // lower-case owner/name the token may push to
}

// NewFakeProber returns a prober that knows no tokens.
func NewFakeProber() *FakeProber { return &FakeProber{tokens: map[string]fakeIdentity{}} }

// Add makes token valid for id, able to push to repos.
func (p *FakeProber) Add(token string, id app.GitHubIdentity, repos ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range repos {
		repos[i] = strings.ToLower(repos[i])
	}
	p.tokens[token] = fakeIdentity{id: id, repos: repos}
}

// Revoke makes token invalid.
func (p *FakeProber) Revoke(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tokens, token)
}

// Probes counts Probe calls.
func (p *FakeProber) Probes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probes
}

func (p *FakeProber) Probe(ctx context.Context, token string) (app.GitHubIdentity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes++
	f, ok := p.tokens[token]
	if !ok {
		return app.GitHubIdentity{}, app.Errorf(app.EUNAUTHORIZED, "GitHub refused the token")
	}
	return f.id, nil
}

func (p *FakeProber) CanPush(ctx context.Context, token, repo string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.tokens[token]
	if !ok {
		return false, app.Errorf(app.EUNAUTHORIZED, "GitHub refused the token")
	}
	return slices.Contains(f.repos, strings.ToLower(repo)), nil
}

func (p *FakeProber) Repos(ctx context.Context, token string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.tokens[token]
	if !ok {
		return nil, app.Errorf(app.EUNAUTHORIZED, "GitHub refused the token")
	}
	return slices.Clone(f.repos), nil
}
