package githubtest_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

// gitClient runs the real git client with credentials passed the way asb
// passes them: an http.extraheader in GIT_CONFIG_* environment variables,
// never in the URL.
type gitClient struct {
	t    *testing.T
	home string
	user string
	tok  string
}

func newGit(t *testing.T, user, tok string) *gitClient {
	return &gitClient{t: t, home: t.TempDir(), user: user, tok: tok}
}

func (g *gitClient) run(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + g.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.invalid",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.invalid", "LANG=C",
	}
	if g.tok != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(g.user + ":" + g.tok))
		cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader",
			"GIT_CONFIG_VALUE_0=AUTHORIZATION: basic "+basic)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func (g *gitClient) must(dir string, args ...string) string {
	g.t.Helper()
	out, err := g.run(dir, args...)
	if err != nil {
		g.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (g *gitClient) refuse(dir, want string, args ...string) {
	g.t.Helper()
	out, err := g.run(dir, args...)
	if err == nil {
		g.t.Fatalf("git %s succeeded, want refusal", strings.Join(args, " "))
	}
	if !strings.Contains(out, want) {
		g.t.Fatalf("git %s: want %q in\n%s", strings.Join(args, " "), want, out)
	}
}

// clone clones repo into a new directory and returns it.
func (g *gitClient) clone(url string) string {
	dir := filepath.Join(g.t.TempDir(), "w")
	g.must("", "clone", "--quiet", url, dir)
	return dir
}

func (g *gitClient) commit(dir, file, content, msg string) string {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
	g.must(dir, "add", file)
	g.must(dir, "commit", "--quiet", "-m", msg)
	return g.must(dir, "rev-parse", "HEAD")
}

func TestGitCloneAndPush(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	srv := w.srv
	url := srv.GitURL("acme/widgets")
	if strings.Contains(url, "@") || url != srv.URL+"/acme/widgets.git" {
		t.Fatalf("GitURL %q", url)
	}

	// Public clone needs nothing; a private one needs a token.
	anon := newGit(t, "", "")
	dir := anon.clone(url)
	if b, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(b) != "package main\n" {
		t.Fatalf("clone content %q", b)
	}
	anon.refuse("", "terminal prompts disabled", "clone", "--quiet", srv.GitURL("acme/secret"), filepath.Join(t.TempDir(), "x"))
	anon.refuse(dir, "terminal prompts disabled", "push", "origin", "HEAD:refs/heads/anon")
	newGit(t, "x-access-token", "ghs_bogus").refuse("", "terminal prompts disabled", "clone", "--quiet", srv.GitURL("acme/secret"), filepath.Join(t.TempDir(), "x"))

	// The installation token clones the private repo and pushes a branch.
	bot := newGit(t, "x-access-token", srv.InstallationToken(w.inst.ID))
	sdir := bot.clone(srv.GitURL("acme/secret"))
	sha := bot.commit(sdir, "agent.txt", "work\n", "Agent work\n\nCo-authored-by: Alice <alice@example.com>")
	bot.must(sdir, "push", "--quiet", "origin", "HEAD:refs/heads/agent/issue-1-x")
	if srv.Branch("acme/secret", "agent/issue-1-x") != sha {
		t.Fatal("pushed branch not on the server")
	}
	log := srv.Log("acme/secret", "agent/issue-1-x")
	if len(log) != 2 || log[0].SHA != sha || log[0].Subject != "Agent work" || log[0].AuthorName != "Agent" ||
		!strings.Contains(log[0].Message, "Co-authored-by: Alice") {
		t.Fatalf("log %+v", log)
	}
	if got, ok := srv.ReadFile("acme/secret", "agent/issue-1-x", "agent.txt"); !ok || got != "work\n" {
		t.Fatalf("ReadFile %q %v", got, ok)
	}
	pushes := srv.Pushes("acme/secret")
	if len(pushes) != 1 || pushes[0].Auth != githubtest.AuthInstallation || pushes[0].InstallationID != w.inst.ID ||
		pushes[0].Ref != "refs/heads/agent/issue-1-x" || pushes[0].New != sha {
		t.Fatalf("pushes %+v", pushes)
	}
	for _, q := range srv.Requests(func(q githubtest.Request) bool { return q.Git }) {
		if q.Header.Get("Authorization") != "" || q.Query.Encode() != "" && strings.Contains(q.Query.Encode(), "ghs_") {
			t.Fatal("credential recorded")
		}
	}
	// The installation token cannot push where the App is not installed.
	bot.refuse(bot.clone(srv.GitURL("dave/solo")), "403", "push", "origin", "HEAD:refs/heads/x")

	// Personal tokens: any username; write permission needed to push.
	alice := newGit(t, "alice", srv.AddToken("alice"))
	adir := alice.clone(url)
	asha := alice.commit(adir, "a.txt", "a\n", "By alice")
	alice.must(adir, "push", "--quiet", "origin", "HEAD:refs/heads/feature")
	if srv.Branch("acme/widgets", "feature") != asha {
		t.Fatal("alice's push missing")
	}
	bob := newGit(t, "bob", srv.AddToken("bob"))
	bdir := bob.clone(url)
	bob.commit(bdir, "b.txt", "b\n", "By bob")
	bob.refuse(bdir, "Permission to acme/widgets.git denied to bob", "push", "origin", "HEAD:refs/heads/bob")
	if srv.Branch("acme/widgets", "bob") != "" {
		t.Fatal("refused push landed")
	}
	newGit(t, "carol", srv.AddToken("carol")).refuse("", "not found", "clone", "--quiet", srv.GitURL("acme/secret"), filepath.Join(t.TempDir(), "x"))

	// A contents:read installation token clones but cannot push.
	app := w.appClient(t)
	ro, _, err := app.Apps.CreateInstallationToken(w.ctx, w.inst.ID, &github.InstallationTokenOptions{
		Permissions: &github.InstallationPermissions{Contents: github.String("read")},
	})
	must(t, err, "read-only token")
	rog := newGit(t, "x-access-token", ro.GetToken())
	rdir := rog.clone(url)
	rog.commit(rdir, "r.txt", "r\n", "ro")
	rog.refuse(rdir, "403", "push", "origin", "HEAD:refs/heads/ro")

	// Branch protection and refs/pull/* are refused like on GitHub.
	srv.ProtectBranch("acme/widgets", "main")
	alice.refuse(adir, "GH006", "push", "origin", "HEAD:refs/heads/main")
	srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "alice", Title: "Feature", Head: "feature"})
	alice.refuse(adir, "hidden", "push", "origin", "HEAD~1:refs/pull/1/head")

	// Pull request heads are fetchable as refs/pull/<n>/head, and follow pushes.
	alice.must(adir, "fetch", "--quiet", "origin", "refs/pull/1/head:pr1")
	if alice.must(adir, "rev-parse", "pr1") != asha {
		t.Fatal("refs/pull/1/head")
	}
	next := alice.commit(adir, "a2.txt", "a2\n", "More")
	alice.must(adir, "push", "--quiet", "origin", "HEAD:refs/heads/feature")
	if pr, _ := srv.PullRequest("acme/widgets", 1); pr.HeadSHA != next || srv.Branch("acme/widgets", "refs/pull/1/head") != next {
		t.Fatalf("PR head %s, want %s", pr.HeadSHA, next)
	}
}

func TestGitMaintainerEditsOnForks(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	srv := w.srv
	srv.Fork("acme/widgets", "carol")
	srv.Commit("carol/widgets", "patch", "Patch", map[string]string{"p.txt": "p\n"})
	srv.Commit("carol/widgets", "other", "Other", map[string]string{"o.txt": "o\n"})
	srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "carol", Title: "Patch", Head: "patch", HeadRepo: "carol/widgets", MaintainerCanModify: true})

	alice := newGit(t, "alice", srv.AddToken("alice"))
	dir := alice.clone(srv.GitURL("carol/widgets"))
	alice.must(dir, "checkout", "--quiet", "patch")
	sha := alice.commit(dir, "fix.txt", "f\n", "Maintainer fix")
	alice.must(dir, "push", "--quiet", "origin", "HEAD:refs/heads/patch")
	if srv.Branch("carol/widgets", "patch") != sha || srv.Branch("acme/widgets", "refs/pull/1/head") != sha {
		t.Fatal("maintainer push to the PR head did not land")
	}
	alice.refuse(dir, "403", "push", "origin", "+HEAD:refs/heads/other")
	bob := newGit(t, "bob", srv.AddToken("bob"))
	bob.refuse(dir, "403", "push", "origin", "HEAD:refs/heads/patch")
	// Installation tokens may not, unless Options.InstallationMaintainerEdits.
	newGit(t, "x-access-token", srv.InstallationToken(w.inst.ID)).refuse(dir, "403", "push", "origin", "HEAD:refs/heads/patch")
}
