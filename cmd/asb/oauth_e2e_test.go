package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/github/githubtest"
)

// TestContinueWithGitHub signs in through the fake GitHub's OAuth pages:
// an ADMIN_GITHUB_LOGINS login gets an admin account, an admin-created
// user with a GitHub login is linked, an unknown login is refused while
// sign-up is invite-only, and a forged state is refused.
func TestContinueWithGitHub(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	for _, u := range []string{"octo", "ann-gh", "zed"} {
		srv.AddUser(u)
	}
	const secret = "oauth-client-secret-0123456789"
	srv.OAuthApp("Iv1.asbtest", secret)
	dataDir := t.TempDir()
	extra := []string{"MCP_HTTP_TOKEN=" + e2eToken, "AUTH_MODE=saas", "ADMIN_GITHUB_LOGINS=octo",
		"GITHUB_OAUTH_CLIENT_ID=Iv1.asbtest", "GITHUB_OAUTH_CLIENT_SECRET=" + secret,
		"GITHUB_API_URL=" + srv.APIURL(), "GITHUB_WEB_URL=" + srv.URL + "/"}
	env, stdout, stderr := testEnv(t, dataDir, extra...)
	addr, stop := startServe(t, env)
	defer stop()
	base := "http://" + addr

	cliEnv, _, cliErr := testEnv(t, dataDir, extra...)
	if code := run(context.Background(), cliEnv, []string{"user", "add", "ann", "--github", "ann-gh"}); code != 0 {
		t.Fatalf("asb user add: %s", cliErr)
	}

	// signInAs follows the whole dance in a fresh browser and returns the
	// final status and page.
	signInAs := func(login string) (int, string) {
		t.Helper()
		srv.SignInAs(login)
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		resp, err := c.Get(base + "/auth/github")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 && strings.HasSuffix(resp.Request.URL.Path, "/dashboard") {
			// Signed in: the account page names the account.
			r2, err := c.Get(base + "/account")
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Body.Close()
			b, _ = io.ReadAll(r2.Body)
		}
		return resp.StatusCode, string(b)
	}
	if code, page := signInAs("octo"); code != 200 || !strings.Contains(page, "<strong>octo</strong>") || !strings.Contains(page, "Manage users") {
		t.Fatalf("admin login: %d\n%s", code, page)
	}
	if code, page := signInAs("ann-gh"); code != 200 || !strings.Contains(page, "<strong>ann</strong>") {
		t.Fatalf("linked login: %d\n%s", code, page)
	}
	if code, page := signInAs("zed"); code != http.StatusForbidden || !strings.Contains(page, "ask an admin") {
		t.Fatalf("unknown login while invite-only: %d\n%s", code, page)
	}

	// A callback that did not start in this browser is refused.
	resp, err := http.Get(base + "/auth/github/callback?code=abc&state=forged")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged state: %d", resp.StatusCode)
	}
	if strings.Contains(stderr.String()+stdout.String(), secret) {
		t.Fatal("the OAuth client secret is in the logs")
	}
}
