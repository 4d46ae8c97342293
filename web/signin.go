package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
)

// Names of the dashboard's cookies and of the CSRF token in forms and
// fetch calls.
const (
	sessionCookie = "asb_session"
	// gateCookie carries the CSRF token of the sign-in form, before there
	// is a session (double submit): it stops another site from signing a
	// browser in to an account of the attacker's choosing.
	gateCookie = "asb_gate"
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// Lifetimes of a browser session: it ends after idleTTL without a
// request, and after maxTTL in any case.
const (
	idleTTL = 12 * time.Hour
	maxTTL  = 7 * 24 * time.Hour
	// maxBrowserSessions bounds the table; the oldest session goes first.
	maxBrowserSessions = 1000
)

// browserSession is one signed-in browser.
type browserSession struct {
	actor   app.Actor
	csrf    string
	created time.Time
	seen    time.Time
	// device is the stored device's id (multi-user mode), else empty.
	device string
}

// sessionStore keeps signed-in browsers: in memory for one operator
// (browserSessions), in the database as revocable devices in multi-user
// mode (deviceSessions).
type sessionStore interface {
	// start signs actor in and returns the cookie value.
	start(ctx context.Context, actor app.Actor, r *http.Request) (string, error)
	// fromRequest returns the live session named by the request's cookie.
	fromRequest(r *http.Request) (browserSession, bool)
	// end signs a cookie out.
	end(ctx context.Context, cookie string)
}

// browserSessions keeps signed-in browsers in memory: single-operator
// mode has one identity, so a restart costs one sign-in and no table.
// Keys are digests of the cookie value, so the table holds nothing a
// reader could replay.
type browserSessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]*browserSession
	now func() time.Time
}

func newBrowserSessions() *browserSessions {
	return &browserSessions{m: map[[sha256.Size]byte]*browserSession{}, now: time.Now}
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

func cookieDigest(v string) [sha256.Size]byte { return sha256.Sum256([]byte(v)) }

// create starts a session for actor and returns its cookie value.
func (s *browserSessions) create(actor app.Actor) (string, *browserSession) {
	id := randomToken()
	now := s.now()
	bs := &browserSession{actor: actor, csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for len(s.m) >= maxBrowserSessions {
		var oldest [sha256.Size]byte
		var at time.Time
		for k, v := range s.m {
			if at.IsZero() || v.seen.Before(at) {
				oldest, at = k, v.seen
			}
		}
		delete(s.m, oldest)
	}
	s.m[cookieDigest(id)] = bs
	return id, bs
}

func (s *browserSessions) expireLocked(now time.Time) {
	for k, v := range s.m {
		if v.expired(now) {
			delete(s.m, k)
		}
	}
}

func (bs *browserSession) expired(now time.Time) bool {
	return now.Sub(bs.seen) > idleTTL || now.Sub(bs.created) > maxTTL
}

// lookup returns the live session of a cookie value and marks it seen.
func (s *browserSessions) lookup(id string) (browserSession, bool) {
	if id == "" || len(id) > 100 {
		return browserSession{}, false
	}
	k := cookieDigest(id)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	bs, ok := s.m[k]
	if !ok {
		return browserSession{}, false
	}
	if bs.expired(now) {
		delete(s.m, k)
		return browserSession{}, false
	}
	bs.seen = now
	return *bs, true
}

func (s *browserSessions) start(_ context.Context, actor app.Actor, _ *http.Request) (string, error) {
	id, _ := s.create(actor)
	return id, nil
}

func (s *browserSessions) end(_ context.Context, id string) { s.delete(id) }

func (s *browserSessions) delete(id string) {
	s.mu.Lock()
	delete(s.m, cookieDigest(id))
	s.mu.Unlock()
}

// fromRequest returns the session named by the request's cookie.
func (s *browserSessions) fromRequest(r *http.Request) (browserSession, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return browserSession{}, false
	}
	return s.lookup(c.Value)
}

// tokenMatch compares a submitted CSRF token with the expected one in
// constant time; an empty expectation matches nothing.
func tokenMatch(want, got string) bool {
	if want == "" || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(got))
	return constantTimeEqual(a[:], b[:]) == 1
}

// safeMethod reports whether a request changes nothing by definition.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// cookieAuthenticator accepts the dashboard's session cookie besides the
// bearer credentials of next. A request with an Authorization header is
// a script and is judged by next alone; a cookie request that changes
// something must carry the session's CSRF token in X-CSRF-Token.
type cookieAuthenticator struct {
	next     Authenticator
	sessions sessionStore
}

func (c cookieAuthenticator) Authenticate(r *http.Request) (app.Actor, error) {
	if len(r.Header.Values("Authorization")) > 0 {
		return c.next.Authenticate(r)
	}
	bs, ok := c.sessions.fromRequest(r)
	if !ok {
		return c.next.Authenticate(r) // says which credentials are missing
	}
	if !safeMethod(r.Method) && !tokenMatch(bs.csrf, r.Header.Get(csrfHeader)) {
		return app.Actor{}, app.Errorf(app.EFORBIDDEN,
			"missing or wrong CSRF token: a request signed in with the dashboard cookie must send the page's token in %s", csrfHeader)
	}
	return bs.actor, nil
}

// secureCookies reports whether cookies must be Secure: the request came
// over TLS, or the controller's public address is https (TLS ends at a
// proxy in front of it).
func (d *dash) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(d.o.PublicURL, "https://")
}

func (d *dash) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: d.secureCookies(r), SameSite: http.SameSiteStrictMode,
	})
}

// gateToken returns the sign-in form's CSRF token, setting its cookie
// when the browser has none yet.
func (d *dash) gateToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(gateCookie); err == nil && len(c.Value) >= 40 && len(c.Value) <= 64 {
		return c.Value
	}
	tok := randomToken()
	d.setCookie(w, r, gateCookie, tok, 3600)
	return tok
}

// landing is the gate: a short description and the sign-in form, or
// links onward for a signed-in browser.
func (d *dash) landing(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		d.notFound(w, r)
		return
	}
	bs, signedIn := d.sessions.fromRequest(r)
	p := d.newPage(r, "Sign in", "landing")
	if signedIn {
		p.CSRF, p.SignedIn = bs.csrf, true
	}
	p.Data = gateData{Next: safeNext(r.URL.Query().Get("next")), Gate: d.gateToken(w, r), MultiUser: d.o.MultiUser, SignupOpen: d.signupOpen(), GitHub: d.oauthOn()}
	d.render(w, r, http.StatusOK, "landing", p)
}

type gateData struct {
	Next  string
	Gate  string
	Error string
	// MultiUser shows the username and password form; SignupOpen links
	// to /signup.
	MultiUser, SignupOpen, GitHub bool
}

// safeNext keeps a post-sign-in destination on this site: a local path,
// never "//host" or a scheme.
func safeNext(s string) string {
	if s == "" || len(s) > 2000 || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") ||
		strings.HasPrefix(s, "/\\") || strings.ContainsAny(s, "\r\n\\") {
		return "/dashboard"
	}
	return s
}

// signIn exchanges the operator token (or any bearer credential the
// Authenticator accepts) for a session cookie. The token is checked by
// the same Authenticator as the JSON routes: constant time, never logged.
func (d *dash) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		d.renderGateError(w, r, http.StatusBadRequest, "The form could not be read; try again.")
		return
	}
	gc, err := r.Cookie(gateCookie)
	if err != nil || !tokenMatch(gc.Value, r.PostFormValue(csrfField)) {
		d.renderGateError(w, r, http.StatusForbidden, "The sign-in form expired or came from another site; try again.")
		return
	}
	if r.PostFormValue("password") != "" {
		d.passwordSignIn(w, r)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if app.IsInvite(token) {
		d.inviteSignIn(w, r, token)
		return
	}
	if token == "" {
		d.renderGateError(w, r, http.StatusBadRequest, "Enter the operator token.")
		return
	}
	probe, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "/", nil)
	probe.Header.Set("Authorization", "Bearer "+token)
	actor, err := d.bearer.Authenticate(probe)
	if err == nil && actor.Account == "" {
		err = app.Errorf(app.EUNAUTHORIZED, "the credentials name no account")
	}
	if err != nil {
		d.log.Info("dashboard sign-in refused", "client", clientIP(r))
		d.renderGateError(w, r, http.StatusUnauthorized, "That token is not valid. Use the operator token (data/operator.token or MCP_HTTP_TOKEN).")
		return
	}
	// A new id at every sign-in: a cookie planted before cannot become a session.
	d.startSession(w, r, actor, safeNext(r.PostFormValue("next")))
}

// startSession signs the browser in as actor and sends it to next.
func (d *dash) startSession(w http.ResponseWriter, r *http.Request, actor app.Actor, next string) {
	if old, err := r.Cookie(sessionCookie); err == nil {
		d.sessions.end(r.Context(), old.Value)
	}
	id, err := d.sessions.start(r.Context(), actor, r)
	if err != nil {
		d.log.Error("start a browser session", "err", err)
		d.renderGateError(w, r, http.StatusInternalServerError, "Signing in failed; try again.")
		return
	}
	d.setCookie(w, r, sessionCookie, id, int(maxTTL.Seconds()))
	d.setCookie(w, r, gateCookie, "", -1)
	d.log.Info("dashboard sign-in", "actor", actor.Name, "client", clientIP(r))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *dash) renderGateError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p := d.newPage(r, "Sign in", "landing")
	p.Data = gateData{Next: safeNext(r.PostFormValue("next")), Gate: d.gateToken(w, r), Error: msg, MultiUser: d.o.MultiUser, SignupOpen: d.signupOpen(), GitHub: d.oauthOn()}
	d.render(w, r, code, "landing", p)
}

// signOut ends the browser's session (CSRF-checked by requirePage).
func (d *dash) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		d.sessions.end(r.Context(), c.Value)
	}
	d.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
