package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/asb-dev/asb/github/githubtest"
)

// TestSetupCreatesTheAppAndTheNextStartUsesIt walks the manifest flow
// through a running controller with no App configured: GET /setup → the
// form posted to (fake) GitHub → GitHub's redirect to /setup/callback →
// the App stored sealed. After a restart the controller uses that App: a
// webhook signed with the secret GitHub handed out starts a run whose
// commit lands on the pull request.
func TestSetupCreatesTheAppAndTheNextStartUsesIt(t *testing.T) {
	const webhookSecret = "whsec-handed-out-by-the-manifest-flow"
	f := newGHFixtureWith(t, githubtest.Options{WebhookSecret: webhookSecret})
	var env []string
	for _, kv := range f.env {
		if !strings.HasPrefix(kv, "GITHUB_APP_ID=") && !strings.HasPrefix(kv, "GITHUB_APP_PRIVATE_KEY_FILE=") {
			env = append(env, kv)
		}
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	e, _, logs := testEnv(t, dataDir, env...)
	e.hookBinary = buildHook(t)
	addr, stop := startServe(t, e)
	base := "http://" + addr

	if code, body := httpGet(t, base+"/readyz"); !strings.Contains(body, "open /setup") {
		t.Fatalf("readyz %d does not point at /setup:\n%s", code, body)
	}
	// Signed out, /setup is not served.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(base + "/setup")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signed-out /setup answered %d", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodGet, base+"/setup?name=Acme+Agent", nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	action := regexp.MustCompile(`<form method="post" action="([^"]+)">`).FindStringSubmatch(string(page))
	manifest := regexp.MustCompile(`name="manifest" value="([^"]*)"`).FindStringSubmatch(string(page))
	if resp.StatusCode != http.StatusOK || action == nil || manifest == nil {
		t.Fatalf("setup page %d:\n%s", resp.StatusCode, page)
	}
	var state *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "asb_setup_state" {
			state = c
		}
	}
	if state == nil {
		t.Fatal("no state cookie")
	}
	gresp, err := noFollow.PostForm(html.UnescapeString(action[1]), url.Values{"manifest": {html.UnescapeString(manifest[1])}})
	if err != nil {
		t.Fatal(err)
	}
	gresp.Body.Close()
	loc, err := url.Parse(gresp.Header.Get("Location"))
	if err != nil || loc.Path != "/setup/callback" {
		t.Fatalf("GitHub redirected to %q", gresp.Header.Get("Location"))
	}
	// The browser follows GitHub's redirect without the session cookie
	// (a cross-site navigation), with the state cookie.
	req, _ = http.NewRequest(http.MethodGet, base+"/setup/callback?"+loc.RawQuery, nil)
	req.AddCookie(state)
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	result, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(result), "/apps/acme-agent/installations/new") {
		t.Fatalf("callback %d:\n%s", resp.StatusCode, result)
	}
	if stop() != 0 {
		t.Fatalf("serve did not stop cleanly:\n%s", logs)
	}

	addr, stop = startServe(t, e)
	defer stop()
	if !strings.Contains(logs.String(), "using the GitHub App created through /setup") {
		t.Fatalf("the restarted controller did not load the stored App:\n%s", logs)
	}
	if _, body := httpGet(t, "http://"+addr+"/readyz"); strings.Contains(body, "No GitHub App") || strings.Contains(body, "open /setup") {
		t.Fatalf("readyz still asks for an App:\n%s", body)
	}
	c := f.srv.AddComment("acme/api", f.pr.Number, "octo", agentComment)
	resp, err = f.srv.Deliver(context.Background(), "http://"+addr+"/webhooks/github", webhookSecret, "issue_comment",
		f.srv.IssueCommentPayload(c.ID, "created"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook signed with the stored secret answered %d", resp.StatusCode)
	}
	f.waitForCommitAndReport(t)
	stop()
	for _, secret := range []string{webhookSecret, "PRIVATE KEY"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds %q", secret)
		}
	}
}
