package web

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/asb-dev/asb/app"
)

// timeNow is the pages' clock for showing trial states.
var timeNow = time.Now

type adminUser struct {
	app.Account
	PlanText string
	Lapsed   bool
}

type adminData struct {
	Users []adminUser
	// Token is a just-issued invite, shown once, for Username.
	Token    string
	Username string
	Notice   string
	Problem  string
	// Audit is the latest audit log entries.
	Audit []app.AuditEntry
}

// adminAuditRows is how much of the audit log the users page shows.
const adminAuditRows = 50

// adminPage lists users with their plans (operator and admins only; the
// Service refuses everyone else).
func (d *dash) adminPage(w http.ResponseWriter, r *http.Request) {
	d.renderAdmin(w, r, http.StatusOK, adminData{Notice: doneNotice(r.URL.Query().Get("done"))})
}

func doneNotice(done string) string {
	switch done {
	case "changed":
		return "Saved."
	}
	return ""
}

func (d *dash) renderAdmin(w http.ResponseWriter, r *http.Request, code int, ad adminData) {
	list, err := d.svc.Accounts(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	now := timeNow()
	for _, a := range list {
		if a.ID == app.OperatorAccount {
			continue
		}
		ad.Users = append(ad.Users, adminUser{Account: a, PlanText: a.Trial(now), Lapsed: a.Lapsed(now)})
	}
	if ad.Audit, err = d.svc.Audit(r.Context(), adminAuditRows); err != nil {
		d.fail(w, r, err)
		return
	}
	p := d.newPage(r, "Users", "admin")
	p.Data = ad
	d.render(w, r, code, "admin", p)
}

// adminCreatePost adds a user and shows their one-time invite.
func (d *dash) adminCreatePost(w http.ResponseWriter, r *http.Request) {
	acct, err := d.svc.CreateAccount(r.Context(), app.NewAccount{Username: trimmed(r, "username"),
		Email: trimmed(r, "email"), GitHubLogin: trimmed(r, "github_login"), Admin: r.PostFormValue("admin") == "on"})
	if err != nil {
		d.adminFail(w, r, err)
		return
	}
	tok, err := d.svc.InviteToken(r.Context(), acct.ID)
	if err != nil {
		d.adminFail(w, r, err)
		return
	}
	d.renderAdmin(w, r, http.StatusOK, adminData{Token: tok, Username: acct.Username,
		Notice: "User " + acct.Username + " added. Hand over this invite now: it is shown only once, works once, for 7 days."})
}

// adminChangePost applies one action to a user.
func (d *dash) adminChangePost(w http.ResponseWriter, r *http.Request) {
	id := app.AccountID(chi.URLParam(r, "id"))
	var c app.AccountChange
	yes, no, pro, free := true, false, app.PlanPro, ""
	switch r.PostFormValue("action") {
	case "pro":
		c.Plan = &pro
	case "free":
		c.Plan = &free
	case "extend":
		c.ExtendTrialDays = 7
	case "disable":
		c.Disabled = &yes
	case "enable":
		c.Disabled = &no
	case "token":
		tok, err := d.svc.InviteToken(r.Context(), id)
		if err != nil {
			d.adminFail(w, r, err)
			return
		}
		d.renderAdmin(w, r, http.StatusOK, adminData{Token: tok, Notice: "New invite issued; earlier ones no longer work. It is shown only once."})
		return
	default:
		d.adminFail(w, r, app.Errorf(app.EINVALID, "unknown action"))
		return
	}
	if _, err := d.svc.ChangeAccount(r.Context(), id, c); err != nil {
		d.adminFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/admin/users?done=changed", http.StatusSeeOther)
}

func (d *dash) adminFail(w http.ResponseWriter, r *http.Request, err error) {
	code := StatusCode(app.ErrorCode(err))
	if code >= 500 || code == http.StatusForbidden || code == http.StatusUnauthorized {
		d.fail(w, r, err)
		return
	}
	d.renderAdmin(w, r, code, adminData{Problem: app.ErrorMessage(err)})
}
