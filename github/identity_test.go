package github

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/github/githubtest"
)

func TestUserClientsProbe(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	srv.AddOrg("acme", "alice")
	srv.AddOrg("tools", "alice")
	srv.SetProfile("alice", "Alice Liddell", "")
	srv.CreateRepo("acme", "widgets", nil)
	srv.CreateRepo("acme", "gadgets", nil)
	srv.SetPermission("acme/widgets", "alice", "write")
	srv.SetPermission("acme/gadgets", "alice", "read")
	srv.AddRepo(githubtest.RepoSpec{Owner: "acme", Name: "secret", Private: true})
	tok := srv.AddToken("alice", "repo", "read:org")
	u, err := NewUserClients(srv.APIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := u.Probe(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := srv.User("alice")
	if id.Login != "alice" || id.Name != "Alice Liddell" || id.UserID != alice.ID ||
		strings.Join(id.Orgs, ",") != "acme,tools" || strings.Join(id.Scopes, ",") != "repo,read:org" {
		t.Fatalf("identity = %+v", id)
	}
	for repo, want := range map[string]bool{"acme/widgets": true, "acme/gadgets": false, "acme/secret": false, "acme/missing": false} {
		got, err := u.CanPush(ctx, tok, repo)
		if err != nil || got != want {
			t.Errorf("CanPush(%s) = %v, %v; want %v", repo, got, err, want)
		}
	}
	srv.RevokeToken(tok)
	_, err = u.Probe(ctx, tok)
	if app.ErrorCode(err) != app.EUNAUTHORIZED || strings.Contains(err.Error(), tok) {
		t.Fatalf("revoked token: %v", err)
	}
	for _, q := range srv.Requests(nil) {
		if strings.Contains(q.Path, tok) || strings.Contains(q.Query.Encode(), tok) {
			t.Errorf("token in URL %s", q.Path)
		}
		if q.Path == "/api/v3/user" && q.Auth != githubtest.AuthPersonal && q.Status == 200 {
			t.Errorf("/user was not called with the personal token: %+v", q)
		}
	}
}

// identityFixture is the forge fixture plus a Service holding stored
// tokens, wired as the forge's Pushers.
type identityFixture struct {
	*forgeFixture
	svc      *app.Service
	aliceTok string
}

func newIdentityFixture(t *testing.T) *identityFixture {
	t.Helper()
	fx := newForgeFixture(t)
	fx.srv.SetProfile("alice", "Alice Liddell", "")
	users, err := NewUserClients(fx.srv.APIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.New(bytes.Repeat([]byte{3}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	store := apptest.NewMemStore()
	svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox(), Secrets: keys, GitHub: users}, app.Config{})
	fx.forge, err = NewForge(ForgeConfig{App: fx.app, Users: users, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fx.forge.SetPushers(svc)
	tok := fx.srv.AddToken("alice")
	if _, err := svc.AddGitHubToken(app.WithActor(context.Background(), app.OperatorActor), tok); err != nil {
		t.Fatal(err)
	}
	return &identityFixture{forgeFixture: fx, svc: svc, aliceTok: tok}
}

// checkTokenNotLeaked asserts a personal token appears in no git argv,
// URL, recorded header or body, and no error.
func (fx *identityFixture) checkTokenNotLeaked(t *testing.T, errs ...error) {
	t.Helper()
	argv, _ := os.ReadFile(fx.argv)
	if strings.Contains(string(argv), fx.aliceTok) || strings.Contains(string(argv), basicHeader(fx.aliceTok)) {
		t.Error("personal token in git argv")
	}
	for _, q := range fx.srv.Requests(nil) {
		if strings.Contains(q.Path, fx.aliceTok) || strings.Contains(q.Query.Encode(), fx.aliceTok) || strings.Contains(string(q.Body), fx.aliceTok) {
			t.Errorf("personal token in request %s", q.Path)
		}
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), fx.aliceTok) {
			t.Errorf("personal token in error %v", err)
		}
	}
}

func TestPublishAsRequesterWithStoredToken(t *testing.T) {
	fx := newIdentityFixture(t)
	issue := fx.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Crash"})
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"fix.go": "package main\n"})
	origin := app.Origin{Kind: app.OriginGitHubLabel, Repo: "acme/widgets", Number: issue.Number, Login: "alice"}
	req := app.PublishRequest{
		Session: app.Session{ID: "ses_abcdefghijklmnop", Owner: app.OperatorAccount, Origin: origin},
		Run:     app.Run{ID: "run_abcdefghijklmnop", Origin: origin}, Bundles: []app.Bundle{b},
	}
	res, err := fx.forge.Publish(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.PushedAs != "alice" {
		t.Fatalf("pushed as %q, want alice", res.PushedAs)
	}
	alice, _ := fx.srv.User("alice")
	log := fx.srv.Log("acme/widgets", res.Branch)
	wantEmail := forgeItoa(int(alice.ID)) + "+alice@users.noreply.127.0.0.1"
	if log[0].SHA != res.Commits[0] || log[0].AuthorName != "Alice Liddell" || log[0].AuthorEmail != wantEmail ||
		log[0].CommitterName != "Alice Liddell" || log[0].CommitterEmail != wantEmail {
		t.Fatalf("commit = %+v, want authored and committed as Alice <%s>", log[0], wantEmail)
	}
	if strings.Contains(log[0].Message, "Co-authored-by") {
		t.Fatalf("a person's own commit needs no co-author trailer: %q", log[0].Message)
	}
	pushes := fx.srv.Pushes("acme/widgets")
	if len(pushes) != 1 || pushes[0].Auth != githubtest.AuthPersonal || pushes[0].Login != "alice" {
		t.Fatalf("pushes = %+v, want one with alice's token", pushes)
	}
	prs := fx.srv.PullRequests("acme/widgets")
	if len(prs) != 1 || prs[0].User != "alice" {
		t.Fatalf("pull requests = %+v, want one opened by alice", prs)
	}
	// Idempotent: the same rewrite, nothing pushed or opened again.
	res2, err := fx.forge.Publish(context.Background(), req)
	if err != nil || strings.Join(res2.Commits, ",") != strings.Join(res.Commits, ",") ||
		len(fx.srv.Pushes("acme/widgets")) != 1 || len(fx.srv.PullRequests("acme/widgets")) != 1 {
		t.Fatalf("second publish: %+v %v", res2, err)
	}
	fx.checkTokenNotLeaked(t)
}

func TestPublishAsAppWhenRequesterHasNoToken(t *testing.T) {
	fx := newIdentityFixture(t)
	fx.srv.AddUser("bob")
	fx.srv.SetPermission("acme/widgets", "bob", "write")
	issue := fx.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "bob", Title: "Bug"})
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"fix.go": "package main\n"})
	origin := app.Origin{Kind: app.OriginGitHubLabel, Repo: "acme/widgets", Number: issue.Number, Login: "bob"}
	res, err := fx.forge.Publish(context.Background(), app.PublishRequest{
		Session: app.Session{ID: "ses_abcdefghijklmnop", Owner: app.OperatorAccount, Origin: origin},
		Run:     app.Run{ID: "run_abcdefghijklmnop", Origin: origin}, Bundles: []app.Bundle{b},
	})
	if err != nil {
		t.Fatal(err)
	}
	log := fx.srv.Log("acme/widgets", res.Branch)
	pushes := fx.srv.Pushes("acme/widgets")
	if res.PushedAs != "app" || log[0].AuthorName != "Agent" || !strings.Contains(log[0].Message, "Co-authored-by: bob <") ||
		len(pushes) != 1 || pushes[0].Auth != githubtest.AuthInstallation {
		t.Fatalf("pushed as %q, commit %+v, pushes %+v", res.PushedAs, log[0], pushes)
	}
	fx.checkNoLeaks(t)
}

func TestPublishWithoutAppUsesStoredToken(t *testing.T) {
	fx := newIdentityFixture(t)
	// A private repository of alice's with no App installation.
	fx.srv.AddRepo(githubtest.RepoSpec{Owner: "alice", Name: "site", Private: true, Files: map[string]string{"index.html": "hi\n"}})
	issue := fx.srv.AddIssue("alice/site", githubtest.IssueSpec{Author: "alice", Title: "Typo"})
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "alice/site", Number: issue.Number, Login: "alice"}
	sess := app.Session{ID: "ses_abcdefghijklmnop", Owner: app.OperatorAccount, Origin: origin}
	src := app.Source{Repo: "alice/site", Dir: "site"}

	// Without the session the fetch has no identity for a repository the App is not on.
	if _, _, err := fx.forge.Fetch(context.Background(), src); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("fetch without a session: %v", err)
	}
	dir, cleanup, err := fx.forge.Fetch(app.WithSession(context.Background(), sess), src)
	if err != nil {
		t.Fatalf("fetch as alice: %v", err)
	}
	forgeRunGit(t, dir, "update-ref", "refs/asb/base", "HEAD")
	if err := os.WriteFile(dir+"/index.html", []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	forgeRunGit(t, dir, "commit", "-qam", "Fix typo")
	bundle := t.TempDir() + "/b.bundle"
	forgeRunGit(t, dir, "bundle", "create", "-q", bundle, "refs/asb/base..HEAD")
	cleanup()

	res, err := fx.forge.Publish(context.Background(), app.PublishRequest{
		Session: sess, Run: app.Run{ID: "run_abcdefghijklmnop", Origin: origin},
		Bundles: []app.Bundle{{Source: src, Path: bundle}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pushes := fx.srv.Pushes("alice/site")
	if res.PushedAs != "alice" || len(pushes) != 1 || pushes[0].Login != "alice" || pushes[0].Auth != githubtest.AuthPersonal {
		t.Fatalf("result %+v, pushes %+v", res, pushes)
	}

	// Someone with no stored token and no App: a clear question for a token.
	fx.srv.AddUser("carol")
	fx.srv.SetPermission("alice/site", "carol", "write")
	carol := origin
	carol.Login = "carol"
	_, err = fx.forge.Publish(context.Background(), app.PublishRequest{
		Session: app.Session{ID: "ses_bbbbbbbbbbbbbbbb", Owner: app.OperatorAccount, Origin: carol},
		Run:     app.Run{ID: "run_bbbbbbbbbbbbbbbb", Origin: carol}, Bundles: []app.Bundle{{Source: src, Path: bundle}},
	})
	if app.ErrorCode(err) != app.EINVALID || !strings.Contains(err.Error(), "gh_token_add") || !strings.Contains(err.Error(), "carol") {
		t.Fatalf("no token, no App: %v", err)
	}
	fx.checkTokenNotLeaked(t, err)
}

func TestPublishMCPRunAsChosenAccount(t *testing.T) {
	fx := newIdentityFixture(t)
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	b := fx.makeBundle(t, src, map[string]string{"x.txt": "x\n"})
	// A follow-up run (its own origin names no account) keeps the
	// session's choice.
	res, err := fx.forge.Publish(context.Background(), app.PublishRequest{
		Session: app.Session{ID: "ses_cccccccccccccccc", Owner: app.OperatorAccount, Title: "Add x",
			Origin: app.Origin{Kind: app.OriginMCP, GitHubAccount: "alice"}},
		Run:     app.Run{ID: "run_cccccccccccccccc", Origin: app.Origin{Kind: app.OriginMCP}},
		Bundles: []app.Bundle{b},
	})
	if err != nil {
		t.Fatal(err)
	}
	pushes := fx.srv.Pushes("acme/widgets")
	if res.PushedAs != "alice" || len(pushes) != 1 || pushes[0].Login != "alice" || pushes[0].Auth != githubtest.AuthPersonal {
		t.Fatalf("result %+v, pushes %+v", res, pushes)
	}
	fx.checkTokenNotLeaked(t)
}

func TestFetchAsksWhichAccountBeforeTheWork(t *testing.T) {
	fx := newIdentityFixture(t)
	fx.srv.AddUser("bob")
	fx.srv.SetPermission("acme/widgets", "bob", "write")
	if _, err := fx.svc.AddGitHubToken(app.WithActor(context.Background(), app.OperatorActor), fx.srv.AddToken("bob")); err != nil {
		t.Fatal(err)
	}
	sess := app.Session{ID: "ses_dddddddddddddddd", Owner: app.OperatorAccount, Origin: app.Origin{Kind: app.OriginMCP}}
	src := app.Source{Repo: "acme/widgets", Dir: "widgets"}
	_, _, err := fx.forge.Fetch(app.WithSession(context.Background(), sess), src)
	if app.ErrorCode(err) != app.EINVALID || !strings.Contains(err.Error(), "alice, bob") || !strings.Contains(err.Error(), "githubAccount") {
		t.Fatalf("fetch with two candidates: %v", err)
	}
	sess.Origin.GitHubAccount = "bob"
	_, cleanup, err := fx.forge.Fetch(app.WithSession(context.Background(), sess), src)
	if err != nil {
		t.Fatal(err)
	}
	cleanup()
	reqs := fx.srv.Requests(func(q githubtest.Request) bool { return q.Git && q.Login == "bob" })
	if len(reqs) == 0 {
		t.Fatal("the fetch did not use bob's token")
	}
	fx.checkTokenNotLeaked(t, err)
}
