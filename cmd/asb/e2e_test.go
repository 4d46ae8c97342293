package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/internal/testbin"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/sandbox/agent/scriptedtest"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

const e2eToken = "asb_e2e_operator_token_0123456789"

// buildHook builds the asb-hook binary the way make build does.
func buildHook(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./cmd/asb-hook", "asb-hook")
}

// agentHost is a fake msb host with a snapshot whose boxes have the
// scripted agent installed where AGENT_COMMAND points, as `asb bake`
// installs Claude Code.
func agentHost(t *testing.T) *msbtest.Host {
	t.Helper()
	fake := msbtest.New(t, "node")
	agentPath := inbox.ToolDir + "/bin/claude"
	steps := [][]string{
		{"run", "-d", "--name", "seed", "--pull", "never", "node", "--", "sleep", "infinity"},
		{"exec", "seed", "--", "mkdir", "-p", filepath.Dir(agentPath)},
		{"cp", scriptedtest.Binary(t), "seed:" + agentPath},
		{"stop", "seed"},
		{"snapshot", "create", "agent-base", "--from", "seed"},
		{"rm", "seed"},
	}
	for _, s := range steps {
		if _, stderr, code := fake.Run(s...); code != 0 {
			t.Fatalf("msb %v: %s", s, stderr)
		}
	}
	return fake
}

type e2eClient struct {
	t    *testing.T
	base string
	// seen collects every response body, to check no secret leaks.
	mu   sync.Mutex
	seen bytes.Buffer
}

func (c *e2eClient) do(method, path string, body any, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c.mu.Lock()
	c.seen.Write(b)
	c.mu.Unlock()
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		c.t.Logf("%s %s → %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

type sseEvent struct {
	ID   string
	Type string
	Data string
}

// stream reads /watch.sse and sends each event on the returned channel.
func (c *e2eClient) stream(ctx context.Context, session string) <-chan sseEvent {
	out := make(chan sseEvent, 1024)
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/watch.sse?session="+session, nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("watch.sse: %v %v", err, resp)
	}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.seen.WriteString(line + "\n")
			c.mu.Unlock()
			switch {
			case line == "":
				if ev.Type != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id:"):
				ev.ID = strings.TrimSpace(line[3:])
			case strings.HasPrefix(line, "event:"):
				ev.Type = strings.TrimSpace(line[6:])
			case strings.HasPrefix(line, "data:"):
				ev.Data += strings.TrimSpace(line[5:])
			}
		}
	}()
	return out
}

// until reads events until one satisfies cond.
func until(t *testing.T, ch <-chan sseEvent, what string, cond func(sseEvent) bool) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(90 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before %s; got %d events", what, len(got))
			}
			got = append(got, ev)
			if cond(ev) {
				return got
			}
		case <-timeout:
			var b strings.Builder
			for _, e := range got {
				fmt.Fprintf(&b, "  %s %s %.200s\n", e.ID, e.Type, e.Data)
			}
			t.Fatalf("timed out waiting for %s; events:\n%s", what, b.String())
		}
	}
}

func stateIs(to string) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.Type == "run.state" && strings.Contains(e.Data, `"to":"`+to+`"`) }
}

// TestEndToEndOverSSH drives a whole run through the JSON routes: the
// controller reaches its host through a real sshd, boxes come from the
// fake msb, and the scripted agent plays Claude Code behind the real hooks.
func TestEndToEndOverSSH(t *testing.T) {
	sshd := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
	fake := agentHost(t)
	fake.GiveTo(t, sshd.User)
	data := filepath.Join(t.TempDir(), "data")
	env, _, logs := testEnv(t, data,
		"SANDBOX_HOSTS=ssh://"+sshd.User+"@"+sshd.Addr,
		"SSH_KEY_FILE="+sshd.ClientKey.File, "SSH_KNOWN_HOSTS="+sshd.KnownHostsFile,
		"MSB_PATH="+fake.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M", "POOL_SIZE=0",
		"AGENT_COMMAND="+inbox.ToolDir+"/bin/claude", "MCP_HTTP_TOKEN="+e2eToken,
		"ANTHROPIC_API_KEY=sk-ant-model-key-e2e")
	env.hookBinary = buildHook(t)
	addr, stop := startServe(t, env)
	defer stop()
	c := &e2eClient{t: t, base: "http://" + addr}

	task := strings.Join([]string{
		"Write a greeting.",
		"#!asb-script",
		"say starting",
		"todo write the file; ask about tone",
		`write greeting.txt hello\n`,
		"ask Formal or casual?",
		"env DB_PASSWORD",
		"run cat ~/.git-credentials",
		`write greeting.txt hey there\n`,
		"say finished",
	}, "\n")
	var d struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	if code := c.do("POST", "/delegate.json", map[string]any{"task": task}, &d); code != 200 {
		t.Fatalf("delegate: %d", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.stream(ctx, d.Session.ID)
	// Cut the controller's SSH connection as soon as the agent is going:
	// the next poll reconnects and reads on from its offset.
	pre := until(t, events, "the first agent record", func(e sseEvent) bool { return e.Type == "agent" })
	if n := sshd.DropConnections(); n == 0 {
		t.Log("no SSH connection was open to drop")
	}
	first := append(pre, until(t, events, "the question", func(e sseEvent) bool { return e.Type == "run.question" })...)
	var sawAgent bool
	for _, e := range first {
		if e.Type == "agent" && strings.Contains(e.Data, "starting") {
			sawAgent = true
		}
	}
	if !sawAgent || !strings.Contains(first[len(first)-1].Data, "Formal or casual?") {
		t.Fatalf("no live agent events before the question: %+v", first)
	}

	const secret = "s3cret-db-pass-one-step"
	var res struct {
		Outcome string `json:"outcome"`
	}
	if code := c.do("POST", "/resume.json", map[string]any{"session": d.Session.ID, "message": "casual", "secrets": map[string]string{"DB_PASSWORD": secret}}, &res); code != 200 || res.Outcome != "answered" {
		t.Fatalf("resume: %d %+v", code, res)
	}
	second := until(t, events, "done", stateIs("done"))
	joined := ""
	for _, e := range second {
		joined += e.Data + "\n"
	}
	if !strings.Contains(joined, fmt.Sprintf("DB_PASSWORD is set (%d bytes)", len(secret))) {
		t.Fatalf("the answered turn did not see its secret:\n%s", joined)
	}
	// The guard hook stopped the credential read.
	if !strings.Contains(joined, "git-credentials") || !strings.Contains(joined, `"is_error":true`) {
		t.Fatalf("the guard hook did not deny reading ~/.git-credentials:\n%s", joined)
	}

	// A follow-up continues the same agent conversation.
	var view struct {
		Session struct {
			AgentSessionID string `json:"agent_session_id"`
		} `json:"session"`
	}
	c.do("GET", "/watch.json?session="+d.Session.ID, nil, &view)
	if view.Session.AgentSessionID == "" {
		t.Fatal("no agent session id")
	}
	if code := c.do("POST", "/followup.json", map[string]any{"session": d.Session.ID, "message": "#!asb-script\necho-flags"}, nil); code != 200 {
		t.Fatalf("follow-up: %d", code)
	}
	third := until(t, events, "the follow-up done", stateIs("done"))
	joined = ""
	for _, e := range third {
		joined += e.Data + "\n"
	}
	if !strings.Contains(joined, view.Session.AgentSessionID) {
		t.Fatalf("the follow-up did not resume %s:\n%s", view.Session.AgentSessionID, joined)
	}

	if code := c.do("POST", "/teardown.json", map[string]any{"session": d.Session.ID}, nil); code != 200 {
		t.Fatalf("teardown: %d", code)
	}
	var after struct {
		Events []json.RawMessage `json:"events"`
	}
	if code := c.do("GET", "/watch.json?session="+d.Session.ID+"&events=1000", nil, &after); code != 200 || len(after.Events) < 10 {
		t.Fatalf("events after teardown: %d, %d events", code, len(after.Events))
	}
	cancel()
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d", code)
	}

	// The secret is nowhere: not in responses, logs or the database files.
	if strings.Contains(c.seen.String(), secret) {
		t.Fatal("a response carried the one-step secret")
	}
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), "sk-ant-model-key") || strings.Contains(logs.String(), e2eToken) {
		t.Fatal("the log carries a secret")
	}
	files, _ := filepath.Glob(filepath.Join(data, "asb.sqlite*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("sk-ant-model-key")) {
			t.Fatalf("%s holds a secret", f)
		}
	}
}

// TestSIGKILLMidRunLosesNothing kills the controller process with SIGKILL
// while the agent is writing, starts it again over the same data, and
// checks that the run is re-attached and finishes with every record of the
// agent's stream stored exactly once, in order.
func TestSIGKILLMidRunLosesNothing(t *testing.T) {
	fake := agentHost(t)
	dir := t.TempDir()
	env := []string{"SANDBOX_HOSTS=local", "MSB_PATH=" + fake.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M",
		"POOL_SIZE=0", "AGENT_COMMAND=" + inbox.ToolDir + "/bin/claude", "MCP_HTTP_TOKEN=" + e2eToken}
	p := startProcess(t, dir, env...)
	c := &e2eClient{t: t, base: "http://" + p.addr}
	var d struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	task := "#!asb-script\nemit 15\nsleep 2s\nemit 15\nsay finished"
	if code := c.do("POST", "/delegate.json", map[string]any{"task": task}, &d); code != 200 {
		t.Fatalf("delegate: %d\n%s", code, p.logs)
	}
	type watch struct {
		State  string `json:"state"`
		Events []struct {
			ID   int64           `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
		Session struct {
			Box struct {
				Name string `json:"name"`
			} `json:"box"`
		} `json:"session"`
	}
	agentRecords := func(c *e2eClient) (watch, []string) {
		var w watch
		c.do("GET", "/watch.json?session="+d.Session.ID+"&events=1000", nil, &w)
		var recs []string
		for _, e := range w.Events {
			if e.Type == "agent" {
				recs = append(recs, string(e.Data))
			}
		}
		return w, recs
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, recs := agentRecords(c); len(recs) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never got going:\n%s", p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	p.cmd.Wait()

	p2 := startProcess(t, dir, env...)
	c2 := &e2eClient{t: t, base: "http://" + p2.addr}
	var w watch
	var recs []string
	deadline = time.Now().Add(90 * time.Second)
	for {
		w, recs = agentRecords(c2)
		if w.State == "done" {
			break
		}
		if w.State == "failed" || time.Now().After(deadline) {
			t.Fatalf("run after restart: %s\n%s", w.State, p2.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r] {
			t.Fatalf("record stored twice: %s", r)
		}
		seen[r] = true
	}
	out, _, _ := fake.Run("exec", w.Session.Box.Name, "--", "sh", "-c", "cat "+inbox.RunsDir+"/*/events.ndjson")
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	if len(recs) != len(want) {
		t.Fatalf("stored %d records; the agent wrote %d", len(recs), len(want))
	}
	for i := range want {
		var a, b any
		if json.Unmarshal([]byte(recs[i]), &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, recs[i], want[i])
		}
	}
	if !strings.Contains(p2.logs.String(), "re-attaching run") {
		t.Fatalf("the restarted controller did not re-attach the run:\n%s", p2.logs)
	}
}

// TestMCPEndpointNeedsTheToken checks that serve mounts /mcp behind the
// operator token: without it 401 and no MCP session; with it the
// Streamable HTTP handshake succeeds.
func TestMCPEndpointNeedsTheToken(t *testing.T) {
	env, _, _ := testEnv(t, t.TempDir(), "MCP_HTTP_TOKEN="+e2eToken)
	addr, stop := startServe(t, env)
	defer stop()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	post := func(token string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if resp := post(tok); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: status %d", tok, resp.StatusCode)
		}
	}
	resp := post(e2eToken)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("with the token: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
}

// TestMCPStdioBridge starts `asb mcp` as an IDE would, over stdio, and
// drives it with the official SDK client: the tools are the controller's,
// and a delegation made through it lands in the running controller.
func TestMCPStdioBridge(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env, _, _ := testEnv(t, data, "MCP_HTTP_TOKEN="+e2eToken, "WAIT_TIMEOUT_MS=1000")
	addr, stop := startServe(t, env)
	defer stop()

	cmd := exec.Command(asbBinary(t), "mcp")
	cmd.Env = []string{"ASB_URL=http://" + addr, "MCP_HTTP_TOKEN=" + e2eToken, "ASB_DATA_DIR=" + data, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.Dir = t.TempDir()
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdkmcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"delegate", "resume", "status", "ask", "teardown", "monitor", "watch"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}
	res, err := session.CallTool(ctx, &sdkmcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"task": "write the docs"}})
	if err != nil || res.IsError {
		t.Fatalf("delegate: %v %+v", err, res)
	}
	text := res.Content[0].(*sdkmcp.TextContent).Text
	if !strings.Contains(text, "run:running") || !strings.Contains(text, "ses_") {
		t.Fatalf("delegate answered %q", text)
	}
	// The controller has the session.
	c := &e2eClient{t: t, base: "http://" + addr}
	var fleet struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if code := c.do("GET", "/fleet.json", nil, &fleet); code != 200 || len(fleet.Sessions) != 1 {
		t.Fatalf("fleet after the stdio delegation: %d, %d sessions", code, len(fleet.Sessions))
	}
}
