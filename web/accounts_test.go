package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/web"
)

var (
	newKeyRe    = regexp.MustCompile(`asb_k_[a-z2-7]{52}`)
	revokeKeyRe = regexp.MustCompile(`/account/keys/(key_[a-z0-9]+)/revoke`)
)

func TestOperatorAPIKeysFromTheAccountPage(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := signedIn(t, e)
	if res := b.post("/account/keys", url.Values{"name": {"ci"}, "csrf": {"wrong"}}); res.status != http.StatusForbidden {
		t.Fatalf("create a key without the CSRF token = %d", res.status)
	}
	res := b.post("/account/keys", url.Values{"name": {"ci"}})
	key := newKeyRe.FindString(res.body)
	if res.status != 200 || key == "" || !strings.Contains(res.body, "shown only this once") {
		t.Fatalf("create a key = %d\n%s", res.status, res.body)
	}
	if !strings.Contains(res.body, "Bearer "+key) {
		t.Error("the page showing the new key does not fill it into the IDE configurations")
	}
	page := b.get("/account")
	if strings.Contains(page.body, key) {
		t.Fatal("the account page shows the key again")
	}
	m := revokeKeyRe.FindStringSubmatch(page.body)
	if m == nil || !strings.Contains(page.body, key[:12]) {
		t.Fatalf("the key is not listed by its prefix:\n%s", page.body)
	}
	bearer := func() int {
		req, _ := http.NewRequest("GET", e.srv.URL+"/fleet.json", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := bearer(); code != 200 {
		t.Fatalf("the operator's key as bearer = %d", code)
	}
	if res := b.post("/account/keys/"+m[1]+"/revoke", nil); res.status != http.StatusSeeOther {
		t.Fatalf("revoke = %d %s", res.status, res.body)
	}
	if code := bearer(); code != http.StatusUnauthorized {
		t.Fatalf("a revoked key = %d, want 401", code)
	}
	if strings.Contains(e.logs.String(), key) {
		t.Fatal("the key is in the logs")
	}
}

func multiUser(open bool) envConfig {
	return envConfig{noRun: true,
		service: func(d *app.Deps, c *app.Config) {
			d.Passwords = web.ScryptHasher{N: 1 << 10}
			c.Accounts = app.AccountPolicy{SignupOpen: open, UserMaxBoxes: 2}
		},
		options: func(o *web.Options) { o.MultiUser = true },
	}
}

func TestSignUpIsClosedUnlessOpen(t *testing.T) {
	e := newAPI(t, multiUser(false))
	b := newBrowser(t, e)
	if res := b.get("/signup"); res.status != http.StatusNotFound {
		t.Fatalf("GET /signup while invite-only = %d", res.status)
	}
	gate := b.get("/")
	if strings.Contains(gate.body, `href="/signup"`) || !strings.Contains(gate.body, `name="password"`) {
		t.Fatalf("invite-only gate:\n%s", gate.body)
	}
	res := b.post("/signup", url.Values{"csrf": {csrfIn(t, gate.body)}, "username": {"ann"}, "password": {"long enough pw"}, "password2": {"long enough pw"}})
	if res.status != http.StatusNotFound {
		t.Fatalf("POST /signup while invite-only = %d", res.status)
	}
	if _, err := e.svc.FindAccount(e.ctx, "ann"); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("an account was created: %v", err)
	}
}

func TestPasswordSignInDevicesAndPasswordChange(t *testing.T) {
	e := newAPI(t, multiUser(true))
	b := newBrowser(t, e)
	gate := b.get("/")
	if !strings.Contains(gate.body, `href="/signup"`) {
		t.Fatal("the gate does not offer sign-up")
	}
	form := b.get("/signup")
	res := b.post("/signup", url.Values{"csrf": {csrfIn(t, form.body)}, "username": {"Ann"}, "email": {"ann@example.com"},
		"password": {"first password"}, "password2": {"first password"}})
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/account") {
		t.Fatalf("sign-up = %d %q\n%s", res.status, res.header.Get("Location"), res.body)
	}
	acct := b.get("/account")
	if acct.status != 200 || !strings.Contains(acct.body, "Signed-in devices") || !strings.Contains(acct.body, "(this one)") {
		t.Fatalf("account page after sign-up = %d\n%s", acct.status, acct.body)
	}
	b.csrf = csrfIn(t, acct.body)
	if res := b.post("/account/password", url.Values{"current": {"wrong password"}, "new": {"second password"}, "new2": {"second password"}}); res.status != http.StatusForbidden {
		t.Fatalf("change with a wrong current password = %d", res.status)
	}
	if res := b.post("/account/password", url.Values{"current": {"first password"}, "new": {"second password"}, "new2": {"second password"}}); res.status != 200 {
		t.Fatalf("change password = %d %s", res.status, res.body)
	}

	// A second browser signs in with the new password; the old one no longer works.
	other := newBrowser(t, e)
	g := other.get("/")
	if res := other.post("/signin", url.Values{"csrf": {csrfIn(t, g.body)}, "username": {"ann"}, "password": {"first password"}}); res.status != http.StatusUnauthorized ||
		!strings.Contains(res.body, "Wrong username or password") {
		t.Fatalf("old password = %d", res.status)
	}
	if res := other.post("/signin", url.Values{"csrf": {csrfIn(t, g.body)}, "username": {"ann"}, "password": {"second password"}, "next": {"/account"}}); res.status != http.StatusSeeOther {
		t.Fatalf("new password = %d %s", res.status, res.body)
	}
	page := other.get("/account")
	devs := regexp.MustCompile(`/account/devices/(dev_[a-z0-9]+)/revoke`).FindAllStringSubmatch(page.body, -1)
	if len(devs) != 2 {
		t.Fatalf("devices listed = %d, want 2", len(devs))
	}
	// The second browser signs every device out, itself (the newest, listed first) last.
	other.csrf = csrfIn(t, page.body)
	for i := len(devs) - 1; i >= 0; i-- {
		if res := other.post("/account/devices/"+devs[i][1]+"/revoke", nil); res.status != http.StatusSeeOther {
			t.Fatalf("sign out device %d = %d", i, res.status)
		}
	}
	if res := other.get("/account"); res.status != http.StatusSeeOther {
		t.Errorf("the browser that signed itself out still opens pages: %d", res.status)
	}
	if res := b.get("/dashboard"); res.status != http.StatusSeeOther {
		t.Errorf("a revoked device still opens the dashboard: %d", res.status)
	}
	if res := b.get("/fleet.json"); res.status != http.StatusUnauthorized {
		t.Errorf("a revoked device on the JSON routes = %d", res.status)
	}
	if strings.Contains(e.logs.String(), "second password") || strings.Contains(e.logs.String(), "first password") {
		t.Error("a password is in the logs")
	}
}
