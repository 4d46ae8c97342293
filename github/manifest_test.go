package github_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	asb "github.com/asb-dev/asb"
	"github.com/asb-dev/asb/app"
	gh "github.com/asb-dev/asb/github"
	"github.com/asb-dev/asb/github/githubtest"
)

type savedApps struct {
	mu   sync.Mutex
	apps []app.GitHubAppCredentials
}

func (s *savedApps) save(_ context.Context, c app.GitHubAppCredentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps = append(s.apps, c)
	return nil
}

func (s *savedApps) list() []app.GitHubAppCredentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]app.GitHubAppCredentials(nil), s.apps...)
}

var (
	formAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	formField  = regexp.MustCompile(`name="manifest" value="([^"]*)"`)
)

// setupPage renders GET /setup and returns the form GitHub would receive.
func setupPage(t *testing.T, flow *gh.ManifestFlow, query string) (*http.Response, string, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	flow.Start().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/setup"+query, nil))
	body := rec.Body.String()
	action, manifest := "", ""
	if m := formAction.FindStringSubmatch(body); m != nil {
		action = html.UnescapeString(m[1])
	}
	if m := formField.FindStringSubmatch(body); m != nil {
		manifest = html.UnescapeString(m[1])
	}
	return rec.Result(), body, action, manifest
}

func TestManifestFlowCreatesAndStoresTheApp(t *testing.T) {
	t.Parallel()
	srv := githubtest.New(t, githubtest.Options{WebhookSecret: "whsec-from-github"})
	saved := &savedApps{}
	flow, err := gh.NewManifestFlow(gh.ManifestFlowOptions{Manifest: asb.AppManifest, PublicURL: "https://asb.example.com/",
		WebURL: srv.URL, APIURL: srv.APIURL(), Save: saved.save})
	if err != nil {
		t.Fatal(err)
	}
	resp, body, action, manifest := setupPage(t, flow, "?name=Acme+Agent&org=acme")
	if resp.StatusCode != http.StatusOK || action == "" || manifest == "" {
		t.Fatalf("setup page %d:\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+srv.URL+";") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q does not allow posting to GitHub alone", csp)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "asb_setup_state" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || !cookie.Secure || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/setup" {
		t.Fatalf("state cookie %+v", cookie)
	}
	if !strings.HasPrefix(action, srv.ManifestURL("acme")+"?state=") {
		t.Fatalf("form posts to %q", action)
	}

	// The manifest is app-manifest.yml with every URL pointing at asb.
	var m map[string]any
	if err := json.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	perms, _ := m["default_permissions"].(map[string]any)
	if m["name"] != "Acme Agent" || m["url"] != "https://asb.example.com" || m["redirect_url"] != "https://asb.example.com/setup/callback" ||
		m["setup_url"] != "https://asb.example.com/setup/installed" || hook["url"] != "https://asb.example.com/webhooks/github" ||
		hook["active"] != true || perms["contents"] != "write" || perms["checks"] != "write" {
		t.Fatalf("manifest %s", manifest)
	}
	if strings.Contains(manifest, "example.invalid") {
		t.Fatalf("a placeholder URL survived: %s", manifest)
	}

	// The browser posts the form; GitHub redirects back with a code.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	gresp, err := noFollow.PostForm(action, url.Values{"manifest": {manifest}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, gresp.Body)
	gresp.Body.Close()
	loc, err := url.Parse(gresp.Header.Get("Location"))
	if err != nil || loc.Path != "/setup/callback" {
		t.Fatalf("GitHub redirected to %q", gresp.Header.Get("Location"))
	}
	callback := func(c *http.Cookie, rawQuery string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/setup/callback?"+rawQuery, nil)
		if c != nil {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		flow.Callback().ServeHTTP(rec, req)
		return rec
	}

	// Without the browser's state cookie the code is not exchanged.
	if rec := callback(nil, loc.RawQuery); rec.Code != http.StatusForbidden || len(saved.list()) != 0 {
		t.Fatalf("no cookie: %d, saved %d", rec.Code, len(saved.list()))
	}
	forged := &http.Cookie{Name: cookie.Name, Value: "someone-elses-state"}
	if rec := callback(forged, loc.RawQuery); rec.Code != http.StatusForbidden || len(saved.list()) != 0 {
		t.Fatalf("wrong state: %d", rec.Code)
	}

	rec := callback(cookie, loc.RawQuery)
	if rec.Code != http.StatusOK {
		t.Fatalf("callback %d: %s", rec.Code, rec.Body.String())
	}
	apps := saved.list()
	if len(apps) != 1 {
		t.Fatalf("saved %d apps", len(apps))
	}
	got := apps[0]
	if got.AppID != srv.AppID() || got.Slug != "acme-agent" || got.WebhookSecret != "whsec-from-github" ||
		!strings.Contains(got.PrivateKeyPEM, "PRIVATE KEY") || got.ClientID == "" || got.ClientSecret == "" {
		t.Fatalf("saved %v: id %d slug %q", got, got.AppID, got.Slug)
	}
	page := rec.Body.String()
	if !strings.Contains(page, srv.URL+"/apps/acme-agent/installations/new") {
		t.Fatalf("result page lacks the install link:\n%s", page)
	}
	for _, secret := range []string{got.WebhookSecret, got.ClientSecret, "PRIVATE KEY"} {
		if strings.Contains(page, secret) || strings.Contains(got.String(), secret) {
			t.Fatalf("a credential is rendered")
		}
	}
	if c := rec.Result().Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
		t.Fatalf("the state cookie is not cleared: %+v", c)
	}
	// A code works once: replaying the redirect stores nothing more.
	if rec := callback(cookie, loc.RawQuery); rec.Code != http.StatusBadGateway || len(saved.list()) != 1 {
		t.Fatalf("replayed code: %d, saved %d", rec.Code, len(saved.list()))
	}
}

func TestManifestFlowValidatesItsInput(t *testing.T) {
	t.Parallel()
	saved := &savedApps{}
	flow, err := gh.NewManifestFlow(gh.ManifestFlowOptions{Manifest: asb.AppManifest, PublicURL: "http://127.0.0.1:8787", Save: saved.save})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, want string
	}{
		{"?org=-bad", "An organization name"},
		{"?org=a/../../x", "An organization name"},
		{"?name=" + strings.Repeat("x", 35), "An App name"},
		{"?name=%3Cscript%3E", "An App name"},
	} {
		_, body, action, _ := setupPage(t, flow, tc.query)
		if action != "" || !strings.Contains(body, tc.want) || strings.Contains(body, "<script>") {
			t.Errorf("%s: action %q, body:\n%s", tc.query, action, body)
		}
	}
	// A loopback address cannot receive webhooks: the App's hook starts off.
	_, body, _, manifest := setupPage(t, flow, "")
	if !strings.Contains(manifest, `"active":false`) || !strings.Contains(body, "POLL_INTERVAL") {
		t.Fatalf("loopback manifest %s", manifest)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/setup/callback?code=../../user&state=s", nil)
	req.AddCookie(&http.Cookie{Name: "asb_setup_state", Value: "s"})
	flow.Callback().ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || len(saved.list()) != 0 {
		t.Fatalf("path-like code: %d", rec.Code)
	}
	for _, bad := range []string{"", "ftp://x", "not a url"} {
		if _, err := gh.NewManifestFlow(gh.ManifestFlowOptions{Manifest: asb.AppManifest, PublicURL: bad, Save: saved.save}); err == nil {
			t.Errorf("public URL %q accepted", bad)
		}
	}
	if _, err := gh.NewManifestFlow(gh.ManifestFlowOptions{Manifest: []byte("- a list"), PublicURL: "https://x.example", Save: saved.save}); err == nil {
		t.Error("a manifest that is not a mapping was accepted")
	}
}
