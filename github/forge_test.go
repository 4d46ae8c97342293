package github

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/github/githubtest"
)

// forgeTokenSpy records every installation token GitHub hands out.
type forgeTokenSpy struct {
	mu     sync.Mutex
	tokens []string
}

func (s *forgeTokenSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/access_tokens") {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var v struct{ Token string }
	if json.Unmarshal(body, &v) == nil && v.Token != "" {
		s.mu.Lock()
		s.tokens = append(s.tokens, v.Token)
		s.mu.Unlock()
	}
	return resp, nil
}

func (s *forgeTokenSpy) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

type forgeFixture struct {
	srv   *githubtest.Server
	app   *App
	forge *Forge
	spy   *forgeTokenSpy
	argv  string // file with every git argv
	inst  githubtest.Installation
}

func newForgeFixture(t *testing.T) *forgeFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	realGit, _ := exec.LookPath("git")
	shim := t.TempDir()
	argv := filepath.Join(shim, "argv.log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" + argv + "'\nexec '" + realGit + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")

	srv := githubtest.New(t, githubtest.Options{})
	srv.AddOrg("acme", "alice")
	srv.CreateRepo("acme", "widgets", map[string]string{"main.go": "package main\n"})
	srv.SetPermission("acme/widgets", "alice", "write")
	inst := srv.AddInstallation("acme", "acme/widgets")
	spy := &forgeTokenSpy{}
	a, err := NewApp(AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.AppPrivateKeyPEM(), APIURL: srv.APIURL(), WebURL: srv.URL, Transport: spy})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewForge(ForgeConfig{App: a, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &forgeFixture{srv: srv, app: a, forge: f, spy: spy, argv: argv, inst: inst}
}

func forgeRunGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// makeBundle does what the sandbox does: fetch, mark refs/asb/base,
// commit in the box, bundle refs/asb/base..HEAD.
func (fx *forgeFixture) makeBundle(t *testing.T, src app.Source, files map[string]string) app.Bundle {
	t.Helper()
	dir, cleanup, err := fx.forge.Fetch(context.Background(), src)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	defer cleanup()
	forgeRunGit(t, dir, "update-ref", "refs/asb/base", "HEAD")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		forgeRunGit(t, dir, "add", name)
		forgeRunGit(t, dir, "commit", "-q", "-m", "Change "+name)
	}
	path := filepath.Join(t.TempDir(), "agent.bundle")
	forgeRunGit(t, dir, "bundle", "create", "-q", path, "refs/asb/base..HEAD")
	commits := strings.Fields(forgeRunGit(t, dir, "rev-list", "--reverse", "refs/asb/base..HEAD"))
	return app.Bundle{Source: src, Path: path, Commits: commits}
}

// checkNoLeaks asserts tokens appear nowhere but Authorization headers.
func (fx *forgeFixture) checkNoLeaks(t *testing.T, errs ...error) {
	t.Helper()
	toks := fx.spy.all()
	if len(toks) == 0 {
		t.Fatal("no installation token was minted")
	}
	argv, _ := os.ReadFile(fx.argv)
	for _, tok := range toks {
		if strings.Contains(string(argv), tok) {
			t.Errorf("token in git argv")
		}
		for _, q := range fx.srv.Requests(nil) {
			if strings.Contains(q.Path, tok) || strings.Contains(q.Query.Encode(), tok) {
				t.Errorf("token in request URL %s", q.Path)
			}
			for k, vs := range q.Header {
				for _, v := range vs {
					if strings.Contains(v, tok) || strings.Contains(v, basicHeader(tok)) {
						t.Errorf("token in header %s of %s", k, q.Path)
					}
				}
			}
			if strings.Contains(string(q.Body), tok) {
				t.Errorf("token in body of %s", q.Path)
			}
		}
		for _, err := range errs {
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Errorf("token in error %v", err)
			}
		}
	}
}

func TestFetchCleanCheckout(t *testing.T) {
	fx := newForgeFixture(t)
	ctx := context.Background()
	dir, cleanup, err := fx.forge.Fetch(ctx, app.Source{Repo: "acme/widgets", Dir: "widgets"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("main.go = %q, %v", b, err)
	}
	if got, want := forgeRunGit(t, dir, "rev-parse", "HEAD"), fx.srv.Branch("acme/widgets", "main"); got != want {
		t.Fatalf("HEAD = %s, want %s", got, want)
	}
	if got := forgeRunGit(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Fatalf("branch = %s", got)
	}
	toks := fx.spy.all()
	filepath.Walk(filepath.Join(dir, ".git"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, tok := range toks {
			if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte(basicHeader(tok))) {
				t.Errorf("token in %s", p)
			}
		}
		if bytes.Contains(b, []byte("extraheader")) || bytes.Contains(b, []byte("x-access-token")) {
			t.Errorf("credential config in %s", p)
		}
		return nil
	})
	fx.checkNoLeaks(t)
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cleanup left %s", dir)
	}

	// A pull request head and a missing ref.
	fx.srv.Commit("acme/widgets", "feature", "feat", map[string]string{"f.txt": "x\n"})
	pr := fx.srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "alice", Title: "Feature", Head: "feature"})
	dir, cleanup, err = fx.forge.Fetch(ctx, app.Source{Repo: "acme/widgets", Ref: "refs/pull/" + forgeItoa(pr.Number) + "/head", Dir: "widgets"})
	if err != nil {
		t.Fatal(err)
	}
	if got := forgeRunGit(t, dir, "rev-parse", "HEAD"); got != pr.HeadSHA {
		t.Fatalf("PR HEAD = %s, want %s", got, pr.HeadSHA)
	}
	cleanup()
	_, _, err = fx.forge.Fetch(ctx, app.Source{Repo: "acme/widgets", Ref: "nope", Dir: "widgets"})
	if app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("missing ref: %v", err)
	}
	fx.checkNoLeaks(t, err)
}

func forgeItoa(n int) string { return strconv.Itoa(n) }

func TestPublishSameRepoPR(t *testing.T) {
	fx := newForgeFixture(t)
	ctx := context.Background()
	fx.srv.Commit("acme/widgets", "feature", "feat", map[string]string{"f.txt": "x\n"})
	pr := fx.srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "alice", Title: "Feature", Head: "feature"})
	src := app.Source{Repo: "acme/widgets", Ref: "feature", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/widgets", Number: pr.Number, PullRequest: true, Login: "alice"}
	req := app.PublishRequest{
		Session: app.Session{ID: "ses_abcdefghijklmnop", Origin: origin, Sources: []app.Source{src}},
		Run:     app.Run{ID: "run_abcdefghijklmnop", Origin: origin},
		Bundles: []app.Bundle{b},
	}
	res, err := fx.forge.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "feature" || len(res.Commits) != 2 || res.FilesChanged != 2 {
		t.Fatalf("result = %+v", res)
	}
	log := fx.srv.Log("acme/widgets", "feature")
	if log[0].SHA != res.Commits[1] || log[2].SHA != pr.HeadSHA {
		t.Fatalf("branch log = %+v", log)
	}
	if log[0].AuthorName != "Agent" || !strings.Contains(log[0].Message, "Co-authored-by: alice <") ||
		!strings.Contains(log[0].Message, "@users.noreply.") {
		t.Fatalf("commit = %+v", log[0])
	}
	if !strings.HasSuffix(res.PullRequestURL, "/pull/"+forgeItoa(pr.Number)) {
		t.Fatalf("PR URL = %s", res.PullRequestURL)
	}
	pushes := len(fx.srv.Pushes("acme/widgets"))
	res2, err := fx.forge.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fx.srv.Pushes("acme/widgets")); got != pushes {
		t.Fatalf("second Publish pushed again (%d → %d)", pushes, got)
	}
	if strings.Join(res2.Commits, ",") != strings.Join(res.Commits, ",") {
		t.Fatalf("second Publish commits differ: %v vs %v", res2.Commits, res.Commits)
	}
	fx.checkNoLeaks(t)
}

func TestPublishLabelOpensOneDraftPR(t *testing.T) {
	fx := newForgeFixture(t)
	ctx := context.Background()
	issue := fx.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Crash on empty input!"})
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"fix.go": "package main\n"})
	origin := app.Origin{Kind: app.OriginGitHubLabel, Repo: "acme/widgets", Number: issue.Number, Login: "alice"}
	req := app.PublishRequest{
		Session: app.Session{ID: "ses_abcdefghijklmnop", Title: "Fix it", Origin: origin},
		Run:     app.Run{ID: "run_abcdefghijklmnop", Origin: origin},
		Bundles: []app.Bundle{b},
	}
	res, err := fx.forge.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	wantBranch := "agent/issue-" + forgeItoa(issue.Number) + "-crash-on-empty-input"
	if res.Branch != wantBranch || fx.srv.Branch("acme/widgets", wantBranch) != res.Commits[0] {
		t.Fatalf("result = %+v", res)
	}
	prs := fx.srv.PullRequests("acme/widgets")
	if len(prs) != 1 || !prs[0].Draft || !strings.Contains(prs[0].Body, "Fixes #"+forgeItoa(issue.Number)) || prs[0].Head != wantBranch {
		t.Fatalf("pull requests = %+v", prs)
	}
	if !strings.HasSuffix(res.PullRequestURL, "/pull/"+forgeItoa(prs[0].Number)) {
		t.Fatalf("URL = %s", res.PullRequestURL)
	}
	pushes := len(fx.srv.Pushes("acme/widgets"))
	res2, err := fx.forge.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fx.srv.Pushes("acme/widgets")); got != pushes {
		t.Fatalf("second Publish pushed again")
	}
	if n := len(fx.srv.PullRequests("acme/widgets")); n != 1 || res2.PullRequestURL != res.PullRequestURL {
		t.Fatalf("second Publish: %d PRs, %s", n, res2.PullRequestURL)
	}
	fx.checkNoLeaks(t)
}

func TestPublishDashboardOpensDraftPR(t *testing.T) {
	fx := newForgeFixture(t)
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"x.txt": "x\n"})
	origin := app.Origin{Kind: app.OriginDashboard, Login: "operator"}
	res, err := fx.forge.Publish(context.Background(), app.PublishRequest{
		Session: app.Session{ID: "ses_qrstuvwxyz234567", Title: "Add x", Origin: origin},
		Run:     app.Run{ID: "run_abcdefghijklmnop", Origin: origin},
		Bundles: []app.Bundle{b},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "agent/qrstuvwx" || res.PullRequestURL == "" {
		t.Fatalf("result = %+v", res)
	}
	if log := fx.srv.Log("acme/widgets", res.Branch); log[0].SHA != b.Commits[0] {
		t.Fatalf("dashboard commits must be pushed unchanged: %+v", log[0])
	}
}

func TestPublishTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		kind githubtest.FaultKind
		code string
	}{
		{githubtest.FaultServerError, app.EUNAVAILABLE},
		{githubtest.FaultRateLimit, app.ERATELIMIT},
		{githubtest.FaultSecondaryRateLimit, app.ERATELIMIT},
		{githubtest.FaultTooManyRequests, app.ERATELIMIT},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			fx := newForgeFixture(t)
			issue := fx.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Bug"})
			src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
			b := fx.makeBundle(t, src, map[string]string{"fix.go": "package main\n"})
			origin := app.Origin{Kind: app.OriginGitHubLabel, Repo: "acme/widgets", Number: issue.Number, Login: "alice"}
			req := app.PublishRequest{Session: app.Session{ID: "ses_abcdefghijklmnop", Origin: origin}, Run: app.Run{ID: "run_abc", Origin: origin}, Bundles: []app.Bundle{b}}
			fx.srv.Inject(githubtest.Fault{Kind: tc.kind, Method: "POST", Path: "/api/v3/repos/acme/widgets/pulls", Times: -1})
			_, err := fx.forge.Publish(context.Background(), req)
			if app.ErrorCode(err) != tc.code {
				t.Fatalf("error = %v (code %s), want %s", err, app.ErrorCode(err), tc.code)
			}
			fx.checkNoLeaks(t, err)
			fx.srv.ClearFaults()
			if tc.kind == githubtest.FaultRateLimit || tc.kind == githubtest.FaultSecondaryRateLimit {
				return // go-github refuses locally until the reset
			}
			res, err := fx.forge.Publish(context.Background(), req)
			if err != nil || res.PullRequestURL == "" || len(fx.srv.PullRequests("acme/widgets")) != 1 {
				t.Fatalf("retry: %+v, %v", res, err)
			}
		})
	}
}

func TestGitFaultIsRetryable(t *testing.T) {
	fx := newForgeFixture(t)
	fx.srv.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Path: "/acme/widgets.git/", Times: -1})
	_, _, err := fx.forge.Fetch(context.Background(), app.Source{Repo: "acme/widgets", Dir: "widgets"})
	if app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("error = %v (code %s)", err, app.ErrorCode(err))
	}
	fx.checkNoLeaks(t, err)
}

func TestPublishForkPRFallsBackToBaseBranch(t *testing.T) {
	fx := newForgeFixture(t)
	fx.srv.AddUser("bob")
	fx.srv.Fork("acme/widgets", "bob")
	fx.srv.Commit("bob/widgets", "patch", "bob's patch", map[string]string{"p.txt": "p\n"})
	pr := fx.srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "bob", Title: "Patch", Head: "patch", HeadRepo: "bob/widgets"})
	src := app.Source{Repo: "acme/widgets", Ref: "refs/pull/" + forgeItoa(pr.Number) + "/head", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"q.txt": "q\n"})
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/widgets", Number: pr.Number, PullRequest: true, Login: "alice"}
	req := app.PublishRequest{
		Session: app.Session{ID: "ses_abcdefghijklmnop", Origin: origin},
		Run:     app.Run{ID: "run_zyxwvutsrqponmlk", Origin: origin},
		Bundles: []app.Bundle{b},
	}
	res, err := fx.forge.Publish(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "agent/pr-" + forgeItoa(pr.Number) + "-zyxwvuts"
	if res.Branch != want || fx.srv.Branch("acme/widgets", want) != res.Commits[0] {
		t.Fatalf("result = %+v", res)
	}
	if fx.srv.Branch("bob/widgets", "patch") != pr.HeadSHA {
		t.Fatal("the fork's branch changed")
	}
	prs := fx.srv.PullRequests("acme/widgets")
	if len(prs) != 2 || prs[1].Head != want || !strings.Contains(prs[1].Body, "#"+forgeItoa(pr.Number)) {
		t.Fatalf("pull requests = %+v", prs)
	}
	if _, err := fx.forge.Publish(context.Background(), req); err != nil || len(fx.srv.PullRequests("acme/widgets")) != 2 {
		t.Fatalf("second Publish: %v", err)
	}
	fx.checkNoLeaks(t)
}
