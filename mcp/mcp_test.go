package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

var update = flag.Bool("update", false, "rewrite golden files")

type env struct {
	svc   *app.Service
	store *apptest.MemStore
	box   *apptest.FakeSandbox
}

// newEnv runs a real Service over fakes: each task's first turn asks a
// question, the second finishes.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{store: apptest.NewMemStore(), box: apptest.NewFakeSandbox()}
	e.box.ScriptFor = func(tu app.Turn) apptest.Script {
		if tu.ResumeAgentSession == "" {
			return apptest.Script{Records: []string{`{"type":"assistant"}`}, AgentSessionID: "agent-1", Question: "Postgres or SQLite?"}
		}
		return apptest.Script{Records: []string{`{"type":"assistant"}`}, Result: &app.AgentResult{}}
	}
	e.svc = app.NewService(app.Deps{Store: e.store, Sandbox: e.box, Forge: &apptest.FakeForge{}},
		app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	return e
}

func connect(t *testing.T, srv *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, strings.Join(text, "\n"), out
}

func mustOK(t *testing.T, res *sdk.CallToolResult, text string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected tool error: %s", text)
	}
}

func TestToolSchemasGolden(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor}))
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ask", "delegate", "gh_token_add", "monitor", "pool_status", "resume", "status", "teardown", "watch"}
	var got []string
	for _, tool := range list.Tools {
		got = append(got, tool.Name)
		b, err := json.MarshalIndent(tool.InputSchema, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("testdata", "tools", tool.Name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./mcp -update)", err)
		}
		if string(golden) != string(b) {
			t.Errorf("%s input schema changed:\n%s\nwant:\n%s", tool.Name, b, golden)
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tools = %v, want %v", got, want)
	}
	for _, tool := range list.Tools {
		if tool.Name == "delegate" || tool.Name == "resume" || tool.Name == "status" {
			for _, must := range []string{"run:waiting", "resume", "MUST NOT end your turn", "run:running"} {
				if !strings.Contains(tool.Description, must) {
					t.Errorf("%s description lacks %q", tool.Name, must)
				}
			}
		}
	}
}

// loop runs delegate → waiting → resume → done over cs.
func loop(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, text, out := call(t, cs, "delegate", map[string]any{"task": "add a database", "repo": "acme/app"})
	mustOK(t, res, text)
	if !strings.Contains(text, "run:waiting") || !strings.Contains(text, "QUESTION FROM THE SANDBOX:\nPostgres or SQLite?") {
		t.Fatalf("delegate text:\n%s", text)
	}
	sess, _ := out["session"].(string)
	if out["state"] != "waiting" || out["question"] != "Postgres or SQLite?" || !strings.HasPrefix(sess, "ses_") || !strings.Contains(text, sess) {
		t.Fatalf("delegate output: %v", out)
	}
	res, text, out = call(t, cs, "resume", map[string]any{"session": sess, "message": "SQLite"})
	mustOK(t, res, text)
	if !strings.Contains(text, "run:done") || out["state"] != "done" || out["outcome"] != "answered" || !strings.Contains(text, sess) {
		t.Fatalf("resume: %v\n%s", out, text)
	}
	return sess
}

func TestDelegateLoop(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor, WaitTimeout: 20 * time.Second}))
	sess := loop(t, cs)

	res, text, _ := call(t, cs, "watch", map[string]any{"session": sess, "lines": 5})
	mustOK(t, res, text)
	if !strings.Contains(text, "state=done") {
		t.Errorf("watch: %s", text)
	}
	res, text, _ = call(t, cs, "monitor", map[string]any{})
	mustOK(t, res, text)
	if !strings.Contains(text, sess) {
		t.Errorf("monitor: %s", text)
	}
	res, text, _ = call(t, cs, "ask", map[string]any{"session": sess, "question": "what changed?"})
	mustOK(t, res, text)
	if !strings.Contains(text, "what changed?") {
		t.Errorf("ask: %s", text)
	}
	res, text, _ = call(t, cs, "pool_status", map[string]any{})
	mustOK(t, res, text)
	if !strings.Contains(text, "pool:") {
		t.Errorf("pool_status: %s", text)
	}
	res, text, _ = call(t, cs, "teardown", map[string]any{"session": sess})
	mustOK(t, res, text)
	if !strings.Contains(text, "Torn down session="+sess) {
		t.Errorf("teardown: %s", text)
	}
}

func TestWaitTimeoutThenStatus(t *testing.T) {
	e := newEnv(t)
	hold := make(chan struct{})
	e.box.ScriptFor = func(tu app.Turn) apptest.Script {
		return apptest.Script{Records: []string{`{}`}, Hold: hold, Result: &app.AgentResult{}}
	}
	cs := connect(t, NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor, WaitTimeout: 200 * time.Millisecond, ProgressInterval: 50 * time.Millisecond}))
	res, text, out := call(t, cs, "delegate", map[string]any{"task": "long job"})
	mustOK(t, res, text)
	if !strings.Contains(text, "run:running — still working after") || !strings.Contains(text, "NOT done, NOT cancelled") || out["state"] != "running" {
		t.Fatalf("delegate: %v\n%s", out, text)
	}
	sess := out["session"].(string)
	close(hold)
	for i := 0; ; i++ {
		res, text, out = call(t, cs, "status", map[string]any{"session": sess})
		mustOK(t, res, text)
		if out["state"] == "done" {
			break
		}
		if i > 100 {
			t.Fatalf("status never reached done: %s", text)
		}
	}
	if !strings.HasPrefix(text, "run:done") {
		t.Errorf("status text: %s", text)
	}
}

func TestProgressNotifications(t *testing.T) {
	e := newEnv(t)
	hold := make(chan struct{})
	defer close(hold)
	e.box.ScriptFor = func(tu app.Turn) apptest.Script {
		return apptest.Script{Records: []string{`{}`}, Hold: hold}
	}
	srv := NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor, WaitTimeout: 300 * time.Millisecond, ProgressInterval: 50 * time.Millisecond})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 100)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			got <- r.Params.Message
		},
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "delegate", Arguments: map[string]any{"task": "x"}, Meta: sdk.Meta{"progressToken": "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if !strings.Contains(m, "still working") {
			t.Errorf("progress message %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress notification")
	}
}

func TestAskedBackAndToolErrors(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor}))
	res, text, out := call(t, cs, "delegate", map[string]any{})
	if res.IsError || !strings.Contains(text, "Which task should the sandbox agent do?") || out["state"] != "needs_input" {
		t.Fatalf("missing task: err=%v %s", res.IsError, text)
	}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"status", map[string]any{"session": "../etc"}, "session"},
		{"resume", map[string]any{"session": "nope", "message": "x"}, "session"},
		{"resume", map[string]any{"session": "ses_abc", "message": "x", "secrets": map[string]any{"PATH": "/tmp"}}, "secrets"},
		{"delegate", map[string]any{"task": "x", "repo": "not a repo"}, "repo"},
		{"delegate", map[string]any{"task": "x", "repos": []any{map[string]any{"repo": "a/b", "ref": "-x"}}}, "repos[0].ref"},
		{"delegate", map[string]any{"task": "x", "allowDomains": []any{"bad domain"}}, "allowDomains[0]"},
	} {
		res, text, _ := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text, "invalid "+c.field) {
			t.Errorf("%s %v: err=%v text=%q, want tool error naming %s", c.tool, c.args, res.IsError, text, c.field)
		}
	}
	res, text, _ = call(t, cs, "status", map[string]any{"session": "ses_doesnotexist"})
	if !res.IsError || !strings.Contains(text, "not found") {
		t.Errorf("unknown session: %v %s", res.IsError, text)
	}
	sessions, _ := e.svc.Fleet(app.WithActor(context.Background(), app.OperatorActor), app.FleetFilter{IncludeClosed: true})
	if len(sessions) != 0 {
		t.Errorf("bad input created %d sessions", len(sessions))
	}
}

func TestNoActorRefused(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, NewServer(Options{Service: e.svc}))
	res, text, _ := call(t, cs, "delegate", map[string]any{"task": "x"})
	if !res.IsError || !strings.Contains(text, "unauthorized") {
		t.Errorf("no actor: %v %s", res.IsError, text)
	}
}

// --- HTTP ---

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func newHTTP(t *testing.T, e *env) *httptest.Server {
	t.Helper()
	srv := NewServer(Options{Service: e.svc, WaitTimeout: 20 * time.Second})
	verify := func(_ context.Context, token string) (app.Actor, error) {
		switch token {
		case "token-a":
			return app.Actor{Account: "a", Name: "alice"}, nil
		case "token-b":
			return app.Actor{Account: "b", Name: "bob"}, nil
		}
		return app.Actor{}, errors.New("unknown token")
	}
	ts := httptest.NewServer(NewHTTPHandler(srv, verify, HTTPOptions{}))
	t.Cleanup(ts.Close)
	return ts
}

func httpClient(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPLoopAndIsolation(t *testing.T) {
	e := newEnv(t)
	ts := newHTTP(t, e)
	a := httpClient(t, ts.URL, "token-a")
	b := httpClient(t, ts.URL, "token-b")
	sess := loop(t, a)

	res, text, _ := call(t, b, "status", map[string]any{"session": sess})
	if !res.IsError || !strings.Contains(text, "not found") {
		t.Errorf("b sees a's session: %v %s", res.IsError, text)
	}
	res, text, _ = call(t, b, "monitor", map[string]any{})
	mustOK(t, res, text)
	if strings.Contains(text, sess) {
		t.Errorf("b's monitor lists a's session: %s", text)
	}
	res, text, _ = call(t, a, "status", map[string]any{"session": sess})
	mustOK(t, res, text)
	if !strings.HasPrefix(text, "run:done") {
		t.Errorf("a's status: %s", text)
	}
	v, err := e.svc.Session(app.WithActor(context.Background(), app.OperatorActor), app.SessionID(sess))
	if err != nil || v.Session.Owner != "a" {
		t.Errorf("owner = %q, %v; want a", v.Session.Owner, err)
	}
}

func TestHTTPUnauthenticated(t *testing.T) {
	e := newEnv(t)
	ts := newHTTP(t, e)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delegate","arguments":{"task":"x"}}}`
	for _, token := range []string{"", "wrong"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", token, resp.StatusCode)
		}
		tr := &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
		if cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil); err == nil {
			cs.Close()
			t.Errorf("token %q: client connected", token)
		}
	}
	sessions, _ := e.svc.Fleet(app.WithActor(context.Background(), app.OperatorActor), app.FleetFilter{IncludeClosed: true})
	if len(sessions) != 0 {
		t.Errorf("unauthenticated requests created %d sessions", len(sessions))
	}
}
