package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/web"
)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see each 303 and where it points.
type browser struct {
	t    *testing.T
	e    *apiEnv
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, e *apiEnv) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, e: e, c: c}
}

func (b *browser) send(req *http.Request) response {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(path string, headers ...string) response {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.e.srv.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

// post submits a URL-encoded form; the page's CSRF token is added unless
// the form sets "csrf" itself (to "" to leave it out).
func (b *browser) post(path string, form url.Values, headers ...string) response {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	} else if form.Get("csrf") == "" {
		form.Del("csrf")
	}
	req, err := http.NewRequest("POST", b.e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

var hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfIn(t *testing.T, body string) string {
	t.Helper()
	m := hiddenCSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", body)
	}
	return m[1]
}

// signIn goes through the gate with token and returns the response.
func (b *browser) signIn(token string) response {
	b.t.Helper()
	gate := b.get("/")
	if gate.status != 200 {
		b.t.Fatalf("GET / = %d", gate.status)
	}
	return b.post("/signin", url.Values{"token": {token}, "csrf": {csrfIn(b.t, gate.body)}, "next": {"/dashboard"}})
}

// signedIn returns a browser signed in with the operator token, holding
// the session's CSRF token.
func signedIn(t *testing.T, e *apiEnv) *browser {
	t.Helper()
	b := newBrowser(t, e)
	res := b.signIn(testToken)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/dashboard" {
		t.Fatalf("sign-in = %d → %q\n%s", res.status, res.header.Get("Location"), res.body)
	}
	page := b.get("/dashboard")
	if page.status != 200 {
		t.Fatalf("GET /dashboard after sign-in = %d", page.status)
	}
	b.csrf = csrfIn(t, page.body)
	return b
}

func (e *apiEnv) sessionCount(t *testing.T) int {
	t.Helper()
	views, err := e.svc.Fleet(e.ctx, app.FleetFilter{IncludeClosed: true})
	if err != nil {
		t.Fatal(err)
	}
	return len(views)
}

func TestPagesRedirectToTheGateWithoutASession(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	d := e.delegate(t, map[string]any{"task": "look around"})
	b := newBrowser(t, e)
	for _, path := range []string{"/dashboard", "/new", "/account", "/integrations", "/s/" + string(d.Session.ID),
		"/s/" + string(d.Session.ID) + "/files", "/s/" + string(d.Session.ID) + "/teardown"} {
		res := b.get(path)
		want := "/?next=" + url.QueryEscape(path)
		if res.status != http.StatusSeeOther || res.header.Get("Location") != want {
			t.Errorf("GET %s = %d → %q, want 303 → %q", path, res.status, res.header.Get("Location"), want)
		}
	}
	// A forged cookie is no session either.
	u, _ := url.Parse(e.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "asb_session", Value: "forged"}})
	if res := b.get("/dashboard"); res.status != http.StatusSeeOther {
		t.Errorf("forged cookie: GET /dashboard = %d, want 303", res.status)
	}
	// A change without a session is refused and changes nothing.
	res := b.post("/new", url.Values{"task": {"do it"}, "csrf": {"x"}})
	if res.status != http.StatusUnauthorized {
		t.Errorf("POST /new without a session = %d, want 401", res.status)
	}
	if n := e.sessionCount(t); n != 1 {
		t.Errorf("sessions = %d after a refused POST, want 1", n)
	}
	// Every JSON route answers 401 to such a browser.
	for _, path := range []string{"/fleet.json", "/watch.json?session=" + string(d.Session.ID), "/watch.sse?session=" + string(d.Session.ID)} {
		if res := b.get(path); res.status != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials = %d, want 401", path, res.status)
		}
	}
}

func TestSignInWithABadTokenShowsTheErrorNextToTheField(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	res := b.signIn("not-the-token")
	if res.status != http.StatusUnauthorized {
		t.Fatalf("bad token = %d, want 401", res.status)
	}
	if !strings.Contains(res.body, `id="token-error"`) || !strings.Contains(res.body, `aria-describedby="token-error"`) ||
		!strings.Contains(res.body, "That token is not valid") {
		t.Errorf("the form does not show the error next to the token field:\n%s", res.body)
	}
	if strings.Contains(res.body, "not-the-token") {
		t.Error("the page echoes the submitted token")
	}
	for _, c := range res.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "asb_session=") {
			t.Errorf("a bad token got a session cookie: %s", c)
		}
	}
	if res := b.get("/dashboard"); res.status != http.StatusSeeOther {
		t.Errorf("after a bad token GET /dashboard = %d, want 303 to the gate", res.status)
	}
	// An empty token is a field error too.
	if res := b.signIn(""); res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="token-error"`) {
		t.Errorf("empty token = %d", res.status)
	}
	if strings.Contains(e.logs.String(), "not-the-token") {
		t.Error("the submitted token reached the log")
	}
}

func TestSignInNeedsTheGateToken(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	b.get("/")
	res := b.post("/signin", url.Values{"token": {testToken}, "csrf": {"guessed-by-another-site"}})
	if res.status != http.StatusForbidden {
		t.Fatalf("sign-in with a wrong gate token = %d, want 403", res.status)
	}
	if res := b.get("/dashboard"); res.status != http.StatusSeeOther {
		t.Errorf("a refused sign-in still signed in: %d", res.status)
	}
}

func TestSessionCookieIsHttpOnlyStrict(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	res := b.signIn(testToken)
	var cookie string
	for _, c := range res.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "asb_session=") {
			cookie = c
		}
	}
	if cookie == "" {
		t.Fatalf("no session cookie: %v", res.header.Values("Set-Cookie"))
	}
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, testToken) {
		t.Error("the cookie carries the operator token")
	}
	// Behind an https public URL the cookie is Secure.
	e2 := newAPI(t, envConfig{noRun: true, options: func(o *web.Options) { o.PublicURL = "https://asb.example.com" }})
	res = newBrowser(t, e2).signIn(testToken)
	if c := strings.Join(res.header.Values("Set-Cookie"), "\n"); !strings.Contains(c, "Secure") {
		t.Errorf("https public URL: cookies are not Secure:\n%s", c)
	}
}

func TestSignInReturnsToTheRequestedPage(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	gate := b.get("/?next=" + url.QueryEscape("/account"))
	res := b.post("/signin", url.Values{"token": {testToken}, "csrf": {csrfIn(t, gate.body)}, "next": {"/account"}})
	if res.header.Get("Location") != "/account" {
		t.Errorf("next=/account → %q", res.header.Get("Location"))
	}
	b2 := newBrowser(t, e)
	gate = b2.get("/")
	res = b2.post("/signin", url.Values{"token": {testToken}, "csrf": {csrfIn(t, gate.body)}, "next": {"//evil.example/x"}})
	if res.header.Get("Location") != "/dashboard" {
		t.Errorf("next=//evil.example → %q, want /dashboard", res.header.Get("Location"))
	}
}

func TestTheCookieWorksOnJSONRoutesWithCSRFOnChanges(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := signedIn(t, e)
	if res := b.get("/fleet.json"); res.status != 200 {
		t.Fatalf("GET /fleet.json with the cookie = %d %s", res.status, res.body)
	}
	body := `{"task":"from the dashboard cookie"}`
	mk := func(csrf string) *http.Request {
		req, _ := http.NewRequest("POST", e.srv.URL+"/delegate.json", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		return req
	}
	for _, bad := range []string{"", "wrong-token"} {
		res := b.send(mk(bad))
		if res.status != http.StatusForbidden {
			t.Errorf("POST /delegate.json with the cookie and CSRF %q = %d, want 403", bad, res.status)
		}
	}
	if n := e.sessionCount(t); n != 0 {
		t.Fatalf("a refused POST created %d sessions", n)
	}
	if res := b.send(mk(b.csrf)); res.status != 200 {
		t.Fatalf("POST /delegate.json with cookie and CSRF = %d %s", res.status, res.body)
	}
	if n := e.sessionCount(t); n != 1 {
		t.Fatalf("sessions = %d, want 1", n)
	}
	// Bearer callers need no CSRF token.
	if res := e.do(t, "POST", "/delegate.json", map[string]any{"task": "by bearer"}); res.status != 200 {
		t.Errorf("bearer POST = %d %s", res.status, res.body)
	}
	// A token in the URL stays refused, cookie or not.
	if res := b.get("/fleet.json?token=" + testToken); res.status != http.StatusBadRequest {
		t.Errorf("query token with a cookie = %d, want 400", res.status)
	}
}

func TestPageChangesNeedTheCSRFToken(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	d := e.delegate(t, map[string]any{"task": "keep this box"})
	b := signedIn(t, e)
	id := string(d.Session.ID)
	cases := []struct {
		path string
		form url.Values
	}{
		{"/new", url.Values{"task": {"a task"}}},
		{"/s/" + id + "/pin", url.Values{"pinned": {"true"}}},
		{"/s/" + id + "/teardown", url.Values{"confirm": {"yes"}}},
		{"/s/" + id + "/followup", url.Values{"message": {"more"}}},
		{"/signout", nil},
	}
	for _, c := range cases {
		for _, tok := range []string{"", "wrong"} {
			f := url.Values{}
			for k, v := range c.form {
				f[k] = v
			}
			f.Set("csrf", tok)
			if res := b.post(c.path, f); res.status != http.StatusForbidden {
				t.Errorf("POST %s with CSRF %q = %d, want 403", c.path, tok, res.status)
			}
		}
	}
	v, err := e.svc.Session(e.ctx, d.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.Pinned || v.Session.State != app.SessionActive || len(v.Runs) != 1 || e.sessionCount(t) != 1 {
		t.Errorf("refused changes changed something: pinned=%v state=%s runs=%d sessions=%d",
			v.Session.Pinned, v.Session.State, len(v.Runs), e.sessionCount(t))
	}
	if res := b.get("/dashboard"); res.status != 200 {
		t.Errorf("a refused sign-out signed out: %d", res.status)
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := signedIn(t, e)
	res := b.post("/signout", nil)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/" {
		t.Fatalf("sign-out = %d → %q", res.status, res.header.Get("Location"))
	}
	if res := b.get("/dashboard"); res.status != http.StatusSeeOther {
		t.Errorf("after sign-out GET /dashboard = %d, want 303", res.status)
	}
	if res := b.get("/fleet.json"); res.status != http.StatusUnauthorized {
		t.Errorf("after sign-out GET /fleet.json = %d, want 401", res.status)
	}
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	d := e.delegate(t, map[string]any{"task": "headers"})
	id := string(d.Session.ID)
	b := signedIn(t, e)
	for _, path := range []string{"/", "/dashboard", "/dashboard?state=waiting&repo=x", "/new", "/account", "/integrations", "/s/" + id,
		"/s/" + id + "/teardown", "/s/ses_nonexistent0000", "/static/app.js", "/static/app.css"} {
		res := b.get(path)
		if res.status >= 500 {
			t.Errorf("GET %s = %d", path, res.status)
		}
		csp := res.header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP allows unsafe code: %q", path, csp)
		}
		if res.header.Get("X-Content-Type-Options") != "nosniff" || res.header.Get("Referrer-Policy") == "" {
			t.Errorf("GET %s: nosniff=%q referrer=%q", path, res.header.Get("X-Content-Type-Options"), res.header.Get("Referrer-Policy"))
		}
		if strings.HasPrefix(res.header.Get("Content-Type"), "text/html") {
			if strings.Contains(res.body, "<script>") || regexp.MustCompile(`\son[a-z]+=`).MatchString(res.body) ||
				strings.Contains(res.body, "style=") {
				t.Errorf("GET %s: the page has inline script, handlers or styles", path)
			}
			if !strings.Contains(res.body, `name="viewport"`) {
				t.Errorf("GET %s: no viewport meta", path)
			}
		}
	}
}

func TestSignInIsThrottledPerAddress(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	var last response
	for range 11 {
		last = b.signIn("wrong")
	}
	if last.status != http.StatusTooManyRequests || !strings.Contains(last.body, "Too many sign-in attempts") {
		t.Fatalf("the 11th sign-in in a minute = %d, want 429", last.status)
	}
	// Even the right token waits.
	if res := b.signIn(testToken); res.status != http.StatusTooManyRequests {
		t.Errorf("right token while throttled = %d", res.status)
	}
}

func TestPagesTakeBearerCredentials(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	if res := e.do(t, "GET", "/dashboard", nil); res.status != 200 || !strings.Contains(res.body, "<h1>Fleet</h1>") {
		t.Errorf("bearer GET /dashboard = %d", res.status)
	}
	if res := e.do(t, "GET", "/dashboard", nil, "Authorization", "Bearer wrong"); res.status != http.StatusUnauthorized {
		t.Errorf("wrong bearer GET /dashboard = %d, want 401", res.status)
	}
	// A script posting a form needs no CSRF token.
	req, _ := http.NewRequest("POST", e.srv.URL+"/new", strings.NewReader(url.Values{"task": {"from a script"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testToken)
	b := newBrowser(t, e)
	if res := b.send(req); res.status != http.StatusSeeOther {
		t.Errorf("bearer POST /new = %d %s", res.status, res.body)
	}
}

func TestACrossSiteLinkReloadsFromThisSite(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	// A link from github.com arrives without the SameSite=Strict cookie.
	res := b.get("/dashboard?state=waiting", "Sec-Fetch-Site", "cross-site")
	if res.status != 200 || !strings.Contains(res.body, `<meta http-equiv="refresh" content="0;url=/dashboard?state=waiting">`) {
		t.Errorf("cross-site arrival = %d:\n%s", res.status, res.body)
	}
	if res := b.get("/dashboard", "Sec-Fetch-Site", "same-origin"); res.status != http.StatusSeeOther {
		t.Errorf("same-site arrival without a session = %d, want 303 to the gate", res.status)
	}
}

func TestAskFromTheSessionPage(t *testing.T) {
	e := newAPI(t, envConfig{})
	b := signedIn(t, e)
	res := b.post("/new", url.Values{"task": {"something"}})
	id := res.header.Get("Location")
	id, _, _ = strings.Cut(id, "?")
	e.waitState(t, app.SessionID(strings.TrimPrefix(id, "/s/")), "done")
	res = b.post(id+"/ask", url.Values{"question": {"what changed <here>?"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("ask = %d %s", res.status, res.body)
	}
	page := b.get(id)
	if !strings.Contains(page.body, `id="ask-history"`) || !strings.Contains(page.body, "you asked: what changed &lt;here&gt;?") {
		t.Errorf("the ask panel does not show the answer:\n%s", page.body)
	}
	if res := b.post(id+"/ask", url.Values{"question": {""}}); res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="question-error"`) {
		t.Errorf("empty question = %d", res.status)
	}
}

func TestUnknownPathsAnswerBrowsersWithAPage(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := newBrowser(t, e)
	res := b.get("/no/such/<page>", "Accept", "text/html,application/xhtml+xml")
	if res.status != http.StatusNotFound || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(res.body, "no such page: /no/such/&lt;page&gt;") {
		t.Errorf("browser 404 = %d %s:\n%s", res.status, res.header.Get("Content-Type"), res.body)
	}
	if res := b.get("/no/such/page"); res.status != http.StatusNotFound || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
		t.Errorf("script 404 = %d %s", res.status, res.header.Get("Content-Type"))
	}
}
