// Package githubtest is a fake GitHub for tests: a REST API served under
// /api/v3/ the way GitHub Enterprise serves it (so go-github's
// WithEnterpriseURLs and ghinstallation's BaseURL point at it), GitHub App
// authentication with real RS256 JWTs and expiring installation tokens,
// personal tokens, ETags and rate limits, fault injection, a record of
// every request, real git over smart HTTP (git http-backend behind a
// credential check) and signed webhook deliveries built from the shapes of
// GitHub's own payloads.
//
// State is seeded and inspected through Server's methods; everything is
// safe for concurrent use. Repository names are "owner/name" and, as on
// GitHub, matched case-insensitively.
//
// A typical test:
//
//	srv := githubtest.New(t, githubtest.Options{})
//	srv.AddOrg("acme", "alice")
//	srv.CreateRepo("acme", "widgets", map[string]string{"main.go": "package main\n"})
//	srv.SetPermission("acme/widgets", "alice", "write")
//	inst := srv.AddInstallation("acme", "acme/widgets")
//	srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Bug"})
//	c := srv.AddComment("acme/widgets", 1, "alice", "/agent fix it")
//
//	atr, _ := ghinstallation.NewAppsTransport(http.DefaultTransport, srv.AppID(), srv.AppPrivateKeyPEM())
//	atr.BaseURL = srv.URL + "/api/v3"
//	itr := ghinstallation.NewFromAppsTransport(atr, inst.ID)
//	gh, _ := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(srv.APIURL(), srv.UploadURL())
//
//	resp, _ := srv.Deliver(ctx, hookURL, secret, "issue_comment", srv.IssueCommentPayload(c.ID, "created"))
//	... srv.Comments("acme/widgets", 1), srv.Reactions(c.ID), srv.Branch("acme/widgets", "main") ...
package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// AppID is the id of the one GitHub App this fake hosts (default 1001).
	AppID int64
	// AppSlug is the App's slug (default "asb-test"); its bot user is
	// "<slug>[bot]".
	AppSlug string
	// AppName is the App's display name (default "asb test").
	AppName string
	// AppKey is the App's RSA key. By default one 2048-bit key is
	// generated per test process and shared by every Server.
	AppKey *rsa.PrivateKey
	// AppPermissions are the permissions every installation grants
	// (default contents, issues, pull_requests and checks "write",
	// metadata "read").
	AppPermissions map[string]string
	// WebhookSecret is what a manifest conversion hands out as the App's
	// webhook secret (default "githubtest-webhook-secret").
	WebhookSecret string
	// TokenTTL is the lifetime of installation tokens (default one hour,
	// as on GitHub). ghinstallation refreshes a token once less than a
	// minute is left, so a TTL under a minute mints a token per request.
	TokenTTL time.Duration
	// RateLimit is the primary rate limit per credential per hour
	// (default 5000). Unauthenticated callers get 60, as on GitHub.
	RateLimit int
	// PollInterval is the X-Poll-Interval of events feeds in seconds
	// (default 60).
	PollInterval int
	// Dir holds the bare repositories (default a tb.TempDir()).
	Dir string
	// Now is the clock for timestamps of created objects (default
	// time.Now). Tokens, JWTs and rate-limit windows use the real clock.
	Now func() time.Time
	// InstallationMaintainerEdits lets installation tokens push to the
	// head branch of a fork pull request that allows maintainer edits
	// when the base repository is in the installation. GitHub's behaviour
	// here is unverified, so it is off by default: only personal tokens
	// of base-repository writers may.
	InstallationMaintainerEdits bool
}

// Server is a running fake GitHub. Its URL is the web and git host; the
// REST API is at APIURL().
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT, without a trailing slash.
	URL string

	tb      testing.TB
	hs      *httptest.Server
	opts    Options
	key     *rsa.PrivateKey
	gitRoot string
	gitHome string
	backend string
	done    chan struct{}
	now     func() time.Time

	mu sync.Mutex
	st state
	// oauthApp serves "Continue with GitHub" (oauth.go).
	oauthApp oauthApp
}

var (
	keyOnce sync.Once
	keyVal  *rsa.PrivateKey
	keyErr  error
)

func sharedKey() (*rsa.PrivateKey, error) {
	keyOnce.Do(func() { keyVal, keyErr = rsa.GenerateKey(rand.Reader, 2048) })
	return keyVal, keyErr
}

// New starts a fake GitHub on 127.0.0.1 and stops it when the test ends.
func New(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.AppID == 0 {
		opts.AppID = 1001
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "asb-test"
	}
	if opts.AppName == "" {
		opts.AppName = "asb test"
	}
	if opts.AppPermissions == nil {
		opts.AppPermissions = map[string]string{
			"contents": "write", "issues": "write", "pull_requests": "write",
			"checks": "write", "metadata": "read",
		}
	}
	if opts.WebhookSecret == "" {
		opts.WebhookSecret = "githubtest-webhook-secret"
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 5000
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 60
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	key := opts.AppKey
	if key == nil {
		var err error
		if key, err = sharedKey(); err != nil {
			tb.Fatalf("githubtest: generate app key: %v", err)
		}
	}
	backend, err := gitHTTPBackend()
	if err != nil {
		tb.Fatalf("githubtest: %v", err)
	}
	s := &Server{
		tb:      tb,
		opts:    opts,
		key:     key,
		gitRoot: opts.Dir + "/repos",
		gitHome: opts.Dir + "/home",
		backend: backend,
		done:    make(chan struct{}),
		now:     opts.Now,
	}
	for _, d := range []string{s.gitRoot, s.gitHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatalf("githubtest: %v", err)
		}
	}
	s.st.init(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("githubtest: listen: %v", err)
	}
	s.hs = httptest.NewUnstartedServer(s)
	s.hs.Listener.Close()
	s.hs.Listener = ln
	s.hs.Start()
	s.URL = s.hs.URL
	s.mu.Lock()
	s.st.bot = s.newUser(opts.AppSlug+"[bot]", "Bot")
	s.st.bot.app = true
	s.mu.Unlock()
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server; requests hanging on a fault are released.
// It is called automatically when the test ends.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// APIURL is the REST base URL, ending in "/api/v3/", for
// github.Client.WithEnterpriseURLs.
func (s *Server) APIURL() string { return s.URL + "/api/v3/" }

// UploadURL is the upload base URL, ending in "/api/uploads/".
func (s *Server) UploadURL() string { return s.URL + "/api/uploads/" }

// Client is an *http.Client for the server without credentials.
func (s *Server) Client() *http.Client { return s.hs.Client() }

func (s *Server) api() string { return s.URL + "/api/v3" }

// ServeHTTP implements http.Handler: faults first, then the REST API,
// git smart HTTP and the App manifest pages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	isGit := gitPath(p) != nil
	var body []byte
	if r.Body != nil && !isGit {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 32<<20))
		r.Body.Close()
	}
	idx := s.startRecord(r, body)
	sw := &statusWriter{ResponseWriter: w}
	defer func() { s.finishRecord(idx, sw.status) }()

	if f := s.takeFault(r); f != nil {
		s.serveFault(sw, r, f, idx)
		return
	}
	switch {
	case p == "/api/v3" || strings.HasPrefix(p, "/api/v3/"):
		s.serveAPI(sw, r, body, idx)
	case isGit:
		s.serveGit(sw, r, idx)
	case strings.HasPrefix(p, "/login/oauth/"):
		s.serveOAuth(sw, r, body)
	case p == "/settings/apps/new" || (strings.HasPrefix(p, "/organizations/") && strings.HasSuffix(p, "/settings/apps/new")):
		s.serveManifestForm(sw, r, body)
	default:
		http.NotFound(sw, r)
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (hijacking
// for dropped-connection faults).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) fatalf(format string, args ...any) {
	s.tb.Helper()
	s.tb.Fatalf("githubtest: "+format, args...)
}

// ts formats a time the way GitHub does: RFC 3339, UTC, whole seconds.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func nodeID(kind string, id int64) string {
	return b64(fmt.Sprintf("0%d:%s%d", len(kind), kind, id))
}
