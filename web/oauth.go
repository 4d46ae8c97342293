package web

import (
	"context"
	"net/http"
	"time"

	"github.com/asb-dev/asb/app"
)

// GitHubOAuth is the "Continue with GitHub" OAuth App (github.OAuth).
type GitHubOAuth interface {
	AuthorizeURL(state, redirectURI string) string
	// Exchange trades the code GitHub sent back for the user's token.
	Exchange(ctx context.Context, code, redirectURI string) (string, error)
}

// oauthStateCookie binds a GitHub sign-in to the browser that started
// it. It is SameSite=Lax because GitHub's redirect back is a cross-site
// navigation, which a Strict cookie would not survive.
const oauthStateCookie = "asb_oauth_state"

func (d *dash) oauthOn() bool { return d.o.MultiUser && d.o.GitHubOAuth != nil }

func (d *dash) oauthRedirect(r *http.Request) string { return d.publicURL(r) + "/auth/github/callback" }

// githubStart sends the browser to GitHub with a fresh state.
func (d *dash) githubStart(w http.ResponseWriter, r *http.Request) {
	if !d.oauthOn() {
		d.notFound(w, r)
		return
	}
	state := randomToken()
	http.SetCookie(w, &http.Cookie{Name: oauthStateCookie, Value: state, Path: "/auth/github", MaxAge: 600,
		HttpOnly: true, Secure: d.secureCookies(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, d.o.GitHubOAuth.AuthorizeURL(state, d.oauthRedirect(r)), http.StatusFound)
}

// githubCallback checks the state, exchanges the code and signs in.
func (d *dash) githubCallback(w http.ResponseWriter, r *http.Request) {
	if !d.oauthOn() {
		d.notFound(w, r)
		return
	}
	q := r.URL.Query()
	c, err := r.Cookie(oauthStateCookie)
	http.SetCookie(w, &http.Cookie{Name: oauthStateCookie, Value: "", Path: "/auth/github", MaxAge: -1,
		HttpOnly: true, Secure: d.secureCookies(r), SameSite: http.SameSiteLaxMode})
	if err != nil || len(q.Get("state")) > 100 || !tokenMatch(c.Value, q.Get("state")) {
		d.log.Info("GitHub sign-in refused: state mismatch", "client", clientIP(r))
		d.renderGateError(w, r, http.StatusForbidden, "That GitHub sign-in did not start from this browser (the state does not match); try again.")
		return
	}
	if q.Get("error") != "" {
		d.renderGateError(w, r, http.StatusUnauthorized, "GitHub sign-in was cancelled.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	token, err := d.o.GitHubOAuth.Exchange(ctx, q.Get("code"), d.oauthRedirect(r))
	if err != nil {
		d.log.Warn("GitHub sign-in: code exchange failed", "err", err, "client", clientIP(r))
		d.renderGateError(w, r, http.StatusBadGateway, "GitHub did not confirm the sign-in; try again.")
		return
	}
	actor, err := d.svc.SignInWithGitHub(ctx, token, clientIP(r))
	if err != nil {
		code := StatusCode(app.ErrorCode(err))
		if code >= 500 {
			d.log.Error("GitHub sign-in", "err", err)
		}
		d.renderGateError(w, r, code, app.ErrorMessage(err))
		return
	}
	d.startSession(w, r, actor, "/dashboard")
}
