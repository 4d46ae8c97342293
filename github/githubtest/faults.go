package githubtest

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// FaultKind says how a faulted request fails.
type FaultKind int

// Fault kinds. Each maps to what go-github v62 returns:
//
//	FaultServerError        *github.ErrorResponse with the 5xx status
//	FaultRateLimit          *github.RateLimitError (403, X-RateLimit-Remaining: 0)
//	FaultSecondaryRateLimit *github.AbuseRateLimitError with RetryAfter (403)
//	FaultTooManyRequests    *github.ErrorResponse with status 429 and Retry-After
//	FaultHang               the request's context error (deadline or cancel)
//	FaultDrop               a transport error (connection closed, no response)
const (
	FaultServerError FaultKind = iota + 1
	FaultRateLimit
	FaultSecondaryRateLimit
	FaultTooManyRequests
	FaultHang
	FaultDrop
)

func (k FaultKind) String() string {
	switch k {
	case FaultServerError:
		return "server-error"
	case FaultRateLimit:
		return "rate-limit"
	case FaultSecondaryRateLimit:
		return "secondary-rate-limit"
	case FaultTooManyRequests:
		return "too-many-requests"
	case FaultHang:
		return "hang"
	case FaultDrop:
		return "drop"
	}
	return "none"
}

// Fault makes matching requests fail. Faults are checked in the order
// they were injected, before authentication, and apply to git requests
// too when Path does not exclude them.
type Fault struct {
	Kind FaultKind
	// Method limits the fault to one HTTP method ("" for any).
	Method string
	// Path limits the fault to URL paths matching this path.Match pattern,
	// e.g. "/api/v3/repos/*/*/issues/comments" ("" for any path, git
	// included). A pattern without "*", "?" or "[" also matches as a
	// prefix: "/api/v3/" faults every REST call and no git request.
	Path string
	// Times is how many matching requests fail (0 means 1; negative means
	// every one until ClearFaults).
	Times int
	// Status is the FaultServerError status (default 502).
	Status int
	// RetryAfter is the Retry-After of secondary limits and 429s
	// (default one minute; sent in whole seconds).
	RetryAfter time.Duration
	// Reset is the X-RateLimit-Reset of FaultRateLimit (default one
	// minute from now). go-github refuses further calls on the same client
	// until then, without sending them.
	Reset time.Time
}

type faultState struct {
	f    Fault
	left int
}

// Inject adds a fault.
func (s *Server) Inject(f Fault) {
	if f.Kind == 0 {
		s.fatalf("Inject: fault without a Kind")
	}
	n := f.Times
	if n == 0 {
		n = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults = append(s.st.faults, &faultState{f: f, left: n})
}

// ClearFaults removes every pending fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults = nil
}

func (f *Fault) matches(r *http.Request) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, r.Method) {
		return false
	}
	if f.Path == "" {
		return true
	}
	if ok, _ := path.Match(f.Path, r.URL.Path); ok {
		return true
	}
	return !strings.ContainsAny(f.Path, "*?[") && strings.HasPrefix(r.URL.Path, f.Path)
}

func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, fs := range s.st.faults {
		if fs.left == 0 || !fs.f.matches(r) {
			continue
		}
		if fs.left > 0 {
			fs.left--
		}
		if fs.left == 0 {
			s.st.faults = append(s.st.faults[:i:i], s.st.faults[i+1:]...)
		}
		f := fs.f
		return &f
	}
	return nil
}

const (
	docPrimary   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docSecondary = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, f *Fault, idx int) {
	s.mu.Lock()
	c := s.authenticate(r)
	if q := s.recordAt(idx); q != nil {
		q.Auth, q.Login, q.InstallationID, q.Fault = c.kind, c.login(), c.installationID(), f.Kind
	}
	var b *bucket
	if c.kind != AuthInvalid {
		b = s.bucketFor(c, r)
	}
	s.mu.Unlock()

	h := w.Header()
	h.Set("X-GitHub-Request-Id", requestID())
	retry := f.RetryAfter
	if retry <= 0 {
		retry = time.Minute
	}
	switch f.Kind {
	case FaultServerError:
		st := f.Status
		if st == 0 {
			st = http.StatusBadGateway
		}
		msg := "Server Error"
		if st != http.StatusInternalServerError {
			msg = http.StatusText(st)
		}
		if b != nil && strings.HasPrefix(r.URL.Path, "/api/v3/") {
			setRateHeaders(h, b)
		}
		writeJSON(w, st, map[string]any{"message": msg})
	case FaultRateLimit:
		reset := f.Reset
		if reset.IsZero() {
			reset = time.Now().Add(time.Minute)
		}
		limit := s.opts.RateLimit
		if b != nil {
			limit = b.limit
		}
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("X-RateLimit-Used", strconv.Itoa(limit))
		h.Set("X-RateLimit-Resource", "core")
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message":           primaryMessage(c, r),
			"documentation_url": docPrimary,
		})
	case FaultSecondaryRateLimit, FaultTooManyRequests:
		if b != nil {
			setRateHeaders(h, b)
		}
		h.Set("Retry-After", strconv.Itoa(int((retry+time.Second-1)/time.Second)))
		st := http.StatusForbidden
		if f.Kind == FaultTooManyRequests {
			st = http.StatusTooManyRequests
		}
		writeJSON(w, st, map[string]any{
			"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
				"If you reach out to GitHub Support for help, please include the request ID " + h.Get("X-GitHub-Request-Id") + ".",
			"documentation_url": docSecondary,
		})
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	case FaultDrop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		conn.Close()
	}
}

func primaryMessage(c *cred, r *http.Request) string {
	switch c.kind {
	case AuthInstallation:
		return fmt.Sprintf("API rate limit exceeded for installation ID %d.", c.inst.id)
	case AuthPersonal:
		return fmt.Sprintf("API rate limit exceeded for user ID %d.", c.user.id)
	case AuthApp:
		return "API rate limit exceeded for app."
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return "API rate limit exceeded for " + host + ". (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
}

func requestID() string {
	return strings.ToUpper(randHex(2) + ":" + randHex(2) + ":" + randHex(3) + ":" + randHex(3) + ":" + randHex(4))
}

// Request is one recorded request.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Query  url.Values
	// Header holds the request headers without Authorization.
	Header http.Header
	// Body is the request body (nil for git requests).
	Body []byte
	// Auth is the kind of credential used; Login is the personal token's
	// login, or the App's bot login for App and installation credentials;
	// InstallationID is set for installation tokens.
	Auth           AuthKind
	Login          string
	InstallationID int64
	// Git is set for git smart-HTTP requests.
	Git bool
	// Fault is the injected fault that answered the request, if any.
	Fault FaultKind
	// Status is the response status (0 while in flight or when the
	// connection was dropped).
	Status int
}

func (q Request) String() string {
	s := q.Method + " " + q.Path
	if len(q.Query) > 0 {
		s += "?" + q.Query.Encode()
	}
	return fmt.Sprintf("%s -> %d (%s)", s, q.Status, q.Auth)
}

// Match is a Requests filter: method ("" for any) and a path.Match
// pattern on the path ("" for any), e.g.
// Match("POST", "/api/v3/repos/*/*/issues/*/comments").
func Match(method, pattern string) func(Request) bool {
	return func(q Request) bool {
		if method != "" && !strings.EqualFold(method, q.Method) {
			return false
		}
		if pattern == "" {
			return true
		}
		ok, _ := path.Match(pattern, q.Path)
		return ok
	}
}

// Requests returns the recorded requests, oldest first, that pass filter
// (all of them when filter is nil).
func (s *Server) Requests(filter func(Request) bool) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, q := range s.st.requests {
		if filter == nil || filter(q) {
			q.Header = q.Header.Clone()
			q.Query = cloneValues(q.Query)
			q.Body = append([]byte(nil), q.Body...)
			out = append(out, q)
		}
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.reqBase += len(s.st.requests)
	s.st.requests = nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, x := range v {
		out[k] = append([]string(nil), x...)
	}
	return out
}

func (s *Server) startRecord(r *http.Request, body []byte) int {
	h := r.Header.Clone()
	h.Del("Authorization")
	q := Request{
		Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Header: h, Body: body, Auth: AuthNone, Git: gitPath(r.URL.Path) != nil,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.requests = append(s.st.requests, q)
	return s.st.reqBase + len(s.st.requests) - 1
}

// recordAt returns the record at absolute index idx; callers hold s.mu.
func (s *Server) recordAt(idx int) *Request {
	i := idx - s.st.reqBase
	if i < 0 || i >= len(s.st.requests) {
		return nil
	}
	return &s.st.requests[i]
}

// noteAuthAt stores the caller of the request being served; callers hold s.mu.
func (s *Server) noteAuthAt(idx int, c *cred) {
	if q := s.recordAt(idx); q != nil {
		q.Auth, q.Login, q.InstallationID = c.kind, c.login(), c.installationID()
	}
}

func (s *Server) finishRecord(idx, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.recordAt(idx); q != nil {
		q.Status = status
	}
}
