package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

const testToken = "asb_test_operator_token_0123456789"

// syncBuffer collects log output written from handler goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// apiEnv is the HTTP handler over a real Service on the in-memory fakes.
type apiEnv struct {
	srv     *httptest.Server
	svc     *app.Service
	store   *apptest.MemStore
	sandbox *apptest.FakeSandbox
	logs    *syncBuffer
	// ctx carries the operator, for direct calls on the Service.
	ctx context.Context
}

type envConfig struct {
	options   func(*web.Options)
	sandbox   func(*apptest.FakeSandbox)
	bus       *app.Bus
	noRun     bool // leave the scheduler off, so runs stay queued
	waitLimit time.Duration
	// secrets and github, when set, let the Service store GitHub tokens
	// and MCP servers.
	secrets app.Secrets
	github  app.GitHubProber
	// service adjusts the Service's ports and configuration.
	service func(*app.Deps, *app.Config)
}

func newAPI(t *testing.T, c envConfig) *apiEnv {
	t.Helper()
	e := &apiEnv{store: apptest.NewMemStore(), sandbox: apptest.NewFakeSandbox(), logs: &syncBuffer{}}
	if c.sandbox != nil {
		c.sandbox(e.sandbox)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	deps := app.Deps{Store: e.store, Sandbox: e.sandbox, Forge: &apptest.FakeForge{}, Bus: c.bus, Logger: log,
		Secrets: c.secrets, GitHub: c.github}
	cfg := app.Config{PollInterval: time.Millisecond}
	if c.service != nil {
		c.service(&deps, &cfg)
	}
	e.svc = app.NewService(deps, cfg)
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	e.ctx = ctx
	done := make(chan error, 1)
	if c.noRun {
		done <- nil
	} else {
		go func() { done <- e.svc.Run(ctx) }()
	}
	wait := c.waitLimit
	if wait == 0 {
		wait = 20 * time.Second
	}
	o := web.Options{Service: e.svc, Logger: log, OperatorToken: testToken, WaitTimeout: wait, MutationsPerMinute: 10000,
		Heartbeat: 20 * time.Millisecond}
	if c.options != nil {
		c.options(&o)
	}
	e.srv = httptest.NewServer(web.New(o))
	t.Cleanup(func() {
		e.srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return e
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, r.body)
	}
}

// do sends a request with the operator token; body is JSON-encoded unless
// it is a string, which is sent as is.
func (e *apiEnv) do(t *testing.T, method, path string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (e *apiEnv) mustOK(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// errorOf checks an error response: the status, a JSON {"error"} body,
// and returns the message.
func errorOf(t *testing.T, r response, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("error Content-Type %q", r.header.Get("Content-Type"))
	}
	var body map[string]any
	r.json(t, &body)
	msg, ok := body["error"].(string)
	if !ok || msg == "" || len(body) != 1 {
		t.Fatalf("error body = %s", r.body)
	}
	return msg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Guards against a hung test; not a performance assertion.
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *apiEnv) view(t *testing.T, id app.SessionID) app.SessionView {
	t.Helper()
	v, err := e.svc.Session(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *apiEnv) waitState(t *testing.T, id app.SessionID, state string) app.SessionView {
	t.Helper()
	var v app.SessionView
	waitFor(t, fmt.Sprintf("session %s to be %s", id, state), func() bool {
		v = e.view(t, id)
		return v.State() == state
	})
	return v
}

func (e *apiEnv) allEvents(t *testing.T, id app.SessionID) []app.Event {
	t.Helper()
	evs, err := e.svc.Events(e.ctx, id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

type runReply struct {
	Session   app.Session `json:"session"`
	Run       app.Run     `json:"run"`
	Position  int         `json:"position"`
	Continued bool        `json:"continued"`
	Outcome   string      `json:"outcome"`
	State     string      `json:"state"`
	Question  string      `json:"question"`
	Waited    bool        `json:"waited"`
	Reached   bool        `json:"reached"`
}

func (e *apiEnv) delegate(t *testing.T, body map[string]any) runReply {
	t.Helper()
	r := e.do(t, "POST", "/delegate.json", body)
	e.mustOK(t, r)
	var out runReply
	r.json(t, &out)
	return out
}

// questionScript asks a question on the first turn and finishes on the next.
func questionScript(question string) func(*apptest.FakeSandbox) {
	return func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			if turn.ResumeAgentSession == "" {
				return apptest.Script{Records: []string{`{"type":"assistant","message":{"content":[{"type":"text","text":"looking"}]}}`},
					AgentSessionID: "cc-1", Question: question}
			}
			return apptest.Script{Records: []string{`{"type":"result","subtype":"success"}`}, Result: &app.AgentResult{Summary: "ok"}}
		}
	}
}

func TestAuth(t *testing.T) {
	e := newAPI(t, envConfig{})
	get := func(path string, auth string) response {
		return e.do(t, "GET", path, nil, "Authorization", auth)
	}
	for _, tc := range []struct {
		name, auth string
	}{
		{"missing", ""},
		{"wrong", "Bearer not-the-token-at-all"},
		{"prefix of the token", "Bearer " + testToken[:10]},
		{"basic scheme", "Basic " + testToken},
	} {
		r := get("/fleet.json", tc.auth)
		errorOf(t, r, http.StatusUnauthorized)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q", tc.name, r.header.Get("WWW-Authenticate"))
		}
	}
	// A token in the URL is refused even when it is the right one.
	for _, p := range []string{"token", "access_token"} {
		r := get("/fleet.json?"+p+"="+testToken, "Bearer "+testToken)
		if msg := errorOf(t, r, http.StatusBadRequest); !strings.Contains(msg, "Authorization: Bearer") || strings.Contains(msg, testToken) {
			t.Errorf("?%s: %q", p, msg)
		}
		r = e.do(t, "POST", "/teardown.json?"+p+"=x", map[string]string{"session": "ses_abc"})
		errorOf(t, r, http.StatusBadRequest)
	}
	if r := get("/fleet.json", "bearer "+testToken); r.status != 200 {
		t.Fatalf("lower-case scheme: %d %s", r.status, r.body)
	}
	// Every JSON route and the stream sit behind authentication.
	for _, route := range []string{"GET /fleet.json", "GET /monitor.json", "GET /watch.json", "GET /watch.sse", "GET /files.json",
		"GET /files/download", "POST /delegate.json", "POST /followup.json", "POST /resume.json", "POST /ask.json",
		"POST /cancel.json", "POST /teardown.json", "POST /pin.json"} {
		method, path, _ := strings.Cut(route, " ")
		r := e.do(t, method, path, "{}", "Authorization", "")
		errorOf(t, r, http.StatusUnauthorized)
	}
	// Health stays open.
	if r := get("/healthz", ""); r.status != 200 {
		t.Fatalf("healthz = %d", r.status)
	}
	logs := e.logs.String()
	if strings.Contains(logs, testToken) || strings.Contains(logs, testToken[:10]) || strings.Contains(logs, "access_token=") {
		t.Fatalf("logs carry a credential or a query string:\n%s", logs)
	}
}

func TestNoCredentialConfiguredRefusesEveryone(t *testing.T) {
	e := newAPI(t, envConfig{options: func(o *web.Options) { o.OperatorToken = "" }})
	errorOf(t, e.do(t, "GET", "/fleet.json", nil), http.StatusUnauthorized)
	errorOf(t, e.do(t, "GET", "/fleet.json", nil, "Authorization", "Bearer "), http.StatusUnauthorized)
}

func TestCustomAuthenticatorPlugsIn(t *testing.T) {
	alice := app.Actor{Account: "acc_alice", Name: "alice"}
	e := newAPI(t, envConfig{options: func(o *web.Options) {
		o.Authenticator = web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
			if tok, _ := web.BearerToken(r); tok == "alice-key" {
				return alice, nil
			}
			return web.OperatorTokenAuthenticator(testToken).Authenticate(r)
		})
	}})
	d := e.delegate(t, map[string]any{"task": "operator's task"})
	if d.Session.Owner != app.OperatorAccount {
		t.Fatalf("owner = %q", d.Session.Owner)
	}
	r := e.do(t, "GET", "/watch.json?session="+string(d.Session.ID), nil, "Authorization", "Bearer alice-key")
	errorOf(t, r, http.StatusNotFound) // others' sessions do not exist for alice
	r = e.do(t, "POST", "/delegate.json", map[string]any{"task": "alice's task"}, "Authorization", "Bearer alice-key")
	e.mustOK(t, r)
	var mine runReply
	r.json(t, &mine)
	if mine.Session.Owner != "acc_alice" {
		t.Fatalf("owner = %q", mine.Session.Owner)
	}
}

func TestDelegateFleetWatchAndSessionRoutes(t *testing.T) {
	hold := make(chan struct{})
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			if strings.HasPrefix(turn.Prompt, "add a cache") {
				return apptest.Script{Records: []string{`{"type":"assistant"}`}, Hold: hold}
			}
			return apptest.Script{Records: []string{`{"type":"assistant"}`}}
		}
	}})
	d := e.delegate(t, map[string]any{"task": "add a cache\nmore words", "repo": "acme/api", "ref": "main", "allowDomains": []string{"pypi.org"}})
	if !strings.HasPrefix(string(d.Session.ID), "ses_") || d.Run.Kind != app.RunTask || d.Position != 0 || d.Waited || d.Reached ||
		d.Session.Title != "add a cache" || len(d.Session.Sources) != 1 || d.Session.Sources[0].Dir != "api" || d.Session.Sources[0].Ref != "main" ||
		d.Session.Origin.Kind != app.OriginAPI || d.Session.Origin.Login != "operator" || d.Session.AllowDomains[0] != "pypi.org" || d.State == "" {
		t.Fatalf("delegate = %+v", d)
	}
	id := d.Session.ID
	e.waitState(t, id, "running")

	// A follow-up queues behind the running run, with its position.
	r := e.do(t, "POST", "/followup.json", map[string]string{"session": string(id), "message": "then add tests"})
	e.mustOK(t, r)
	var f runReply
	r.json(t, &f)
	if f.Run.State != app.StateQueued || f.Position != 1 || !f.Continued || f.Run.Kind != app.RunFollowUp || f.State != "running" {
		t.Fatalf("followup = %+v", f)
	}

	// A second session, idle, to see the fleet order: running first.
	other := e.delegate(t, map[string]any{"task": "second", "repos": []map[string]string{{"repo": "acme/web", "dir": "site"}, {"repo": "acme/api"}}})
	if len(other.Session.Sources) != 2 || other.Session.Sources[0].Dir != "site" {
		t.Fatalf("multi-repo = %+v", other.Session.Sources)
	}
	e.waitState(t, other.Session.ID, "done")
	for _, path := range []string{"/fleet.json", "/monitor.json"} {
		r = e.do(t, "GET", path, nil)
		e.mustOK(t, r)
		var fleet struct {
			Sessions []struct {
				Session app.Session `json:"session"`
				State   string      `json:"state"`
				Queued  int         `json:"queued"`
				Runs    []app.Run   `json:"runs"`
			} `json:"sessions"`
		}
		r.json(t, &fleet)
		if len(fleet.Sessions) != 2 {
			t.Fatalf("%s: %s", path, r.body)
		}
		if s := fleet.Sessions[0]; s.Session.ID != id || s.State != "running" || s.Queued != 1 || len(s.Runs) != 2 {
			t.Fatalf("%s[0] = %+v", path, s)
		}
	}

	r = e.do(t, "GET", "/watch.json?session="+string(id), nil)
	e.mustOK(t, r)
	var w struct {
		Session     app.Session `json:"session"`
		State       string      `json:"state"`
		Events      []app.Event `json:"events"`
		LastEventID int64       `json:"last_event_id"`
	}
	r.json(t, &w)
	all := e.allEvents(t, id)
	if w.Session.ID != id || w.State != "running" || len(w.Events) != len(all) || w.LastEventID != all[len(all)-1].ID ||
		w.Events[0].Type != app.EventSessionCreated {
		t.Fatalf("watch = %+v (all %d)", w, len(all))
	}
	// ?events= keeps the most recent; ?after= pages forward.
	r = e.do(t, "GET", "/watch.json?events=2&session="+string(id), nil)
	r.json(t, &w)
	if len(w.Events) != 2 || w.Events[1].ID != all[len(all)-1].ID || w.Events[0].ID != all[len(all)-2].ID {
		t.Fatalf("watch tail = %+v", w.Events)
	}
	r = e.do(t, "GET", fmt.Sprintf("/watch.json?events=1&after=%d&session=%s", all[0].ID, id), nil)
	r.json(t, &w)
	if len(w.Events) != 1 || w.Events[0].ID != all[1].ID || w.LastEventID != all[1].ID {
		t.Fatalf("watch after = %+v", w.Events)
	}

	// Pin and unpin.
	for _, pinned := range []bool{true, false} {
		r = e.do(t, "POST", "/pin.json", map[string]any{"session": id, "pinned": pinned})
		e.mustOK(t, r)
		var p struct {
			Session app.Session `json:"session"`
		}
		r.json(t, &p)
		if p.Session.Pinned != pinned || e.view(t, id).Session.Pinned != pinned {
			t.Fatalf("pin %v = %s", pinned, r.body)
		}
	}

	// Cancel stops the running run; the follow-up then runs.
	r = e.do(t, "POST", "/cancel.json", map[string]string{"session": string(id)})
	e.mustOK(t, r)
	var c struct {
		Cancelled []app.Run `json:"cancelled"`
	}
	r.json(t, &c)
	if len(c.Cancelled) != 1 || c.Cancelled[0].ID != d.Run.ID || c.Cancelled[0].State != app.StateCancelled {
		t.Fatalf("cancel = %s", r.body)
	}
	close(hold)
	waitFor(t, "the follow-up to finish", func() bool {
		for _, rv := range e.view(t, id).Runs {
			if rv.ID == f.Run.ID {
				return rv.State == app.StateDone
			}
		}
		return false
	})

	// Teardown closes the session (twice is fine); it leaves the fleet.
	for range 2 {
		r = e.do(t, "POST", "/teardown.json", map[string]string{"session": string(id)})
		e.mustOK(t, r)
		var td struct {
			Session app.Session `json:"session"`
		}
		r.json(t, &td)
		if td.Session.State != app.SessionClosed {
			t.Fatalf("teardown = %s", r.body)
		}
	}
	r = e.do(t, "GET", "/fleet.json", nil)
	if strings.Contains(r.body, string(id)) {
		t.Fatalf("closed session still in the fleet: %s", r.body)
	}
	r = e.do(t, "GET", "/fleet.json?all=true", nil)
	if !strings.Contains(r.body, string(id)) {
		t.Fatalf("closed session missing from ?all=true: %s", r.body)
	}
}

func TestDelegateWaitReturnsAtTheQuestion(t *testing.T) {
	e := newAPI(t, envConfig{sandbox: questionScript("Postgres or SQLite?")})
	d := e.delegate(t, map[string]any{"task": "add a store", "repo": "acme/api", "wait": true})
	if !d.Waited || !d.Reached || d.State != "waiting" || d.Question != "Postgres or SQLite?" || d.Run.State != app.StateWaiting {
		t.Fatalf("delegate wait = %+v", d)
	}
	// The answer resumes the run; waiting again reaches its end.
	r := e.do(t, "POST", "/resume.json", map[string]any{"session": d.Session.ID, "message": "SQLite", "wait": true})
	e.mustOK(t, r)
	var res runReply
	r.json(t, &res)
	if res.Outcome != "answered" || !res.Reached || res.State != "done" || res.Question != "" {
		t.Fatalf("resume wait = %+v", res)
	}
}

func TestDelegateWaitTimesOutWithoutABoundary(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	e := newAPI(t, envConfig{waitLimit: 50 * time.Millisecond, sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script { return apptest.Script{Records: []string{`{}`}, Hold: hold} }
	}})
	d := e.delegate(t, map[string]any{"task": "long job", "wait": true})
	if !d.Waited || d.Reached || d.Question != "" {
		t.Fatalf("delegate wait = %+v", d)
	}
}

func TestResumeWithOneStepSecretNeverEchoes(t *testing.T) {
	const secret = "hunter2-one-step-secret-value"
	var mu sync.Mutex
	var turns []app.Turn
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		q := questionScript("What is the DB password?")
		q(sb)
		script := sb.ScriptFor
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			mu.Lock()
			turns = append(turns, turn)
			mu.Unlock()
			return script(turn)
		}
	}})
	d := e.delegate(t, map[string]any{"task": "connect the DB", "wait": true})
	id := d.Session.ID
	if d.State != "waiting" {
		t.Fatalf("not waiting: %+v", d)
	}
	var bodies []string
	// Refused secrets: bad names, and their value is not in the error.
	for _, name := range []string{"PATH", "LD_PRELOAD", "lower", "CLAUDE_CONFIG_DIR"} {
		r := e.do(t, "POST", "/resume.json", map[string]any{"session": id, "message": "here", "secrets": map[string]string{name: secret}})
		errorOf(t, r, http.StatusBadRequest)
		bodies = append(bodies, r.body)
	}
	r := e.do(t, "POST", "/resume.json", map[string]any{"session": id, "message": "here", "secrets": map[string]any{"DB_PASSWORD": 42}})
	errorOf(t, r, http.StatusBadRequest)
	r = e.do(t, "POST", "/resume.json", `{"session":"`+string(id)+`","message":"here","secrets":{"DB_PASSWORD":"`+secret+`"},"bogus":"`+secret+`"}`)
	errorOf(t, r, http.StatusBadRequest)
	bodies = append(bodies, r.body)
	if v := e.view(t, id); v.State() != "waiting" {
		t.Fatalf("a refused answer changed the run: %s", v.State())
	}

	// The good answer carries the secret to the next step only.
	r = e.do(t, "POST", "/resume.json", map[string]any{"session": id, "message": "it is in the vault", "secrets": map[string]string{"DB_PASSWORD": secret}, "wait": true})
	e.mustOK(t, r)
	bodies = append(bodies, r.body)
	var res runReply
	r.json(t, &res)
	if res.Outcome != "answered" || res.State != "done" {
		t.Fatalf("resume = %+v", res)
	}
	mu.Lock()
	got := turns[len(turns)-1].Secrets["DB_PASSWORD"]
	mu.Unlock()
	if got != secret {
		t.Fatalf("the secret did not reach the step: %q", got)
	}
	// With no question pending, secrets are refused (they would otherwise
	// ride along with a follow-up), again without the value.
	r = e.do(t, "POST", "/resume.json", map[string]any{"session": id, "message": "more", "secrets": map[string]string{"DB_PASSWORD": secret}})
	errorOf(t, r, http.StatusConflict)
	bodies = append(bodies, r.body)

	for _, path := range []string{"/watch.json?session=" + string(id), "/fleet.json?all=1"} {
		bodies = append(bodies, e.do(t, "GET", path, nil).body)
	}
	bodies = append(bodies, readSSE(t, e, id, 0, func(evs []sseEvent) bool { return len(evs) >= len(e.allEvents(t, id)) }).raw)
	for _, b := range append(bodies, e.logs.String()) {
		if strings.Contains(b, secret) || strings.Contains(b, "hunter2") {
			t.Fatalf("the secret leaked:\n%s", b)
		}
	}
}

func TestResumeQueuesAFollowUpWithoutAQuestion(t *testing.T) {
	e := newAPI(t, envConfig{})
	d := e.delegate(t, map[string]any{"task": "one", "wait": true})
	if d.State != "done" || !d.Reached {
		t.Fatalf("delegate = %+v", d)
	}
	r := e.do(t, "POST", "/resume.json", map[string]any{"session": d.Session.ID, "message": "two"})
	e.mustOK(t, r)
	var res runReply
	r.json(t, &res)
	if res.Outcome != "queued" || res.Run.Kind != app.RunFollowUp || res.Run.Prompt != "two" || !res.Continued {
		t.Fatalf("resume = %+v", res)
	}
}

func TestAskAndFiles(t *testing.T) {
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.Files = map[string]string{
			"/workspace/api/main.go":    "package main\n",
			"/workspace/api/README.md":  "# api\n",
			"/workspace/api/big.bin":    strings.Repeat("x", 2048),
			"/workspace/räksmörgås.txt": "smörgås",
		}
	}, options: func(o *web.Options) { o.MaxDownloadBytes = 1024 }})
	d := e.delegate(t, map[string]any{"task": "build it", "repo": "acme/api", "wait": true})
	id := string(d.Session.ID)

	r := e.do(t, "POST", "/ask.json", map[string]any{"session": id, "question": "what changed?"})
	e.mustOK(t, r)
	var ans struct {
		Session  string `json:"session"`
		Answer   string `json:"answer"`
		TimedOut bool   `json:"timed_out"`
	}
	r.json(t, &ans)
	if ans.Session != id || ans.Answer != "you asked: what changed?" || ans.TimedOut {
		t.Fatalf("ask = %s", r.body)
	}
	r = e.do(t, "POST", "/ask.json", map[string]any{"session": id, "question": "and now?", "newThread": true})
	e.mustOK(t, r)

	r = e.do(t, "GET", "/files.json?session="+id+"&path=api", nil)
	e.mustOK(t, r)
	var files struct {
		Path    string         `json:"path"`
		Entries []app.FileInfo `json:"entries"`
	}
	r.json(t, &files)
	if files.Path != "/workspace/api" || len(files.Entries) != 3 || files.Entries[0].Name != "README.md" {
		t.Fatalf("files = %s", r.body)
	}
	r = e.do(t, "GET", "/files.json?session="+id, nil)
	r.json(t, &files)
	if files.Path != "/workspace" || len(files.Entries) != 2 {
		t.Fatalf("root files = %s", r.body)
	}

	r = e.do(t, "GET", "/files/download?session="+id+"&path=/workspace/api/main.go", nil)
	e.mustOK(t, r)
	if r.body != "package main\n" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		r.header.Get("Content-Disposition") != `attachment; filename=main.go` ||
		r.header.Get("Content-Type") != "application/octet-stream" || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("download = %d %v %q", r.status, r.header, r.body)
	}
	r = e.do(t, "GET", "/files/download?session="+id+"&path="+url.QueryEscape("räksmörgås.txt"), nil)
	if r.body != "smörgås" || !strings.Contains(r.header.Get("Content-Disposition"), "filename*=utf-8''r%C3%A4ksm%C3%B6rg%C3%A5s.txt") {
		t.Fatalf("non-ASCII download = %v %q", r.header.Get("Content-Disposition"), r.body)
	}
	errorOf(t, e.do(t, "GET", "/files/download?session="+id+"&path=api/big.bin", nil), http.StatusRequestEntityTooLarge)
	errorOf(t, e.do(t, "GET", "/files/download?session="+id+"&path=api/nope.go", nil), http.StatusNotFound)
}

func TestRateLimitPerCaller(t *testing.T) {
	e := newAPI(t, envConfig{options: func(o *web.Options) {
		o.MutationsPerMinute = 3
		o.Authenticator = web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
			if tok, _ := web.BearerToken(r); tok == "bob-key" {
				return app.Actor{Account: "acc_bob", Name: "bob"}, nil
			}
			return web.OperatorTokenAuthenticator(testToken).Authenticate(r)
		})
	}})
	for i := range 3 {
		if r := e.do(t, "POST", "/teardown.json", map[string]string{"session": "ses_nothere"}); r.status != http.StatusNotFound {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	r := e.do(t, "POST", "/delegate.json", map[string]string{"task": "one more"})
	if msg := errorOf(t, r, http.StatusTooManyRequests); !strings.Contains(msg, "3") || r.header.Get("Retry-After") == "" {
		t.Fatalf("429 = %q, Retry-After %q", msg, r.header.Get("Retry-After"))
	}
	// Reads are not limited, and another caller has a budget of its own.
	e.mustOK(t, e.do(t, "GET", "/fleet.json", nil))
	r = e.do(t, "POST", "/delegate.json", map[string]string{"task": "bob's"}, "Authorization", "Bearer bob-key")
	e.mustOK(t, r)
	if views, _ := e.svc.Fleet(e.ctx, app.FleetFilter{}); len(views) != 1 {
		t.Fatalf("the limited request ran: %d sessions", len(views))
	}
}

// snapshot is everything a request could change.
func (e *apiEnv) snapshot(t *testing.T) string {
	t.Helper()
	views, err := e.svc.Fleet(e.ctx, app.FleetFilter{IncludeClosed: true})
	if err != nil {
		t.Fatal(err)
	}
	var evs []app.Event
	for _, v := range views {
		evs = append(evs, e.allEvents(t, v.Session.ID)...)
	}
	audit, err := e.svc.Audit(e.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{views, evs, audit, len(e.sandbox.Launches()), len(e.sandbox.Removed()), len(e.sandbox.Killed())})
	return string(b)
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	e := newAPI(t, envConfig{sandbox: questionScript("which?")})
	d := e.delegate(t, map[string]any{"task": "a task", "repo": "acme/api", "wait": true})
	id := string(d.Session.ID)
	if d.State != "waiting" {
		t.Fatalf("setup: %+v", d)
	}
	before := e.snapshot(t)
	big := strings.Repeat("x", 65<<10)
	huge := `{"task":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		mention            string
	}{
		{"unknown session", "GET", "/watch.json?session=ses_unknown", nil, nil, 404, "not found"},
		{"unknown session stream", "GET", "/watch.sse?session=ses_unknown", nil, nil, 404, "not found"},
		{"unknown session teardown", "POST", "/teardown.json", map[string]string{"session": "ses_unknown"}, nil, 404, ""},
		{"unknown session resume", "POST", "/resume.json", map[string]string{"session": "ses_unknown", "message": "x"}, nil, 404, ""},
		{"missing session", "GET", "/watch.json", nil, nil, 400, "session is required"},
		{"path in session id", "GET", "/watch.json?session=" + url.QueryEscape("../../etc"), nil, nil, 400, "session id"},
		{"option as session id", "POST", "/teardown.json", map[string]string{"session": "-rf"}, nil, 400, "session id"},
		{"traversal in session id", "POST", "/cancel.json", map[string]string{"session": "ses_../x"}, nil, 400, "session id"},
		{"upper-case session id", "POST", "/pin.json", map[string]any{"session": "ses_ABC", "pinned": true}, nil, 400, "session id"},
		{"files outside workspace", "GET", "/files.json?session=" + id + "&path=" + url.QueryEscape("../../etc"), nil, nil, 400, "outside /workspace"},
		{"download absolute escape", "GET", "/files/download?session=" + id + "&path=/etc/passwd", nil, nil, 400, "outside /workspace"},
		{"download dotdot escape", "GET", "/files/download?session=" + id + "&path=" + url.QueryEscape("/workspace/../root/.ssh/id_rsa"), nil, nil, 400, "outside /workspace"},
		{"download asb state", "GET", "/files/download?session=" + id + "&path=.agent.env", nil, nil, 400, "state"},
		{"secret PATH", "POST", "/resume.json", map[string]any{"session": id, "message": "x", "secrets": map[string]string{"PATH": "/evil"}}, nil, 400, "PATH"},
		{"secret LD_PRELOAD", "POST", "/resume.json", map[string]any{"session": id, "message": "x", "secrets": map[string]string{"LD_PRELOAD": "/evil.so"}}, nil, 400, "LD_PRELOAD"},
		{"oversized task", "POST", "/delegate.json", map[string]string{"task": big}, nil, 413, "task"},
		{"oversized body", "POST", "/delegate.json", huge, nil, 413, "larger than"},
		{"oversized answer", "POST", "/resume.json", map[string]string{"session": id, "message": big}, nil, 413, ""},
		{"unknown field", "POST", "/delegate.json", map[string]any{"task": "x", "sauce": "hot"}, nil, 400, `unknown field "sauce"`},
		{"unknown nested field", "POST", "/delegate.json", map[string]any{"task": "x", "repos": []map[string]string{{"repo": "a/b", "branch": "x"}}}, nil, 400, `"branch"`},
		{"wrong type", "POST", "/delegate.json", map[string]any{"task": 7}, nil, 400, `"task" must be a string`},
		{"text/plain", "POST", "/delegate.json", `{"task":"x"}`, []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"form", "POST", "/delegate.json", `task=x`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"no content type", "POST", "/delegate.json", `{"task":"x"}`, []string{"Content-Type", ""}, 415, "application/json"},
		{"not JSON", "POST", "/delegate.json", `{"task":`, nil, 400, "not valid JSON"},
		{"trailing data", "POST", "/delegate.json", `{"task":"x"} {"task":"y"}`, nil, 400, "after"},
		{"empty body", "POST", "/delegate.json", ``, nil, 400, "empty"},
		{"array body", "POST", "/delegate.json", `[]`, nil, 400, "object"},
		{"empty task", "POST", "/delegate.json", map[string]string{"task": "  "}, nil, 400, "task is empty"},
		{"bad repo", "POST", "/delegate.json", map[string]string{"task": "x", "repo": "not a repo"}, nil, 400, "owner/name"},
		{"option as ref", "POST", "/delegate.json", map[string]string{"task": "x", "repo": "a/b", "ref": "--upload-pack=evil"}, nil, 400, "ref"},
		{"ref without repo", "POST", "/delegate.json", map[string]string{"task": "x", "ref": "main"}, nil, 400, "ref needs repo"},
		{"repo and repos", "POST", "/delegate.json", map[string]any{"task": "x", "repo": "a/b", "repos": []map[string]string{{"repo": "c/d"}}}, nil, 400, "not both"},
		{"dir escape", "POST", "/delegate.json", map[string]any{"task": "x", "repos": []map[string]string{{"repo": "a/b", "dir": "../etc"}}}, nil, 400, "folder"},
		{"bad domain", "POST", "/delegate.json", map[string]any{"task": "x", "allowDomains": []string{"evil domain"}}, nil, 400, "domain"},
		{"pin without pinned", "POST", "/pin.json", map[string]string{"session": id}, nil, 400, "pinned is required"},
		{"pin with a string", "POST", "/pin.json", map[string]string{"session": id, "pinned": "yes"}, nil, 400, "true or false"},
		{"bad Last-Event-ID", "GET", "/watch.sse?session=" + id, nil, []string{"Last-Event-ID", "abc"}, 400, "Last-Event-ID"},
		{"negative after", "GET", "/watch.sse?session=" + id + "&after=-1", nil, nil, 400, "after"},
		{"bad events count", "GET", "/watch.json?session=" + id + "&events=99999", nil, nil, 400, "events"},
		{"bad fleet flag", "GET", "/fleet.json?all=maybe", nil, nil, 400, "all"},
		{"ask empty", "POST", "/ask.json", map[string]string{"session": id, "question": ""}, nil, 400, "question is empty"},
		{"followup empty", "POST", "/followup.json", map[string]string{"session": id}, nil, 400, "message is empty"},
		{"GET on a POST route", "GET", "/delegate.json", nil, nil, 405, "method"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.method, tc.path, tc.body, tc.headers...)
			msg := errorOf(t, r, tc.status)
			if !strings.Contains(msg, tc.mention) {
				t.Errorf("error %q does not mention %q", msg, tc.mention)
			}
			if len(msg) > 400 {
				t.Errorf("error message is %d bytes long", len(msg))
			}
			if after := e.snapshot(t); after != before {
				before = after // so the next case is judged on its own
				t.Fatalf("the refused request changed state")
			}
		})
	}
}

func TestUnknownRouteStillJSON404(t *testing.T) {
	e := newAPI(t, envConfig{})
	errorOf(t, e.do(t, "GET", "/nope.json", nil), http.StatusNotFound)
}
