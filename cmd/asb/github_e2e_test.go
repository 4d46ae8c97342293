package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/github/githubtest"
	"github.com/asb-dev/asb/sandbox/inbox"
)

// TestGitHubCommentEndToEnd: a signed issue_comment webhook with `/agent`
// on a pull request → 👀 and a tracking comment → the agent's commit lands
// on the PR branch in the bare repository → the tracking comment becomes
// the final report. Real git, the fake GitHub, the fake msb and the
// scripted agent; the same delivery redelivered runs nothing again.
// ghFixture is a fake GitHub with acme/api, a writer, an installation and
// a pull request, plus the environment that points asb at it.
type ghFixture struct {
	srv    *githubtest.Server
	pr     githubtest.PullRequest
	inst   githubtest.Installation
	before string
	env    []string
}

func newGHFixture(t *testing.T, extra ...string) ghFixture {
	t.Helper()
	return newGHFixtureWith(t, githubtest.Options{}, extra...)
}

func newGHFixtureWith(t *testing.T, opts githubtest.Options, extra ...string) ghFixture {
	t.Helper()
	srv := githubtest.New(t, opts)
	srv.CreateRepo("acme", "api", map[string]string{"README.md": "# api\n"})
	srv.Commit("acme/api", "feature", "start the feature", map[string]string{"feature.go": "package api\n"})
	srv.AddUser("octo")
	srv.SetPermission("acme/api", "octo", "write")
	inst := srv.AddInstallation("acme", "acme/api")
	pr := srv.AddPull("acme/api", githubtest.PullSpec{Author: "octo", Title: "Add the feature", Head: "feature", Base: "main"})
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(keyFile, srv.AppPrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := agentHost(t)
	env := append([]string{
		"SANDBOX_HOSTS=local", "MSB_PATH=" + fake.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M", "POOL_SIZE=0",
		"AGENT_COMMAND=" + inbox.ToolDir + "/bin/claude", "MCP_HTTP_TOKEN=" + e2eToken,
		"GITHUB_APP_ID=" + strconv.FormatInt(srv.AppID(), 10), "GITHUB_APP_PRIVATE_KEY_FILE=" + keyFile,
		"GITHUB_API_URL=" + srv.APIURL(), "GITHUB_WEB_URL=" + srv.URL + "/"}, extra...)
	return ghFixture{srv: srv, pr: pr, inst: inst, before: srv.Branch("acme/api", "feature"), env: env}
}

const agentComment = "/agent add a test\n#!asb-script\nwrite feature_test.go package api\\n\ncommit add a test for the feature\nsay added the test"

// waitForCommitAndReport waits until the agent's commit is on the PR
// branch and the tracking comment is the final report.
func (f ghFixture) waitForCommitAndReport(t *testing.T) {
	t.Helper()
	waitUntil(t, "the agent's commit on the PR branch", 90*time.Second, func() bool {
		return f.srv.Branch("acme/api", "feature") != f.before
	})
	log := f.srv.Log("acme/api", "feature")
	if log[0].Subject != "add a test for the feature" || !strings.Contains(log[0].Message, "Co-authored-by: octo") || log[1].SHA != f.before {
		t.Fatalf("PR branch head: %+v", log[0])
	}
	waitUntil(t, "the final report", 60*time.Second, func() bool {
		cs := botComments(f.srv, f.pr.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "Done")
	})
	report := botComments(f.srv, f.pr.Number)[0].Body
	for _, want := range []string{"added the test", "add a test for the feature"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestGitHubCommentEndToEnd(t *testing.T) {
	const secret = "webhook-secret-for-the-e2e-test"
	f := newGHFixture(t, "GITHUB_WEBHOOK_SECRET="+secret)
	srv, pr, inst := f.srv, f.pr, f.inst
	dataDir := filepath.Join(t.TempDir(), "data")
	env, _, logs := testEnv(t, dataDir, f.env...)
	env.hookBinary = buildHook(t)
	addr, stop := startServe(t, env)
	defer stop()

	c := srv.AddComment("acme/api", pr.Number, "octo", agentComment)
	payload := srv.IssueCommentPayload(c.ID, "created")
	resp, err := srv.Deliver(context.Background(), "http://"+addr+"/webhooks/github", secret, "issue_comment", payload)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}

	// 👀 on the comment and one tracking comment, quickly.
	waitUntil(t, "the 👀 reaction and the tracking comment", 30*time.Second, func() bool {
		return hasReaction(srv.Reactions(c.ID), "eyes") && len(botComments(srv, pr.Number)) == 1
	})
	// Its links lead to this controller, on the port it really listens on.
	if body := botComments(srv, pr.Number)[0].Body; !strings.Contains(body, "http://"+addr+"/s/") {
		t.Fatalf("the tracking comment does not link to the live view at %s:\n%s", addr, body)
	}
	f.waitForCommitAndReport(t)
	// The same delivery again: nothing new.
	for i := 0; i < 3; i++ {
		resp, err := srv.Deliver(context.Background(), "http://"+addr+"/webhooks/github", secret, "issue_comment", payload)
		if err == nil {
			resp.Body.Close()
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(botComments(srv, pr.Number)); n != 1 {
		t.Fatalf("%d tracking comments after redelivery", n)
	}
	stop()
	// No token asb was handed is in its log or in any file of its data
	// folder (database, WAL, bundles, git work trees).
	tokens := srv.IssuedTokens()
	if len(tokens) == 0 {
		t.Fatal("the fake issued no tokens: nothing was checked")
	}
	var files []string
	filepath.Walk(dataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	for _, tok := range tokens {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("a token reached the log")
		}
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(tok)) {
				t.Fatalf("a token is stored in %s", f)
			}
		}
	}
	if strings.Contains(logs.String(), "x-access-token") {
		t.Fatal("a credential header reached the log")
	}
	_ = inst
}

func waitUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func hasReaction(rs []githubtest.Reaction, content string) bool {
	for _, r := range rs {
		if r.Content == content {
			return true
		}
	}
	return false
}

func botComments(srv *githubtest.Server, n int) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range srv.Comments("acme/api", n) {
		if strings.HasSuffix(c.User, "[bot]") {
			out = append(out, c)
		}
	}
	return out
}

// TestGitHubPollerEndToEnd: with no webhook secret the poller finds the
// comment and the run goes through the same way.
func TestGitHubPollerEndToEnd(t *testing.T) {
	f := newGHFixture(t, "POLL_INTERVAL=10s")
	f.srv.AddComment("acme/api", f.pr.Number, "octo", agentComment)
	env, _, _ := testEnv(t, filepath.Join(t.TempDir(), "data"), f.env...)
	env.hookBinary = buildHook(t)
	_, stop := startServe(t, env)
	defer stop()
	f.waitForCommitAndReport(t)
}

// TestGitHubLabelEndToEnd: the agent label on an issue → a branch, a
// draft PR that says Fixes #N, a comment on the issue linking it, and the
// state labels ending at agent:done.
func TestGitHubLabelEndToEnd(t *testing.T) {
	const secret = "webhook-secret-for-the-label-test"
	f := newGHFixture(t, "GITHUB_WEBHOOK_SECRET="+secret)
	srv := f.srv
	issue := srv.AddIssue("acme/api", githubtest.IssueSpec{Author: "octo", Title: "Add a changelog",
		Body: "#!asb-script\nwrite CHANGELOG.md # Changelog\\n\ncommit add a changelog\nsay wrote the changelog"})
	env, _, _ := testEnv(t, filepath.Join(t.TempDir(), "data"), f.env...)
	env.hookBinary = buildHook(t)
	addr, stop := startServe(t, env)
	defer stop()
	srv.AddLabels("acme/api", issue.Number, "octo", "agent")
	resp, err := srv.Deliver(context.Background(), "http://"+addr+"/webhooks/github", secret, "issues",
		srv.IssuesPayload("acme/api", issue.Number, "labeled", "agent", "octo"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	var prURL string
	waitUntil(t, "a draft PR that fixes the issue", 90*time.Second, func() bool {
		for _, p := range srv.PullRequests("acme/api") {
			for _, n := range srv.LinkedIssues("acme/api", p.Number) {
				if n == issue.Number && p.Draft && strings.HasPrefix(p.Head, "agent/issue-") {
					prURL = p.HTMLURL
					return true
				}
			}
		}
		return false
	})
	waitUntil(t, "agent:done and the issue comment", 60*time.Second, func() bool {
		labels := strings.Join(srv.Labels("acme/api", issue.Number), ",")
		linked := false
		for _, c := range botComments(srv, issue.Number) {
			if strings.Contains(c.Body, prURL) && strings.Contains(c.Body, "Fixes #") {
				linked = true
			}
		}
		return strings.Contains(labels, "agent:done") && !strings.Contains(labels, "agent:working") && linked
	})
	branch := ""
	for _, p := range srv.PullRequests("acme/api") {
		if p.HTMLURL == prURL {
			branch = p.Head
		}
	}
	if log := srv.Log("acme/api", branch); len(log) == 0 || log[0].Subject != "add a changelog" {
		t.Fatalf("branch %s: %+v", branch, log)
	}
}
