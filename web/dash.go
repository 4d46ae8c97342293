package web

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"

	"github.com/asb-dev/asb/app"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// dash serves the dashboard: server-rendered pages whose forms work
// without script, and a small static script for live updates.
type dash struct {
	o        Options
	svc      *app.Service
	api      *api
	log      *slog.Logger
	sessions sessionStore
	// bearer judges the token pasted into the sign-in form.
	bearer Authenticator
	pages  map[string]*template.Template
}

// pageNames are the templates under templates/, each rendered inside layout.html.
var pageNames = []string{"landing", "fleet", "session", "files", "teardown", "new", "account", "integrations", "error", "signup", "admin"}

func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t := template.New("layout.html").Funcs(templateFuncs)
		out[name] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

var templateFuncs = template.FuncMap{
	"removeButton": removeButton,
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return humanDuration(time.Since(t))
	},
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
}

// humanDuration prints a duration the way a person reads an uptime.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + "m"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// page is what every template receives.
type page struct {
	Title    string
	Page     string // names the page for the script (body data-page)
	CSRF     string
	SignedIn bool
	Actor    string
	Data     any
}

func (d *dash) newPage(r *http.Request, title, name string) page {
	p := page{Title: title, Page: name}
	if bs, ok := r.Context().Value(browserSessionKey{}).(browserSession); ok {
		p.CSRF, p.SignedIn, p.Actor = bs.csrf, true, bs.actor.Name
	} else if a, ok := app.ActorFrom(r.Context()); ok {
		p.SignedIn, p.Actor = true, a.Name
	}
	return p
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (d *dash) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	t, ok := d.pages[name]
	if !ok {
		d.log.Error("no such template", "name", name)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		d.log.Error("render page", "page", name, "err", err, "request_id", middleware.GetReqID(r.Context()))
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	Status  int
	Message string
}

// fail renders an app error as a page with the right status; internal
// errors show only "Internal error." and are logged.
func (d *dash) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := StatusCode(app.ErrorCode(err))
	if code >= 500 {
		d.log.Error("page failed", "path", r.URL.Path, "err", err, "request_id", middleware.GetReqID(r.Context()))
	}
	p := d.newPage(r, http.StatusText(code), "error")
	p.Data = errorData{Status: code, Message: app.ErrorMessage(err)}
	d.render(w, r, code, "error", p)
}

func (d *dash) notFound(w http.ResponseWriter, r *http.Request) {
	d.fail(w, r, app.Errorf(app.ENOTFOUND, "no such page: %s", clipText(r.URL.Path, 200)))
}

// signInsPerMinute caps sign-in attempts per client address.
const signInsPerMinute = 10

type browserSessionKey struct{}

// requirePage lets a request through with a browser session (and, for a
// change, its CSRF token) or a valid bearer credential. A browser without
// a session is sent to the gate, coming back here after signing in.
func (d *dash) requirePage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !safeMethod(r.Method) {
			r.Body = http.MaxBytesReader(w, r.Body, d.o.MaxBodyBytes)
		}
		if len(r.Header.Values("Authorization")) > 0 {
			// A script: its credentials decide, and it needs no CSRF token.
			actor, err := d.bearer.Authenticate(r)
			if err == nil && actor.Account == "" {
				err = app.Errorf(app.EUNAUTHORIZED, "the credentials name no account")
			}
			if err != nil {
				d.log.Info("unauthenticated page request", "path", r.URL.Path, "client", clientIP(r))
				d.fail(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(app.WithActor(r.Context(), actor)))
			return
		}
		bs, ok := d.sessions.fromRequest(r)
		if !ok {
			d.toGate(w, r)
			return
		}
		if !safeMethod(r.Method) && !d.csrfOK(r, bs) {
			d.log.Info("refused a change without its CSRF token", "path", r.URL.Path, "client", clientIP(r))
			d.fail(w, r, app.Errorf(app.EFORBIDDEN, "this form expired or came from another site (missing or wrong CSRF token); reload the page and try again"))
			return
		}
		ctx := context.WithValue(app.WithActor(r.Context(), bs.actor), browserSessionKey{}, bs)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// csrfOK checks the token of a change: the X-CSRF-Token header (fetch
// calls) or the csrf field of a URL-encoded form.
func (d *dash) csrfOK(r *http.Request, bs browserSession) bool {
	if h := r.Header.Get(csrfHeader); h != "" {
		return tokenMatch(bs.csrf, h)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" && r.ParseForm() == nil && tokenMatch(bs.csrf, r.PostFormValue(csrfField)) {
		return true
	}
	// The setup handler is another package's and cannot know the token:
	// its changes must come from a page of this origin.
	return d.o.Setup != nil && (r.URL.Path == "/setup" || strings.HasPrefix(r.URL.Path, "/setup/")) && sameOrigin(r)
}

// sameOrigin reports whether the browser says the request came from a
// page of this site (the Origin header, which scripts cannot forge).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// toGate sends a browser without a session to the sign-in page. A page
// reached from another site arrives without the SameSite=Strict cookie
// even when the browser is signed in, so that request gets a page that
// reloads itself from this site first, which does carry the cookie.
func (d *dash) toGate(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		if _, err := r.Cookie(sessionCookie); err != nil {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-store")
			// A meta refresh is not script, so the CSP allows it.
			u := template.HTMLEscapeString(safeNext(r.URL.RequestURI()))
			_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=` + u +
				`"><title>asb</title><p><a href="` + u + `">Continue</a></p>`))
			return
		}
	}
	if !safeMethod(r.Method) {
		d.fail(w, r, app.Errorf(app.EUNAUTHORIZED, "sign in first"))
		return
	}
	http.Redirect(w, r, "/?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

func clientIP(r *http.Request) string { return middleware.GetClientIP(r.Context()) }

// mountDashboard registers the pages, the gate and the static assets.
func (d *dash) mount(r chi.Router) {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic("web: embedded static folder: " + err.Error())
	}
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	r.Get("/static/*", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	// Browsers ask for an icon on every page; an empty answer keeps their
	// consoles free of 404s.
	r.Get("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r.Get("/", d.landing)
	if d.o.SetupCallback != nil {
		r.Get("/setup/callback", d.o.SetupCallback.ServeHTTP)
		r.Get("/setup/installed", d.o.SetupCallback.ServeHTTP)
	}
	// Tokens are long and random; the limit keeps a guesser from trying
	// many anyway, and keeps sign-in cheap to serve.
	doorLimit := httprate.LimitBy(signInsPerMinute, time.Minute, func(r *http.Request) (string, error) {
		return "signin:" + clientIP(r), nil
	}, httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
		d.renderGateError(w, r, http.StatusTooManyRequests, "Too many sign-in attempts from this address; wait a minute.")
	}))
	r.With(doorLimit).Post("/signin", d.signIn)
	r.Get("/signup", d.signupPage)
	r.With(doorLimit).Post("/signup", d.signupPost)
	r.With(doorLimit).Get("/auth/github", d.githubStart)
	r.With(doorLimit).Get("/auth/github/callback", d.githubCallback)
	r.Group(func(r chi.Router) {
		r.Use(d.requirePage)
		r.Get("/dashboard", d.fleetPage)
		r.Get("/new", d.newRunPage)
		r.Get("/account", d.accountPage)
		r.Get("/integrations", d.integrationsPage)
		r.Get("/admin/users", d.adminPage)
		r.Get("/s/{id}", d.sessionPage)
		r.Get("/s/{id}/files", d.filesPage)
		r.Get("/s/{id}/view", d.viewFilePage)
		r.Get("/s/{id}/teardown", d.teardownPage)
		if d.o.Setup != nil {
			r.Handle("/setup", d.o.Setup)
			r.Handle("/setup/*", d.o.Setup)
		}
		r.Group(func(r chi.Router) {
			r.Use(httprate.LimitBy(d.o.MutationsPerMinute, time.Minute, actorKey,
				httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
					d.fail(w, r, app.Errorf(app.ERATELIMIT, "too many changes: at most %d a minute; wait a moment", d.o.MutationsPerMinute))
				})))
			r.Post("/signout", d.signOut)
			r.Post("/new", d.newRunPost)
			r.Post("/s/{id}/answer", d.answerPost)
			r.Post("/s/{id}/followup", d.followUpPost)
			r.Post("/s/{id}/ask", d.askPost)
			r.Post("/s/{id}/pin", d.pinPost)
			r.Post("/s/{id}/teardown", d.teardownPost)
			r.Post("/integrations/github", d.addGitHubPost)
			r.Post("/integrations/mcp", d.addMCPPost)
			r.Post("/integrations/remove", d.removePost)
			d.mountAccountChanges(r)
		})
	})
}

// dashOrigin records that a run or answer came from the dashboard, and who.
func dashOrigin(r *http.Request) app.Origin {
	a, _ := app.ActorFrom(r.Context())
	return app.Origin{Kind: app.OriginDashboard, Login: a.Name}
}

// publicURL is the controller's address as people reach it: the
// configured one, else what this request used.
func (d *dash) publicURL(r *http.Request) string {
	if d.o.PublicURL != "" {
		return strings.TrimRight(d.o.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
