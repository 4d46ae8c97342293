package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	keyRe     = regexp.MustCompile(`asb_k_[a-z2-7]{52}`)
	inviteRe  = regexp.MustCompile(`asb_i_[a-z2-7]{52}`)
	csrfRe    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	sessionRe = regexp.MustCompile(`ses_[a-z0-9]+`)
	keyIDRe   = regexp.MustCompile(`/account/keys/(key_[a-z0-9]+)/revoke`)
	deviceRe  = regexp.MustCompile(`/account/devices/(dev_[a-z0-9]+)/revoke`)
)

// muClient is one person: a browser (cookie jar) and, once minted, an API key.
type muClient struct {
	t    *testing.T
	base string
	http *http.Client
	key  string
	// seen collects every response body after a secret was created, to
	// prove none is echoed.
	seen *syncBuffer
}

func newBrowser(t *testing.T, base string, seen *syncBuffer) *muClient {
	jar, _ := cookiejar.New(nil)
	return &muClient{t: t, base: base, seen: seen, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *muClient) cookie(name string) string {
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// req sends a request as the browser (cookies) or, with bearer, as a script.
func (c *muClient) req(method, path, bearer string, form url.Values) (int, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r, _ := http.NewRequest(method, c.base+path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r.Header.Set("Accept", "text/html")
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.http.Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// page GETs a page with the browser and returns it with its CSRF token.
func (c *muClient) page(path string) (int, string, string) {
	c.t.Helper()
	code, body := c.req("GET", path, "", nil)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		return code, body, ""
	}
	return code, body, m[1]
}

func (c *muClient) signup(user, pw string) {
	c.t.Helper()
	c.req("GET", "/signup", "", nil) // sets the gate cookie
	code, body := c.req("POST", "/signup", "", url.Values{"csrf": {c.cookie("asb_gate")}, "username": {user},
		"email": {user + "@example.com"}, "password": {pw}, "password2": {pw}})
	if code != http.StatusSeeOther {
		c.t.Fatalf("sign-up %s: %d %s", user, code, body)
	}
}

// mintKey creates an API key on the account page and keeps it.
func (c *muClient) mintKey(name string) {
	c.t.Helper()
	_, _, csrf := c.page("/account")
	code, body := c.req("POST", "/account/keys", "", url.Values{"csrf": {csrf}, "name": {name}})
	c.key = keyRe.FindString(body)
	if code != http.StatusOK || c.key == "" {
		c.t.Fatalf("create key: %d %s", code, body)
	}
}

func (c *muClient) api(method, path, bearer, jsonBody string) (int, string) {
	c.t.Helper()
	var body io.Reader
	if jsonBody != "" {
		body = strings.NewReader(jsonBody)
	}
	r, _ := http.NewRequest(method, c.base+path, body)
	r.Header.Set("Authorization", "Bearer "+bearer)
	if jsonBody != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	c.seen.Write(b)
	return resp.StatusCode, string(b)
}

// sse opens the live stream and returns its status (closing it at once).
func (c *muClient) sse(bearer, session string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/watch.sse?session="+session, nil)
	r.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// mcpStatus calls the watch tool over /mcp with the official SDK client.
func mcpStatus(t *testing.T, base, bearer, session string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdkmcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: tokenTransport(bearer)}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: "watch", Arguments: map[string]any{"session": session}})
	if err != nil {
		t.Fatal(err)
	}
	return res.IsError, res.Content[0].(*sdkmcp.TextContent).Text
}

// TestMultiUserAcrossSurfaces runs a real `asb serve` in AUTH_MODE=saas
// with an admin (added by `asb user add`) and two users who sign up, and
// walks every surface: user B gets 404 for user A's session on the JSON
// routes, the live stream, MCP and the dashboard, while the admin and the
// operator token see it. It also checks the per-user quota under 20
// parallel delegations, sign-in throttling, revocation of a key and of a
// device, and that no password, key or token is stored or logged in clear.
func TestMultiUserAcrossSurfaces(t *testing.T) {
	dataDir := t.TempDir()
	env, stdout, stderr := testEnv(t, dataDir, "MCP_HTTP_TOKEN="+e2eToken, "AUTH_MODE=saas", "SIGNUP=open", "USER_MAX_BOXES=2")
	addr, stop := startServe(t, env)
	defer stop()
	base := "http://" + addr
	seen := &syncBuffer{}

	// The admin: added with the CLI while the controller runs, signing in with the invite.
	cliEnv, cliOut, cliErr := testEnv(t, dataDir, "MCP_HTTP_TOKEN="+e2eToken, "AUTH_MODE=saas")
	if code := run(context.Background(), cliEnv, []string{"user", "add", "boss", "--admin"}); code != 0 {
		t.Fatalf("asb user add: %d %s", code, cliErr)
	}
	invite := inviteRe.FindString(cliOut.String())
	if invite == "" {
		t.Fatalf("no invite printed: %s", cliOut)
	}
	boss := newBrowser(t, base, seen)
	boss.req("GET", "/", "", nil)
	if code, body := boss.req("POST", "/signin", "", url.Values{"csrf": {boss.cookie("asb_gate")}, "token": {invite}}); code != http.StatusSeeOther {
		t.Fatalf("invite sign-in: %d %s", code, body)
	}
	boss.mintKey("boss laptop")

	const pwA, pwB = "alice's long password", "bob's long password!"
	alice, bob := newBrowser(t, base, seen), newBrowser(t, base, seen)
	alice.signup("alice", pwA)
	bob.signup("bob", pwB)
	alice.mintKey("alice ide")
	bob.mintKey("bob ide")

	code, body := alice.api("POST", "/delegate.json", alice.key, `{"task":"alice's task"}`)
	sess := sessionRe.FindString(body)
	if code >= 300 || sess == "" {
		t.Fatalf("alice delegates: %d %s", code, body)
	}

	// Bob sees nothing of Alice's session, on every surface.
	for _, p := range []string{"/watch.json?session=" + sess, "/files.json?session=" + sess} {
		if code, body := bob.api("GET", p, bob.key, ""); code != http.StatusNotFound {
			t.Errorf("bob GET %s: %d %s", p, code, body)
		}
	}
	for p, extra := range map[string]string{"/followup.json": `,"message":"x"`, "/resume.json": `,"message":"x"`, "/cancel.json": ``,
		"/teardown.json": ``, "/pin.json": `,"pinned":true`, "/ask.json": `,"question":"x"`} {
		if code, body := bob.api("POST", p, bob.key, `{"session":"`+sess+`"`+extra+`}`); code != http.StatusNotFound {
			t.Errorf("bob POST %s: %d %s", p, code, body)
		}
	}
	if code, body := bob.api("GET", "/fleet.json", bob.key, ""); code != 200 || strings.Contains(body, sess) {
		t.Errorf("bob's fleet lists alice's session: %d %s", code, body)
	}
	if code := bob.sse(bob.key, sess); code != http.StatusNotFound {
		t.Errorf("bob's live stream: %d", code)
	}
	if isErr, text := mcpStatus(t, base, bob.key, sess); !isErr || !strings.Contains(text, "not found") {
		t.Errorf("bob's MCP status: %v %s", isErr, text)
	}
	for _, p := range []string{"/s/" + sess, "/s/" + sess + "/files", "/s/" + sess + "/teardown"} {
		if code, _ := bob.req("GET", p, "", nil); code != http.StatusNotFound {
			t.Errorf("bob's browser GET %s: %d", p, code)
		}
		if code, _ := bob.req("GET", p, bob.key, nil); code != http.StatusNotFound {
			t.Errorf("bob's key GET %s: %d", p, code)
		}
	}
	if code, _ := bob.req("GET", "/admin/users", "", nil); code != http.StatusForbidden {
		t.Errorf("bob opens the admin page: %d", code)
	}
	// Alice, the admin and the operator token see it.
	for who, tok := range map[string]string{"alice": alice.key, "admin": boss.key, "operator": e2eToken} {
		if code, body := alice.api("GET", "/watch.json?session="+sess, tok, ""); code != 200 {
			t.Errorf("%s GET watch.json: %d %s", who, code, body)
		}
		if code := alice.sse(tok, sess); code != 200 {
			t.Errorf("%s live stream: %d", who, code)
		}
		if isErr, text := mcpStatus(t, base, tok, sess); isErr {
			t.Errorf("%s MCP status: %s", who, text)
		}
		if code, _ := alice.req("GET", "/s/"+sess, tok, nil); code != 200 {
			t.Errorf("%s dashboard page: %d", who, code)
		}
	}
	if code, _ := boss.req("GET", "/s/"+sess, "", nil); code != 200 {
		t.Errorf("admin's browser on alice's session: %d", code)
	}
	if code, body := boss.req("GET", "/admin/users", "", nil); code != 200 || !strings.Contains(body, "alice") || !strings.Contains(body, "bob") ||
		!strings.Contains(body, "apikey.create") || !strings.Contains(body, "user.signup") || !strings.Contains(body, "signin.invite") {
		t.Errorf("admin page (users and audit log): %d\n%s", code, body)
	}

	// Quota: 20 parallel delegations from Bob with USER_MAX_BOXES=2 start exactly 2.
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := bob.api("POST", "/delegate.json", bob.key, fmt.Sprintf(`{"task":"bob %d"}`, i))
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	started, limited := 0, 0
	for c := range codes {
		switch {
		case c < 300:
			started++
		case c == http.StatusTooManyRequests:
			limited++
		default:
			t.Errorf("parallel delegate: %d", c)
		}
	}
	if started != 2 || limited != 18 {
		t.Fatalf("20 parallel delegates: %d started, %d refused; want 2 and 18", started, limited)
	}
	if _, body := bob.api("POST", "/delegate.json", bob.key, `{"task":"one more"}`); !strings.Contains(body, "USER_MAX_BOXES=2") {
		t.Errorf("quota refusal does not name the limit: %s", body)
	}

	// A revoked key fails on its next request.
	_, acct, _ := alice.page("/account")
	m := keyIDRe.FindStringSubmatch(acct)
	if m == nil {
		t.Fatalf("no key listed on alice's account page:\n%s", acct)
	}
	_, _, csrf := alice.page("/account")
	if code, body := alice.req("POST", "/account/keys/"+m[1]+"/revoke", "", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("revoke key: %d %s", code, body)
	}
	if code, _ := alice.api("GET", "/fleet.json", alice.key, ""); code != http.StatusUnauthorized {
		t.Errorf("revoked key: %d", code)
	}
	if isErr, _ := mcpStatusOrRefused(t, base, alice.key, sess); !isErr {
		t.Errorf("revoked key on /mcp still works")
	}
	// A revoked device fails on its next request: Bob signs his browser out with his key.
	_, acct = bob.req("GET", "/account", bob.key, nil)
	dm := deviceRe.FindStringSubmatch(acct)
	if dm == nil {
		t.Fatalf("no device listed on bob's account page")
	}
	if code, _ := bob.req("GET", "/dashboard", "", nil); code != 200 {
		t.Fatalf("bob's browser before revocation: %d", code)
	}
	if code, body := bob.req("POST", "/account/devices/"+dm[1]+"/revoke", bob.key, url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("revoke device: %d %s", code, body)
	}
	if code, _ := bob.req("GET", "/dashboard", "", nil); code != http.StatusSeeOther {
		t.Errorf("revoked device still signed in: %d", code)
	}

	// Brute force: wrong passwords are throttled per account, even before the right one.
	door := newBrowser(t, base, seen)
	door.req("GET", "/", "", nil)
	signin := func(pw string) (int, string) {
		return door.req("POST", "/signin", "", url.Values{"csrf": {door.cookie("asb_gate")}, "username": {"alice"}, "password": {pw}})
	}
	for i := 0; i < 5; i++ {
		if code, _ := signin(fmt.Sprintf("wrong guess %d", i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, code)
		}
	}
	if code, body := signin(pwA); code != http.StatusTooManyRequests || !strings.Contains(body, "too many failed sign-ins for this account") {
		t.Fatalf("after 5 wrong passwords: %d %s", code, body)
	}

	// No password, key or token in clear: not in the database files, the logs or later responses.
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	secrets := map[string]string{"alice's password": pwA, "bob's password": pwB, "alice's key": alice.key,
		"bob's key": bob.key, "boss's key": boss.key, "invite": invite, "operator token": e2eToken,
		"bob's cookie": bob.cookie("asb_session"), "alice's cookie": alice.cookie("asb_session")}
	files, _ := filepath.Glob(filepath.Join(dataDir, "*.sqlite*"))
	if len(files) == 0 {
		t.Fatal("no database files found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for what, s := range secrets {
			if s != "" && bytes.Contains(b, []byte(s)) {
				t.Errorf("%s is in clear in %s", what, filepath.Base(f))
			}
		}
	}
	for what, s := range secrets {
		if s == "" {
			continue
		}
		for name, buf := range map[string]string{"logs": stderr.String() + stdout.String(), "responses": seen.String()} {
			if strings.Contains(buf, s) {
				t.Errorf("%s appears in the %s", what, name)
			}
		}
	}
}

// mcpStatusOrRefused is mcpStatus that reports a refused connection as an error.
func mcpStatusOrRefused(t *testing.T, base, bearer, session string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdkmcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: tokenTransport(bearer)}}, nil)
	if err != nil {
		return true, err.Error()
	}
	defer cs.Close()
	return mcpStatus(t, base, bearer, session)
}

// TestSingleOperatorDataStaysTheOperatorsInSaaS restarts a controller
// that ran for one operator in AUTH_MODE=saas: the existing session is
// the operator's, a new user does not see it, and the operator still does.
func TestSingleOperatorDataStaysTheOperatorsInSaaS(t *testing.T) {
	dataDir := t.TempDir()
	env, _, _ := testEnv(t, dataDir, "MCP_HTTP_TOKEN="+e2eToken)
	addr, stop := startServe(t, env)
	c := newBrowser(t, "http://"+addr, &syncBuffer{})
	code, body := c.api("POST", "/delegate.json", e2eToken, `{"task":"before saas"}`)
	sess := sessionRe.FindString(body)
	if code >= 300 || sess == "" {
		t.Fatalf("delegate: %d %s", code, body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	// With admins configured, the first account is not promoted.
	env, _, _ = testEnv(t, dataDir, "MCP_HTTP_TOKEN="+e2eToken, "AUTH_MODE=saas", "SIGNUP=open", "ADMIN_GITHUB_LOGINS=octo")
	addr, stop = startServe(t, env)
	defer stop()
	ann := newBrowser(t, "http://"+addr, &syncBuffer{})
	ann.signup("ann", "ann's long password")
	ann.mintKey("ide")
	if code, body := ann.api("GET", "/fleet.json", ann.key, ""); code != 200 || strings.Contains(body, sess) {
		t.Fatalf("a new user's fleet: %d %s", code, body)
	}
	if code, _ := ann.api("GET", "/watch.json?session="+sess, ann.key, ""); code != http.StatusNotFound {
		t.Fatalf("a new user reading the operator's session: %d", code)
	}
	if code, body := ann.api("GET", "/watch.json?session="+sess, e2eToken, ""); code != 200 || !strings.Contains(body, `"owner": "operator"`) {
		t.Fatalf("the operator's session after the switch: %d %s", code, body)
	}
}
