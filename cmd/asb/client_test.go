package main

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

const clientToken = "asb_client_test_token_0123456789"

// controller is a real Service over the in-memory fakes behind the real
// HTTP handler, on loopback.
type controller struct {
	srv     *httptest.Server
	svc     *app.Service
	sandbox *apptest.FakeSandbox
	ctx     context.Context
}

func startController(t *testing.T, configure func(*apptest.FakeSandbox), wrap func(http.Handler) http.Handler) *controller {
	t.Helper()
	c := &controller{sandbox: apptest.NewFakeSandbox()}
	if configure != nil {
		configure(c.sandbox)
	}
	c.svc = app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: c.sandbox, Forge: &apptest.FakeForge{}},
		app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	c.ctx = ctx
	done := make(chan error, 1)
	go func() { done <- c.svc.Run(ctx) }()
	var h http.Handler = web.New(web.Options{Service: c.svc, OperatorToken: clientToken, WaitTimeout: 20 * time.Second,
		Heartbeat: 50 * time.Millisecond, MutationsPerMinute: 10000})
	if wrap != nil {
		h = wrap(h)
	}
	c.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		c.srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return c
}

// clientEnv is the environment of a client command pointed at c.
func (c *controller) clientEnv(t *testing.T, extra ...string) (*environment, *syncBuffer, *syncBuffer) {
	t.Helper()
	return testEnv(t, t.TempDir(), append([]string{"ASB_URL=" + c.srv.URL, "MCP_HTTP_TOKEN=" + clientToken}, extra...)...)
}

func (c *controller) delegate(t *testing.T, task string, repo string) app.Delegation {
	t.Helper()
	req := app.DelegateRequest{Task: task}
	if repo != "" {
		req.Sources = []app.Source{{Repo: repo}}
	}
	d, err := c.svc.Delegate(c.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (c *controller) waitState(t *testing.T, id app.SessionID, state string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // guards a hung test only
	for {
		v, err := c.svc.Session(c.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.State() == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s is %s, want %s", id, v.State(), state)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func waitOutput(t *testing.T, what string, buf *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // guards a hung test only
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%q); output:\n%s", what, want, buf)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// askingScript asks a question on a session's first turn and finishes the next.
func askingScript(question string) func(*apptest.FakeSandbox) {
	return func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			if turn.ResumeAgentSession == "" {
				return apptest.Script{AgentSessionID: "cc-1", Question: question, Records: []string{
					`{"type":"system","subtype":"init","session_id":"cc-1","model":"claude-test","cwd":"/workspace/api"}`,
					`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the code.\nTwo options."},{"type":"tool_use","name":"Bash","input":{"command":"go test ./..."}}]}}`,
					`{"type":"user","message":{"content":[{"type":"tool_result","content":"exit status 1","is_error":true}]}}`,
				}}
			}
			return apptest.Script{Records: []string{
				`{"type":"assistant","message":{"content":[{"type":"text","text":"Using SQLite."}]}}`,
				`{"type":"result","subtype":"success","num_turns":3,"total_cost_usd":0.25,"duration_ms":4000}`,
			}, Result: &app.AgentResult{Summary: "done"}}
		}
	}
}

func TestParseArgsAcceptsFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	raw := fs.Bool("raw", false, "")
	pos, _, ok := parseArgs(fs, []string{"ses_a", "--raw", "what", "--", "-v", "--raw"})
	if !ok || !*raw || strings.Join(pos, "|") != "ses_a|what|-v|--raw" {
		t.Fatalf("pos %q raw %v ok %v", pos, *raw, ok)
	}
	if _, code, ok := parseArgs(fs, []string{"--nope"}); ok || code != 2 {
		t.Fatalf("unknown flag: ok %v code %d", ok, code)
	}
	if _, code, ok := parseArgs(fs, []string{"-h"}); ok || code != 0 {
		t.Fatalf("help: ok %v code %d", ok, code)
	}
}

func TestClientSetupProblems(t *testing.T) {
	c := startController(t, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		env  []string
		code int
		want string
	}{
		{"wrong token", []string{"ASB_URL=" + c.srv.URL, "MCP_HTTP_TOKEN=asb_wrong_token_wrong_token"}, 1, "HTTP 401"},
		{"nothing listening", []string{"ASB_URL=" + closed, "MCP_HTTP_TOKEN=" + clientToken}, 1, "cannot reach asb at " + closed},
		{"not a URL", []string{"ASB_URL=ftp://example.com", "MCP_HTTP_TOKEN=" + clientToken}, 2, "ASB_URL"},
		{"password in URL", []string{"ASB_URL=http://user:pa55word@127.0.0.1:1", "MCP_HTTP_TOKEN=" + clientToken}, 2, "ASB_URL"},
		{"no token", []string{"ASB_URL=" + c.srv.URL}, 2, "no operator token"},
	} {
		env, out, errOut := testEnv(t, t.TempDir(), tc.env...)
		if code := runMonitor(context.Background(), env, nil); code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.code, errOut)
		}
		if !strings.Contains(errOut.String(), tc.want) || out.String() != "" {
			t.Errorf("%s: stderr %q lacks %q (stdout %q)", tc.name, errOut, tc.want, out)
		}
		for _, secret := range []string{clientToken, "asb_wrong_token", "pa55word"} {
			if strings.Contains(errOut.String(), secret) {
				t.Errorf("%s: stderr shows a secret: %s", tc.name, errOut)
			}
		}
	}

	// The token file that serve writes is used when MCP_HTTP_TOKEN is unset.
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "operator.token"), []byte(clientToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, out, errOut := testEnv(t, data, "ASB_URL="+c.srv.URL+"/")
	if code := runMonitor(context.Background(), env, nil); code != 0 || !strings.Contains(out.String(), "No active sessions") {
		t.Fatalf("token file: exit %d\n%s%s", code, out, errOut)
	}

	// Plain http to another machine is allowed, with a warning.
	env, _, errOut = testEnv(t, t.TempDir(), "ASB_URL=http://192.0.2.1:9", "MCP_HTTP_TOKEN="+clientToken)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	runMonitor(ctx, env, nil)
	if !strings.Contains(errOut.String(), "unencrypted") {
		t.Fatalf("no warning for plain http to a remote host: %s", errOut)
	}
}

func TestMonitorPrintsTheFleetWaitingFirst(t *testing.T) {
	c := startController(t, askingScript("Postgres or SQLite?"), nil)
	done := c.delegate(t, "finished job", "acme/web")
	c.waitState(t, done.Session.ID, "waiting") // every first turn asks here
	if _, err := c.svc.Answer(c.ctx, done.Session.ID, "either", nil); err != nil {
		t.Fatal(err)
	}
	c.waitState(t, done.Session.ID, "done")
	waiting := c.delegate(t, "add a store \x1b]0;pwned\x07 now", "acme/api")
	c.waitState(t, waiting.Session.ID, "waiting")
	if _, err := c.svc.Pin(c.ctx, waiting.Session.ID, true); err != nil {
		t.Fatal(err)
	}

	env, out, errOut := c.clientEnv(t)
	if code := runMonitor(context.Background(), env, nil); code != 0 {
		t.Fatalf("monitor exit %d: %s", code, errOut)
	}
	text := out.String()
	lines := strings.Split(text, "\n")
	if lines[0] != "2 sessions: 1 waiting for an answer, 1 done." {
		t.Fatalf("summary %q\n%s", lines[0], text)
	}
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "WAITING") || strings.HasPrefix(l, "done") || strings.HasPrefix(l, "STATE") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 3 || !strings.HasPrefix(rows[0], "STATE") || !strings.HasPrefix(rows[1], "WAITING*") ||
		!strings.Contains(rows[1], string(waiting.Session.ID)) || !strings.Contains(rows[1], "acme/api") || !strings.HasPrefix(rows[2], "done") {
		t.Fatalf("rows:\n%s", text)
	}
	if !strings.Contains(text, "? Postgres or SQLite?") || !strings.Contains(text, "/resume.json") || !strings.Contains(text, "* pinned") {
		t.Fatalf("no question or hints:\n%s", text)
	}
	if strings.ContainsAny(text, "\x1b\x07") {
		t.Fatalf("a control character reached the terminal: %q", text)
	}

	out3 := &syncBuffer{}
	env.stdout = out3
	if code := runMonitor(context.Background(), env, []string{"--json"}); code != 0 || !strings.HasPrefix(out3.String(), `{`) ||
		!strings.Contains(out3.String(), `"sessions"`) {
		t.Fatalf("--json: %d %s", code, out3)
	}

	// Closed sessions show only with --all.
	if _, err := c.svc.Teardown(c.ctx, done.Session.ID); err != nil {
		t.Fatal(err)
	}
	out4 := &syncBuffer{}
	env.stdout = out4
	runMonitor(context.Background(), env, []string{"--all"})
	if !strings.Contains(out4.String(), "1 closed") || !strings.Contains(out4.String(), string(done.Session.ID)) {
		t.Fatalf("--all:\n%s", out4)
	}
}

func TestWatchFollowsARunAndShowsHowToAnswer(t *testing.T) {
	c := startController(t, askingScript("Postgres or SQLite?"), nil)
	d := c.delegate(t, "add a store", "acme/api")
	c.waitState(t, d.Session.ID, "waiting")

	env, out, errOut := c.clientEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- runWatch(ctx, env, []string{string(d.Session.ID)}) }()

	waitOutput(t, "the question", out, "? The agent asks:")
	if _, err := c.svc.Answer(c.ctx, d.Session.ID, "SQLite", nil); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, "the end of the run", out, "✓ done")
	if _, err := c.svc.Teardown(c.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-code:
		if got != 0 {
			t.Fatalf("watch exit %d\n%s", got, errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("watch did not stop when the session closed:\n%s", out)
	}
	text := out.String()
	for _, want := range []string{
		"┌─ " + string(d.Session.ID) + "  add a store",
		"│ state: WAITING",
		"│ question: Postgres or SQLite?",
		"● session created: add a store",
		"+ run 1 queued (task): add a store",
		"● agent started (model claude-test, in /workspace/api)",
		"  Looking at the code.",
		"  Two options.",
		"⚙ Bash go test ./...",
		"  ✗ tool error: exit status 1",
		"    Postgres or SQLite?",
		"⏸ waiting for an answer",
		`-d '{"session":"` + string(d.Session.ID) + `","message":"YOUR ANSWER"}' ` + c.srv.URL + "/resume.json",
		"↳ answered by operator: SQLite",
		"  Using SQLite.",
		"✓ agent finished (3 turns, $0.25, 4s)",
		"✓ done",
		"■ session closed: torn down by operator",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("watch output lacks %q", want)
		}
	}
	if strings.Count(text, "● session created") != 1 || strings.Count(text, "↳ answered by") != 1 {
		t.Errorf("an event was printed twice")
	}
	if strings.Contains(text+errOut.String(), clientToken) {
		t.Errorf("the token was printed")
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// cutFirstStream ends the first /watch.sse response after three events,
// as a dropped connection would, and records each stream's Last-Event-ID.
type cutFirstStream struct {
	next    http.Handler
	mu      chan struct{}
	streams int
	ids     []string
}

func (c *cutFirstStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/watch.sse" {
		c.next.ServeHTTP(w, r)
		return
	}
	c.mu <- struct{}{}
	c.streams++
	first := c.streams == 1
	c.ids = append(c.ids, r.Header.Get("Last-Event-ID"))
	<-c.mu
	if !first {
		c.next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c.next.ServeHTTP(&countingWriter{ResponseWriter: w, after: 3, cut: cancel}, r.WithContext(ctx))
}

func (c *cutFirstStream) snapshot() []string {
	c.mu <- struct{}{}
	defer func() { <-c.mu }()
	return append([]string(nil), c.ids...)
}

// countingWriter cancels the request once it has written `after` events;
// the handler then ends the response.
type countingWriter struct {
	http.ResponseWriter
	after int
	seen  int
	cut   func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.seen >= w.after {
		return 0, io.ErrClosedPipe
	}
	w.seen += strings.Count(string(p), "\nevent: ")
	n, err := w.ResponseWriter.Write(p)
	if w.seen >= w.after {
		w.cut()
	}
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestWatchReconnectsFromTheLastEvent(t *testing.T) {
	cut := &cutFirstStream{mu: make(chan struct{}, 1)}
	c := startController(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			return apptest.Script{Records: []string{
				`{"type":"assistant","message":{"content":[{"type":"text","text":"step one"}]}}`,
				`{"type":"assistant","message":{"content":[{"type":"text","text":"step two"}]}}`,
				`{"type":"assistant","message":{"content":[{"type":"text","text":"step three"}]}}`,
			}}
		}
	}, func(h http.Handler) http.Handler { cut.next = h; return cut })
	d := c.delegate(t, "three steps", "")
	c.waitState(t, d.Session.ID, "done")
	evs, err := c.svc.Events(c.ctx, d.Session.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}

	env, out, errOut := c.clientEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- runWatch(ctx, env, []string{"--from-start", string(d.Session.ID)}) }()
	waitOutput(t, "the last step", out, "step three")
	if _, err := c.svc.Teardown(c.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	if got := <-code; got != 0 {
		t.Fatalf("exit %d: %s", got, errOut)
	}
	ids := cut.snapshot()
	if len(ids) < 2 || ids[0] != "" || ids[1] != "3" || evs[2].ID != 3 {
		t.Fatalf("Last-Event-ID per stream = %q (third event id %d)", ids, evs[2].ID)
	}
	if !strings.Contains(errOut.String(), "reconnecting") {
		t.Errorf("no reconnect notice: %s", errOut)
	}
	text := out.String()
	for _, want := range []string{"● session created", "+ run 1 queued", "step one", "step two", "step three", "✓ done", "■ session closed"} {
		if strings.Count(text, want) != 1 {
			t.Errorf("%q appears %d times, want once:\n%s", want, strings.Count(text, want), text)
		}
	}
}

func TestWatchRefusals(t *testing.T) {
	c := startController(t, nil, nil)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ses_doesnotexist"}, 1, "not found"},
		{[]string{"../etc"}, 2, "session id must look like"},
		{nil, 2, "give one SESSION"},
		{[]string{"ses_a", "ses_b"}, 2, "give one SESSION"},
		{[]string{"--tail", "-1", "ses_a"}, 2, "--tail"},
	} {
		env, _, errOut := c.clientEnv(t)
		if code := runWatch(context.Background(), env, tc.args); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	env, _, errOut := c.clientEnv(t)
	if code := runWatch(context.Background(), env, []string{"--help"}); code != 0 || !strings.Contains(errOut.String(), "Usage: asb watch [flags] SESSION") {
		t.Fatalf("--help exit %d: %s", code, errOut)
	}
}

func TestWatchOfAClosedSessionPrintsItsTailAndStops(t *testing.T) {
	c := startController(t, nil, nil)
	d := c.delegate(t, "short", "")
	c.waitState(t, d.Session.ID, "done")
	if _, err := c.svc.Teardown(c.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	env, out, errOut := c.clientEnv(t)
	if code := runWatch(context.Background(), env, []string{string(d.Session.ID), "--tail", "2"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "state: closed") || !strings.Contains(out.String(), "nothing more will happen") ||
		strings.Contains(out.String(), "session created") {
		t.Fatalf("output:\n%s", out)
	}
	env, out, _ = c.clientEnv(t)
	if code := runWatch(context.Background(), env, []string{"--raw", "--from-start", string(d.Session.ID)}); code != 0 {
		t.Fatal("raw watch failed")
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, `{"id":1,`) {
		t.Fatalf("--raw first line %q", first)
	}
}

func TestAskOnceAndFromStdin(t *testing.T) {
	var mu sync.Mutex
	var threads []string
	c := startController(t, func(sb *apptest.FakeSandbox) {
		sb.AskFn = func(req app.AskRequest) (app.AskAnswer, error) {
			mu.Lock()
			defer mu.Unlock()
			threads = append(threads, req.ResumeAskSession)
			return app.AskAnswer{Answer: "you asked: " + req.Question + "\n", AgentSessionID: "ask-1"}, nil
		}
	}, nil)
	d := c.delegate(t, "build it", "acme/api")
	c.waitState(t, d.Session.ID, "done")
	id := string(d.Session.ID)

	env, out, errOut := c.clientEnv(t)
	if code := runAsk(context.Background(), env, []string{id, "what", "changed?"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out.String() != "you asked: what changed?\n" {
		t.Fatalf("one-shot output %q", out)
	}

	big := strings.Repeat("x", 70<<10)
	env, out, errOut = c.clientEnv(t)
	env.stdin = strings.NewReader("first question\n\n" + big + "\n-second question\n")
	if code := runAsk(context.Background(), env, []string{"--new-thread", id}); code != 1 {
		t.Fatalf("stdin exit %d (one question was too long): %s", code, errOut)
	}
	want := "> first question\nyou asked: first question\n\n> -second question\nyou asked: -second question\n\n"
	if out.String() != want {
		t.Fatalf("stdin output %q, want %q", out, want)
	}
	if !strings.Contains(errOut.String(), "HTTP 413") {
		t.Fatalf("the long question's error: %q", errOut)
	}
	// The first stdin question started a new thread; the next continued it.
	mu.Lock()
	seen := append([]string(nil), threads...)
	mu.Unlock()
	if threads := seen; len(threads) != 3 || threads[1] != "" || threads[2] != "ask-1" {
		t.Fatalf("threads = %q", threads)
	}

	env, _, errOut = c.clientEnv(t)
	if code := runAsk(context.Background(), env, []string{"ses_nothere", "hello?"}); code != 1 || !strings.Contains(errOut.String(), "not found") {
		t.Fatalf("unknown session: exit %d %s", code, errOut)
	}
	env, _, errOut = c.clientEnv(t)
	if code := runAsk(context.Background(), env, nil); code != 2 || !strings.Contains(errOut.String(), "SESSION") {
		t.Fatalf("no session: exit %d %s", code, errOut)
	}
}
