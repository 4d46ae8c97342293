// Package web is asb's only HTTP composition point: the chi router, its
// middleware (security headers, request logging, panic recovery), health,
// readiness and Prometheus metrics, bearer authentication, the JSON routes
// and the live event stream (SSE), the dashboard (server-rendered pages
// behind a token gate, with a session cookie and CSRF tokens), the
// webhook and /mcp.
package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/asb-dev/asb/app"
)

// Check is one readiness check. Err returns nil when the dependency is
// usable, else an error whose text tells the operator what to do.
type Check struct {
	Name string
	// Required checks make /readyz fail; the others only report.
	Required bool
	Err      func(ctx context.Context) error
}

// Options configure the handler.
type Options struct {
	Service *app.Service
	Logger  *slog.Logger
	// Checks run on every /readyz request, each bounded by CheckTimeout.
	Checks       []Check
	CheckTimeout time.Duration
	// Guidance lines describe what is not configured yet (shown on /readyz).
	Guidance []string
	// Metrics, when set, is exported on /metrics.
	Metrics *Metrics

	// Authenticator identifies callers of the JSON routes and the live
	// stream. When nil, OperatorToken (if set) is accepted as
	// app.OperatorActor, and personal API keys as their accounts
	// (NewBearerAuthenticator); anything else is refused (401).
	Authenticator Authenticator
	OperatorToken string
	// WaitTimeout bounds "wait": true on the routes that queue a run
	// (default 50s, under the 60s many HTTP clients allow).
	WaitTimeout time.Duration
	// MutationsPerMinute caps POST requests per caller (default 60).
	MutationsPerMinute int
	// MaxBodyBytes caps a JSON request body (default 1 MiB; 413 above).
	MaxBodyBytes int64
	// MaxDownloadBytes caps one file download (default 50 MiB).
	MaxDownloadBytes int64
	// Heartbeat is the period of comment lines on /watch.sse (default 15s).
	Heartbeat time.Duration
	// StopStreams, when closed, ends every live stream. Close it when the
	// server starts shutting down (http.Server.RegisterOnShutdown):
	// Shutdown waits for open requests, and streams never end by
	// themselves. Clients reconnect with Last-Event-ID and lose nothing.
	StopStreams <-chan struct{}

	// MCP, when set, serves the Streamable HTTP MCP endpoint at /mcp. It
	// authenticates with its own bearer check, and its GET stream stays
	// open, so no timeout or throttle middleware applies to it.
	MCP http.Handler

	// Webhook, when set, receives GitHub deliveries at POST
	// /webhooks/github. It authenticates by signature, not by token, and
	// bounds its own body.
	Webhook http.Handler

	// PublicURL is the controller's address as people reach it (the
	// account page's IDE configurations; https makes cookies Secure).
	// Empty means the address each request used.
	PublicURL string
	// RepoSuggestions, when set, fills the new-run page's repository list
	// (repos the connected GitHub identities can reach).
	RepoSuggestions func(ctx context.Context) ([]string, error)
	// Boxes, when set, gives the fleet page each box's CPU and memory.
	Boxes func(ctx context.Context) ([]app.Box, error)
	// Setup, when set, is served at /setup and /setup/* behind the
	// dashboard's sign-in (cookie or bearer). Its changes need the page's
	// CSRF token or a same-origin Origin header.
	Setup http.Handler
	// SetupCallback, when set, serves /setup/callback and /setup/installed
	// without the sign-in: GitHub's redirect back is a cross-site
	// navigation that carries no SameSite=Strict cookie, so the handler
	// binds the request to the operator's browser itself.
	SetupCallback http.Handler

	// MultiUser (AUTH_MODE=saas) keeps browser sessions in the database as
	// revocable devices and offers password sign-in, sign-up (when the
	// Service's policy opens it), devices and user administration.
	MultiUser bool
	// GitHubOAuth, in multi-user mode, adds "Continue with GitHub"
	// (/auth/github, callback /auth/github/callback).
	GitHubOAuth GitHubOAuth

	// beforeEvent, set by tests, runs before each event is written to a stream.
	beforeEvent func(app.Event)
}

// New returns asb's HTTP handler.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 3 * time.Second
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID, middleware.ClientIPFromRemoteAddr, recoverer(o.Logger), securityHeaders)
	if o.Metrics != nil {
		r.Use(o.Metrics.instrument)
	}
	r.Use(requestLog(o.Logger))

	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", readyz(o))
	if o.Metrics != nil {
		r.Handle("/metrics", o.Metrics.Handler())
	}
	if o.Webhook != nil {
		r.Post("/webhooks/github", o.Webhook.ServeHTTP)
	}
	if o.MCP != nil {
		r.Handle("/mcp", o.MCP)
	}
	var d *dash
	if o.Service != nil {
		o.apiDefaults()
		// The JSON routes take the dashboard's cookie too; the sign-in form
		// checks tokens with the bearer Authenticator alone.
		bearer := o.Authenticator
		var sessions sessionStore = newBrowserSessions()
		if o.MultiUser {
			sessions = deviceSessions{svc: o.Service}
		}
		o.Authenticator = cookieAuthenticator{next: bearer, sessions: sessions}
		a := &api{svc: o.Service, log: o.Logger, o: o}
		a.mount(r)
		d = &dash{o: o, svc: o.Service, api: a, log: o.Logger, sessions: sessions, bearer: bearer, pages: parsePages()}
		d.mount(r)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		if d != nil && strings.Contains(r.Header.Get("Accept"), "text/html") {
			d.notFound(w, r) // a person in a browser gets a page
			return
		}
		writeError(w, app.Errorf(app.ENOTFOUND, "no such page: %s", r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
	})
	return r
}

type checkResult struct {
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Required bool   `json:"required"`
	Detail   string `json:"detail,omitempty"`
}

type readiness struct {
	Status string        `json:"status"`
	Checks []checkResult `json:"checks"`
	// Unconfigured says, in words, what to set up next.
	Unconfigured []string `json:"unconfigured,omitempty"`
}

func readyz(o Options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out := readiness{Status: "ready", Unconfigured: o.Guidance, Checks: []checkResult{}}
		for _, c := range o.Checks {
			ctx, cancel := context.WithTimeout(r.Context(), o.CheckTimeout)
			err := c.Err(ctx)
			cancel()
			res := checkResult{Name: c.Name, OK: err == nil, Required: c.Required}
			if err != nil {
				res.Detail = err.Error()
				if c.Required {
					out.Status = "not ready"
				}
			}
			out.Checks = append(out.Checks, res)
		}
		code := http.StatusOK
		if out.Status != "ready" {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, out)
	}
}

// StatusCode maps an app error code to its HTTP status, in one place.
func StatusCode(code string) int {
	switch code {
	case "":
		return http.StatusOK
	case app.EINVALID:
		return http.StatusBadRequest
	case app.ENOTFOUND:
		return http.StatusNotFound
	case app.ECONFLICT:
		return http.StatusConflict
	case app.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case app.EFORBIDDEN:
		return http.StatusForbidden
	case app.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case app.ERATELIMIT:
		return http.StatusTooManyRequests
	case app.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// writeError answers with {"error": message}; internal errors say only
// "Internal error." (their detail is logged by the caller).
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, StatusCode(app.ErrorCode(err)), map[string]string{"error": app.ErrorMessage(err)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}
