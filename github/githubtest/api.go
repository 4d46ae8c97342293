package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// routeAuth is who may call a route.
type routeAuth int

const (
	authRepo         routeAuth = iota // tokens or anonymous; an App JWT is refused
	authJWT                           // App JWT only
	authInstallation                  // installation token only
	authOpen                          // anything, even nothing
)

type route struct {
	method string
	segs   []string
	auth   routeAuth
	free   bool // not counted against the rate limit
	h      func(*call)
}

// call is one REST request being served; the handler runs under s.mu and
// fills status, header and out.
type call struct {
	s      *Server
	r      *http.Request
	body   []byte
	cred   *cred
	params map[string]string
	status int
	header http.Header
	out    []byte
}

func (c *call) p(name string) string { return c.params[name] }

func (c *call) q(name string) string { return c.r.URL.Query().Get(name) }

func (c *call) json(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.status, c.out = status, b
	c.header.Set("Content-Type", "application/json; charset=utf-8")
}

const docREST = "https://docs.github.com/rest"

func (c *call) fail(status int, msg string) {
	c.json(status, map[string]any{"message": msg, "documentation_url": docREST, "status": strconv.Itoa(status)})
}

func (c *call) notFound() { c.fail(http.StatusNotFound, "Not Found") }

// invalid answers 422 Validation Failed with one error, GitHub-style.
func (c *call) invalid(resource, field, code, msg string) {
	e := map[string]any{"resource": resource, "code": code}
	if field != "" {
		e["field"] = field
	}
	if msg != "" {
		e["message"] = msg
	}
	c.json(http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "errors": []any{e}, "documentation_url": docREST, "status": "422",
	})
}

// decode parses the JSON body into v, answering 400 when it is not JSON.
func (c *call) decode(v any) bool {
	if len(strings.TrimSpace(string(c.body))) == 0 {
		return true
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

// paginate slices total items by per_page (default 30, at most 100) and
// page, setting GitHub's Link header. It returns the bounds to use.
func (c *call) paginate(total, defPer int) (lo, hi int) {
	per, _ := strconv.Atoi(c.q("per_page"))
	if per <= 0 {
		per = defPer
	}
	if per > 100 {
		per = 100
	}
	page, _ := strconv.Atoi(c.q("page"))
	if page < 1 {
		page = 1
	}
	last := (total + per - 1) / per
	if last < 1 {
		last = 1
	}
	link := func(p int, rel string) string {
		q := c.r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		u := c.s.URL + c.r.URL.Path + "?" + q.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u, rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		c.header.Set("Link", strings.Join(links, ", "))
	}
	lo = (page - 1) * per
	if lo > total {
		lo = total
	}
	hi = lo + per
	if hi > total {
		hi = total
	}
	return lo, hi
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// serveAPI serves one REST call under /api/v3.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, body []byte, idx int) {
	sub := strings.TrimPrefix(r.URL.Path, "/api/v3")
	c := &call{s: s, r: r, body: body, header: http.Header{}, status: http.StatusOK}
	func() {
		s.mu.Lock()
		defer s.mu.Unlock() // also when a handler panics
		c.cred = s.authenticate(r)
		s.noteAuthAt(idx, c.cred)
		s.dispatch(c, sub)
	}()

	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	if c.status != http.StatusNotModified && c.status != http.StatusNoContent {
		_, _ = w.Write(c.out)
	}
}

func (s *Server) dispatch(c *call, sub string) {
	h := c.header
	h.Set("X-GitHub-Request-Id", requestID())
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	if c.cred.kind == AuthInvalid {
		setRateHeaders(h, s.bucketFor(&cred{kind: AuthNone}, c.r))
		c.fail(http.StatusUnauthorized, c.cred.msg)
		return
	}
	b := s.bucketFor(c.cred, c.r)
	rt, params := s.match(c.r.Method, sub)
	if rt == nil {
		b.used++
		setRateHeaders(h, b)
		c.notFound()
		return
	}
	c.params = params
	if b.remaining() == 0 && !rt.free {
		setRateHeaders(h, b)
		c.json(http.StatusForbidden, map[string]any{"message": primaryMessage(c.cred, c.r), "documentation_url": docPrimary})
		return
	}
	if c.cred.kind == AuthPersonal {
		h.Set("X-OAuth-Scopes", strings.Join(c.cred.tok.scopes, ", "))
		h.Set("X-Accepted-OAuth-Scopes", "")
	}
	if s.authorized(c, rt) {
		rt.h(c)
	}
	if c.r.Method == http.MethodGet && c.status == http.StatusOK {
		sum := sha256.Sum256(append(append([]byte(nil), c.out...), credKey(c.cred)...))
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if etagMatch(c.r.Header.Get("If-None-Match"), etag) {
			c.status, c.out = http.StatusNotModified, nil
			h.Del("Content-Type")
			setRateHeaders(h, b)
			return
		}
	}
	if !rt.free {
		b.used++
	}
	setRateHeaders(h, b)
}

func (s *Server) authorized(c *call, rt *route) bool {
	switch rt.auth {
	case authJWT:
		if c.cred.kind != AuthApp {
			c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
			return false
		}
	case authInstallation:
		switch c.cred.kind {
		case AuthInstallation:
		case AuthNone:
			c.fail(http.StatusUnauthorized, "Requires authentication")
			return false
		default:
			c.fail(http.StatusForbidden, "You must authenticate with an installation access token in order to use this endpoint.")
			return false
		}
	case authRepo:
		if c.cred.kind == AuthApp {
			c.fail(http.StatusForbidden, "Resource not accessible by integration")
			return false
		}
	}
	return true
}

func credKey(c *cred) string {
	switch c.kind {
	case AuthInstallation:
		return fmt.Sprintf("installation:%d", c.inst.id)
	case AuthPersonal:
		return "user:" + c.user.login
	}
	return string(c.kind)
}

func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// match finds the route for method and path (below /api/v3).
func (s *Server) match(method, p string) (*route, map[string]string) {
	raw := strings.Split(strings.Trim(p, "/"), "/")
	segs := make([]string, len(raw))
	for i, x := range raw {
		u, err := url.PathUnescape(x)
		if err != nil {
			return nil, nil
		}
		segs[i] = u
	}
	for i := range routes {
		rt := &routes[i]
		if rt.method != method || len(rt.segs) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		for j, want := range rt.segs {
			if strings.HasPrefix(want, "{") {
				params[strings.Trim(want, "{}")] = segs[j]
				continue
			}
			if want != segs[j] {
				ok = false
				break
			}
		}
		if ok {
			return rt, params
		}
	}
	return nil, nil
}

var routes []route

func init() {
	add := func(spec string, auth routeAuth, h func(*call)) {
		method, p, _ := strings.Cut(spec, " ")
		routes = append(routes, route{method: method, segs: strings.Split(strings.Trim(p, "/"), "/"), auth: auth, h: h})
	}
	// Literal segments are listed before the wildcards they shadow.
	add("GET /rate_limit", authOpen, (*call).getRateLimit)
	add("GET /app", authJWT, (*call).getApp)
	add("GET /app/installations", authJWT, (*call).listInstallations)
	add("GET /app/installations/{id}", authJWT, (*call).getInstallation)
	add("POST /app/installations/{id}/access_tokens", authJWT, (*call).createAccessToken)
	add("POST /app-manifests/{code}/conversions", authOpen, (*call).convertManifest)
	add("GET /installation/repositories", authInstallation, (*call).listInstallationRepos)
	add("DELETE /installation/token", authInstallation, (*call).revokeInstallationToken)
	add("GET /repos/{owner}/{repo}/installation", authJWT, (*call).getRepoInstallation)

	add("GET /user", authRepo, (*call).getAuthenticatedUser)
	add("GET /user/orgs", authRepo, (*call).listMyOrgs)
	add("GET /user/repos", authRepo, (*call).listMyRepos)
	add("GET /users/{login}", authRepo, (*call).getUser)
	add("GET /users/{login}/orgs", authRepo, (*call).listUserOrgs)
	add("GET /users/{login}/events", authRepo, (*call).listUserEvents)
	add("GET /users/{login}/events/public", authRepo, (*call).listUserEvents)

	add("GET /repos/{owner}/{repo}", authRepo, (*call).getRepo)
	add("GET /repos/{owner}/{repo}/collaborators/{login}/permission", authRepo, (*call).getPermission)
	add("GET /repos/{owner}/{repo}/branches/{branch}", authRepo, (*call).getBranch)

	add("GET /repos/{owner}/{repo}/issues", authRepo, (*call).listIssues)
	add("GET /repos/{owner}/{repo}/issues/comments", authRepo, (*call).listRepoComments)
	add("GET /repos/{owner}/{repo}/issues/comments/{id}", authRepo, (*call).getComment)
	add("PATCH /repos/{owner}/{repo}/issues/comments/{id}", authRepo, (*call).editComment)
	add("DELETE /repos/{owner}/{repo}/issues/comments/{id}", authRepo, (*call).deleteComment)
	add("GET /repos/{owner}/{repo}/issues/comments/{id}/reactions", authRepo, (*call).listCommentReactions)
	add("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", authRepo, (*call).createCommentReaction)
	add("DELETE /repos/{owner}/{repo}/issues/comments/{id}/reactions/{rid}", authRepo, (*call).deleteCommentReaction)
	add("GET /repos/{owner}/{repo}/issues/events", authRepo, (*call).listRepoIssueEvents)
	add("GET /repos/{owner}/{repo}/issues/{number}", authRepo, (*call).getIssue)
	add("PATCH /repos/{owner}/{repo}/issues/{number}", authRepo, (*call).editIssue)
	add("GET /repos/{owner}/{repo}/issues/{number}/comments", authRepo, (*call).listIssueComments)
	add("POST /repos/{owner}/{repo}/issues/{number}/comments", authRepo, (*call).createComment)
	add("GET /repos/{owner}/{repo}/issues/{number}/events", authRepo, (*call).listIssueEvents)
	add("GET /repos/{owner}/{repo}/issues/{number}/labels", authRepo, (*call).listIssueLabels)
	add("POST /repos/{owner}/{repo}/issues/{number}/labels", authRepo, (*call).addIssueLabels)
	add("PUT /repos/{owner}/{repo}/issues/{number}/labels", authRepo, (*call).replaceIssueLabels)
	add("DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}", authRepo, (*call).removeIssueLabel)
	add("GET /repos/{owner}/{repo}/issues/{number}/reactions", authRepo, (*call).listIssueReactions)
	add("POST /repos/{owner}/{repo}/issues/{number}/reactions", authRepo, (*call).createIssueReaction)

	add("GET /repos/{owner}/{repo}/pulls", authRepo, (*call).listPulls)
	add("POST /repos/{owner}/{repo}/pulls", authRepo, (*call).createPull)
	add("GET /repos/{owner}/{repo}/pulls/{number}", authRepo, (*call).getPull)
	add("PATCH /repos/{owner}/{repo}/pulls/{number}", authRepo, (*call).editPull)

	add("POST /repos/{owner}/{repo}/check-runs", authRepo, (*call).createCheckRun)
	add("GET /repos/{owner}/{repo}/check-runs/{id}", authRepo, (*call).getCheckRun)
	add("PATCH /repos/{owner}/{repo}/check-runs/{id}", authRepo, (*call).updateCheckRun)

	for i := range routes {
		if routes[i].segs[0] == "rate_limit" {
			routes[i].free = true
		}
	}
}
