package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/asb-dev/asb/app"
)

// Multi-user pages: password and invite sign-in, sign-up, and the
// account page's API keys, devices and password sections.

// passwordSignIn checks a username and password (multi-user mode).
func (d *dash) passwordSignIn(w http.ResponseWriter, r *http.Request) {
	if !d.o.MultiUser {
		d.renderGateError(w, r, http.StatusBadRequest, "This controller has one operator: sign in with the operator token.")
		return
	}
	actor, err := d.svc.SignIn(r.Context(), r.PostFormValue("username"), r.PostFormValue("password"), clientIP(r))
	if err != nil {
		code := StatusCode(app.ErrorCode(err))
		if code >= 500 {
			d.log.Error("password sign-in", "err", err)
		}
		d.log.Info("dashboard sign-in refused", "client", clientIP(r), "code", app.ErrorCode(err))
		msg := app.ErrorMessage(err)
		if app.ErrorCode(err) == app.EUNAUTHORIZED {
			msg = "Wrong username or password."
		}
		d.renderGateError(w, r, code, msg)
		return
	}
	d.startSession(w, r, actor, safeNext(r.PostFormValue("next")))
}

// inviteSignIn exchanges a one-time invite for a session and sends the
// new user to set a password.
func (d *dash) inviteSignIn(w http.ResponseWriter, r *http.Request, token string) {
	actor, err := d.svc.RedeemInvite(r.Context(), token)
	if err != nil {
		d.log.Info("invite refused", "client", clientIP(r))
		d.renderGateError(w, r, StatusCode(app.ErrorCode(err)), app.ErrorMessage(err))
		return
	}
	d.startSession(w, r, actor, "/account?welcome=1#password")
}

type signupData struct {
	Gate     string
	Username string
	Email    string
	Error    string
}

func (d *dash) signupOpen() bool {
	return d.o.MultiUser && d.svc.AccountsInfo().SignupOpen
}

func (d *dash) signupPage(w http.ResponseWriter, r *http.Request) {
	if !d.signupOpen() {
		d.notFound(w, r)
		return
	}
	p := d.newPage(r, "Create an account", "signup")
	p.Data = signupData{Gate: d.gateToken(w, r)}
	d.render(w, r, http.StatusOK, "signup", p)
}

func (d *dash) signupPost(w http.ResponseWriter, r *http.Request) {
	if !d.signupOpen() {
		d.notFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, app.Errorf(app.EINVALID, "the form could not be read"))
		return
	}
	sd := signupData{Username: clipText(r.PostFormValue("username"), 64), Email: clipText(r.PostFormValue("email"), 254)}
	gc, err := r.Cookie(gateCookie)
	if err != nil || !tokenMatch(gc.Value, r.PostFormValue(csrfField)) {
		sd.Error = "The form expired or came from another site; try again."
		d.renderSignup(w, r, http.StatusForbidden, sd)
		return
	}
	if r.PostFormValue("password") != r.PostFormValue("password2") {
		sd.Error = "The two passwords differ."
		d.renderSignup(w, r, http.StatusBadRequest, sd)
		return
	}
	_, actor, err := d.svc.SignUp(r.Context(), app.NewAccount{Username: r.PostFormValue("username"),
		Email: r.PostFormValue("email"), Password: r.PostFormValue("password")})
	if err != nil {
		if StatusCode(app.ErrorCode(err)) >= 500 {
			d.log.Error("sign-up", "err", err)
		}
		sd.Error = app.ErrorMessage(err)
		d.renderSignup(w, r, StatusCode(app.ErrorCode(err)), sd)
		return
	}
	d.startSession(w, r, actor, "/account?welcome=1#connect")
}

func (d *dash) renderSignup(w http.ResponseWriter, r *http.Request, code int, sd signupData) {
	sd.Gate = d.gateToken(w, r)
	p := d.newPage(r, "Create an account", "signup")
	p.Data = sd
	d.render(w, r, code, "signup", p)
}

// accountExtra is what one request adds to the account page: a key shown
// once, a notice or a problem.
type accountExtra struct {
	NewKey  string
	Notice  string
	Problem string
}

// accountSections fills the multi-user parts of the account page.
func (d *dash) accountSections(r *http.Request, ad *accountData, ex accountExtra) {
	ad.MultiUser, ad.NewKey, ad.Notice, ad.Problem = d.o.MultiUser, ex.NewKey, ex.Notice, ex.Problem
	ad.Welcome = r.URL.Query().Get("welcome") == "1"
	if a, ok := app.ActorFrom(r.Context()); ok {
		ad.Admin = a.Admin || a.Operator
		ad.Operator = a.Operator
	}
	keys, err := d.svc.APIKeys(r.Context())
	if err != nil {
		d.log.Warn("list API keys", "err", err)
	}
	ad.Keys = keys
	if !d.o.MultiUser {
		return
	}
	if me, err := d.svc.Me(r.Context()); err == nil {
		ad.HasPassword = me.PasswordHash != ""
		now := timeNow()
		ad.Plan, ad.Lapsed = me.Trial(now), me.Lapsed(now)
		ad.BillingURL = d.svc.AccountsInfo().BillingURL
	}
	devs, err := d.svc.Devices(r.Context())
	if err != nil {
		d.log.Warn("list devices", "err", err)
	}
	cur, _ := r.Context().Value(browserSessionKey{}).(browserSession)
	for _, dv := range devs {
		ad.Devices = append(ad.Devices, deviceView{Device: dv, Current: dv.ID == cur.device})
	}
}

type deviceView struct {
	app.Device
	Current bool
}

func (d *dash) renderAccount(w http.ResponseWriter, r *http.Request, code int, ex accountExtra) {
	base := d.publicURL(r)
	p := d.newPage(r, "Account", "account")
	ad := accountData{Actor: p.Actor, PublicURL: base, MCPURL: base + "/mcp", IDEs: ideConfigs(base)}
	if ex.NewKey != "" {
		// The page that shows a new key once also fills it into the configurations.
		for i := range ad.IDEs {
			for j, sn := range ad.IDEs[i].Snippets {
				ad.IDEs[i].Snippets[j] = strings.ReplaceAll(sn, "TOKEN", ex.NewKey)
			}
		}
	}
	d.accountSections(r, &ad, ex)
	p.Data = ad
	d.render(w, r, code, "account", p)
}

// accountFail shows an error on the account page itself.
func (d *dash) accountFail(w http.ResponseWriter, r *http.Request, err error) {
	code := StatusCode(app.ErrorCode(err))
	if code >= 500 {
		d.fail(w, r, err)
		return
	}
	d.renderAccount(w, r, code, accountExtra{Problem: app.ErrorMessage(err)})
}

// createKeyPost mints an API key and shows it this once.
func (d *dash) createKeyPost(w http.ResponseWriter, r *http.Request) {
	k, secret, err := d.svc.CreateAPIKey(r.Context(), r.PostFormValue("name"))
	if err != nil {
		d.accountFail(w, r, err)
		return
	}
	d.log.Info("API key created", "key", k.ID, "client", clientIP(r))
	d.renderAccount(w, r, http.StatusOK, accountExtra{NewKey: secret,
		Notice: "Key " + k.Name + " created. Copy it now: it is shown only this once."})
}

func (d *dash) revokeKeyPost(w http.ResponseWriter, r *http.Request) {
	if err := d.svc.RevokeAPIKey(r.Context(), chi.URLParam(r, "id")); err != nil {
		d.accountFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/account?done=revoked#keys", http.StatusSeeOther)
}

func (d *dash) revokeDevicePost(w http.ResponseWriter, r *http.Request) {
	if err := d.svc.RevokeDevice(r.Context(), chi.URLParam(r, "id")); err != nil {
		d.accountFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/account?done=signed-out#devices", http.StatusSeeOther)
}

func (d *dash) passwordPost(w http.ResponseWriter, r *http.Request) {
	next := r.PostFormValue("new")
	if next != r.PostFormValue("new2") {
		d.accountFail(w, r, app.Errorf(app.EINVALID, "the two new passwords differ"))
		return
	}
	if err := d.svc.SetPassword(r.Context(), r.PostFormValue("current"), next); err != nil {
		d.accountFail(w, r, err)
		return
	}
	d.renderAccount(w, r, http.StatusOK, accountExtra{Notice: "Password changed."})
}

// mountAccountChanges registers, in the signed-in and rate-limited group,
// the account page's changes and the admin pages' (multi-user mode).
func (d *dash) mountAccountChanges(r chi.Router) {
	r.Post("/account/keys", d.createKeyPost)
	r.Post("/account/keys/{id}/revoke", d.revokeKeyPost)
	if !d.o.MultiUser {
		return
	}
	r.Post("/account/devices/{id}/revoke", d.revokeDevicePost)
	r.Post("/account/password", d.passwordPost)
	r.Post("/admin/users", d.adminCreatePost)
	r.Post("/admin/users/{id}", d.adminChangePost)
}

func trimmed(r *http.Request, k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
