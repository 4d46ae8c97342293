package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/sandbox/agent"
	"github.com/asb-dev/asb/sandbox/agent/scriptedtest"
)

// env is one isolated scripted-agent setup: a git repo as the cwd, a
// private HOME (so state and user settings are the test's own) and a
// question file outside any box.
type env struct {
	t        *testing.T
	bin      string
	repo     string
	home     string
	question string
	extra    []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, bin: scriptedtest.Binary(t), repo: t.TempDir(), home: t.TempDir()}
	e.question = filepath.Join(t.TempDir(), ".agent.question")
	e.git("init", "-q", "-b", "main")
	return e
}

func (e *env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "ASB_HOOK" || name == "HOME" || name == "ANTHROPIC_MODEL" || strings.HasPrefix(name, "SCRIPTED_AGENT_") || strings.HasPrefix(name, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "HOME="+e.home, "SCRIPTED_AGENT_QUESTION_FILE="+e.question,
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Author", "GIT_COMMITTER_EMAIL=author@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return append(out, e.extra...)
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = e.repo
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// invocation is one finished run of the agent.
type invocation struct {
	code   int
	stdout string
	stderr string
	events []agent.Event
	sum    agent.Summary
}

// launcherArgs is the command line asb's launcher uses (SPEC 5.4).
func launcherArgs(prompt string, extra ...string) []string {
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--setting-sources", "user",
		"--append-system-prompt", "POLICY TEXT"}
	args = append(args, extra...)
	return append(args, "--allowedTools", "Bash", "Edit", "Write", "Read", "Glob", "Grep")
}

func (e *env) run(args ...string) invocation {
	e.t.Helper()
	return e.runIn(e.repo, args...)
}

func (e *env) runIn(dir string, args ...string) invocation {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = e.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := invocation{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	evs, perr := agent.ParseStream(strings.NewReader(r.stdout))
	if perr != nil && contains(args, "stream-json") {
		e.t.Fatalf("stream does not parse: %v\n%s", perr, r.stdout)
	}
	r.events = evs
	r.sum = agent.Summarize(evs)
	return r
}

func kinds(evs []agent.Event) []agent.Kind {
	var out []agent.Kind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func sayings(evs []agent.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == agent.KindAssistantText {
			out = append(out, e.Text)
		}
	}
	return out
}

// toolResult finds the tool_result answering the n-th call of a tool.
func toolResult(t *testing.T, evs []agent.Event, tool string, n int) agent.Event {
	t.Helper()
	seen := 0
	for _, e := range evs {
		if (e.Kind == agent.KindToolUse || e.Kind == agent.KindTodo) && e.ToolName == tool {
			if seen == n {
				for _, r := range evs {
					if r.Kind == agent.KindToolResult && r.ToolUseID == e.ToolUseID {
						return r
					}
				}
				t.Fatalf("no result for %s call %d", tool, n)
			}
			seen++
		}
	}
	t.Fatalf("no %s call %d", tool, n)
	return agent.Event{}
}

func TestEveryDirective(t *testing.T) {
	e := newEnv(t)
	e.extra = append(e.extra, "SECRET_TOKEN=hunter2-is-secret")
	if err := os.WriteFile(filepath.Join(e.repo, "notes.txt"), []byte("line one\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prompt := scriptedtest.Prompt("Implement the feature.",
		"say Starting\\nnow.",
		"todo [x] Read the code; [>] Write the file; Commit",
		"write src/hello.txt hello\\nworld\\n",
		"append src/hello.txt again\\n",
		"read notes.txt",
		"run cat src/hello.txt && echo to-stderr >&2",
		"run exit 3",
		"env SECRET_TOKEN",
		"env NOT_SET_ANYWHERE",
		"commit Add hello\\n\\nWith a body.",
		"echo-prompt",
		"echo-system-prompt",
		"echo-flags",
		"stderr diagnostic\\tline",
		"sleep 10ms",
		"emit 3",
		"todo [x] Read the code; [x] Write the file; [x] Commit",
		"say All done.",
	)
	r := e.run(launcherArgs(prompt)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", r.code, r.stderr, r.stdout)
	}

	wantKinds := []agent.Kind{
		agent.KindSystemInit,
		agent.KindAssistantText,
		agent.KindTodo, agent.KindToolResult,
		agent.KindToolUse, agent.KindToolResult, // write
		agent.KindToolUse, agent.KindToolResult, // append
		agent.KindToolUse, agent.KindToolResult, // read
		agent.KindToolUse, agent.KindToolResult, // run
		agent.KindToolUse, agent.KindToolResult, // run exit 3
		agent.KindToolUse, agent.KindToolResult, // env
		agent.KindToolUse, agent.KindToolResult, // env
		agent.KindToolUse, agent.KindToolResult, // commit
		agent.KindAssistantText, agent.KindAssistantText, agent.KindAssistantText, // echo-*
		agent.KindAssistantText, agent.KindAssistantText, agent.KindAssistantText, // emit 3
		agent.KindTodo, agent.KindToolResult,
		agent.KindAssistantText,
		agent.KindResult,
	}
	if got := kinds(r.events); !reflect.DeepEqual(got, wantKinds) {
		t.Fatalf("kinds:\n got %v\nwant %v", got, wantKinds)
	}

	s := r.sum
	if s.SessionID == "" || !s.Done || s.Failed() || s.Subtype != "success" || s.Result != "All done." {
		t.Errorf("summary: %+v", s)
	}
	for _, ev := range r.events {
		if ev.SessionID != s.SessionID {
			t.Fatalf("record with session %q, want %q", ev.SessionID, s.SessionID)
		}
	}
	if s.NumTurns != 18 || s.TotalCostUSD <= 0 || s.Usage.OutputTokens <= 0 || s.Usage.CacheReadInputTokens <= 0 || s.DurationMS < 10 {
		t.Errorf("figures: turns %d cost %v usage %+v duration %d", s.NumTurns, s.TotalCostUSD, s.Usage, s.DurationMS)
	}
	wantTodos := []agent.Todo{{Content: "Read the code", Status: "completed", ActiveForm: "Read the code"},
		{Content: "Write the file", Status: "completed", ActiveForm: "Write the file"},
		{Content: "Commit", Status: "completed", ActiveForm: "Commit"}}
	if !reflect.DeepEqual(s.Todos, wantTodos) {
		t.Errorf("checklist: %+v", s.Todos)
	}
	if want := map[string]int{"TodoWrite": 2, "Write": 2, "Read": 1, "Bash": 5}; !reflect.DeepEqual(s.ToolUses, want) || s.ToolErrors != 1 {
		t.Errorf("tools: %v errors %d", s.ToolUses, s.ToolErrors)
	}

	init := r.events[0]
	if init.Cwd != e.repo || init.Model != defaultModel || init.PermissionMode != "default" || len(init.Tools) == 0 {
		t.Errorf("init: %+v", init)
	}

	// The files and the commit are real.
	data, err := os.ReadFile(filepath.Join(e.repo, "src", "hello.txt"))
	if err != nil || string(data) != "hello\nworld\nagain\n" {
		t.Errorf("file: %q %v", data, err)
	}
	if log := e.git("log", "--format=%s|%b|%an", "-1"); log != "Add hello|With a body.\n|Test Author\n" {
		t.Errorf("commit: %q", log)
	}
	if status := e.git("status", "--porcelain"); status != "" {
		t.Errorf("uncommitted: %q", status)
	}

	// Tool inputs and results look like Claude Code's.
	write := r.events[4]
	var in struct{ FilePath, Content string }
	if err := json.Unmarshal(write.Input, &struct {
		FilePath *string `json:"file_path"`
		Content  *string `json:"content"`
	}{&in.FilePath, &in.Content}); err != nil || in.FilePath != filepath.Join(e.repo, "src/hello.txt") || in.Content != "hello\nworld\n" {
		t.Errorf("write input: %s", write.Input)
	}
	if res := toolResult(t, r.events, "Write", 0); res.IsError || !strings.HasPrefix(res.Text, "File created successfully at: ") {
		t.Errorf("write result: %+v", res)
	}
	if res := toolResult(t, r.events, "Write", 1); res.IsError || !strings.Contains(res.Text, "has been updated") {
		t.Errorf("append result: %+v", res)
	}
	if res := toolResult(t, r.events, "Read", 0); res.Text != "     1\tline one\n     2\tline two" {
		t.Errorf("read result: %q", res.Text)
	}
	if res := toolResult(t, r.events, "Bash", 0); res.IsError || res.Text != "hello\nworld\nagain\nto-stderr" {
		t.Errorf("run result: %+v", res)
	}
	if res := toolResult(t, r.events, "Bash", 1); !res.IsError || res.Text != "Exit code 3" {
		t.Errorf("failed run result: %+v", res)
	}
	secret := toolResult(t, r.events, "Bash", 2)
	if secret.Text != "SECRET_TOKEN is set (17 bytes)" {
		t.Errorf("env result: %q", secret.Text)
	}
	if strings.Contains(r.stdout, "hunter2") || strings.Contains(r.stderr, "hunter2") {
		t.Error("the secret's value leaked into the output")
	}
	if res := toolResult(t, r.events, "Bash", 3); res.Text != "NOT_SET_ANYWHERE is not set" {
		t.Errorf("env result: %q", res.Text)
	}
	if res := toolResult(t, r.events, "Bash", 4); res.IsError || !strings.Contains(res.Text, "Add hello") {
		t.Errorf("commit result: %+v", res)
	}

	say := sayings(r.events)
	if say[0] != "Starting\nnow." || say[1] != prompt || say[2] != "POLICY TEXT" {
		t.Errorf("texts: %q", say[:3])
	}
	var flags map[string]any
	if err := json.Unmarshal([]byte(say[3]), &flags); err != nil || flags["output_format"] != "stream-json" ||
		!reflect.DeepEqual(flags["setting_sources"], []any{"user"}) || flags["resumed"] != false ||
		!reflect.DeepEqual(flags["allowed_tools"], []any{"Bash", "Edit", "Write", "Read", "Glob", "Grep"}) {
		t.Errorf("echo-flags: %s", say[3])
	}
	if !reflect.DeepEqual(say[4:7], []string{"emit 1 of 3", "emit 2 of 3", "emit 3 of 3"}) {
		t.Errorf("emit: %q", say[4:7])
	}
	if !strings.Contains(r.stderr, "diagnostic\tline\n") {
		t.Errorf("stderr: %q", r.stderr)
	}

	// Raw lines keep Claude Code's field names.
	var raw map[string]any
	if err := json.Unmarshal(r.events[len(r.events)-1].Raw, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"type", "subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "result",
		"session_id", "total_cost_usd", "usage", "modelUsage", "permission_denials", "uuid"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
}

func TestAskAndResume(t *testing.T) {
	e := newEnv(t)
	prompt := scriptedtest.Prompt("Pick a colour and write it.",
		"say Looking around.",
		"ask Red or blue?\\n(say which)",
		"write colour.txt chosen",
		"echo-prompt",
		"ask Dark or light?",
		"say finished",
	)
	first := e.run(launcherArgs(prompt)...)
	if first.code != 0 || !first.sum.Done || first.sum.Failed() {
		t.Fatalf("first turn: exit %d %+v\n%s", first.code, first.sum, first.stderr)
	}
	sid := first.sum.SessionID
	if q, err := os.ReadFile(e.question); err != nil || string(q) != "Red or blue?\n(say which)" {
		t.Fatalf("question file: %q %v", q, err)
	}
	if !strings.Contains(first.sum.Result, "Red or blue?") {
		t.Errorf("result text: %q", first.sum.Result)
	}
	if w := toolResult(t, first.events, "Write", 0); w.IsError {
		t.Errorf("question write: %+v", w)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "colour.txt")); err == nil {
		t.Fatal("the turn went on past the ask")
	}

	// The controller removes the question and resumes with the answer.
	if err := os.Remove(e.question); err != nil {
		t.Fatal(err)
	}
	second := e.run(launcherArgs("blue", "--resume", sid)...)
	if second.code != 0 || second.sum.SessionID != sid || second.events[0].SessionID != sid {
		t.Fatalf("second turn: exit %d session %q (want %q)\n%s", second.code, second.sum.SessionID, sid, second.stderr)
	}
	say := sayings(second.events)
	if say[0] != "answer received: blue" || say[1] != "blue" {
		t.Errorf("second turn texts: %q", say)
	}
	if data, _ := os.ReadFile(filepath.Join(e.repo, "colour.txt")); string(data) != "chosen" {
		t.Errorf("colour.txt: %q", data)
	}
	if q, _ := os.ReadFile(e.question); string(q) != "Dark or light?" {
		t.Errorf("second question: %q", q)
	}

	third := e.run(launcherArgs("light", "--resume", sid)...)
	if got := sayings(third.events); !reflect.DeepEqual(got, []string{"answer received: light", "finished"}) || third.sum.Result != "finished" {
		t.Errorf("third turn: %q", got)
	}

	// A follow-up with its own script runs it; one without says it did the task.
	fourth := e.run(launcherArgs(scriptedtest.Prompt("Follow-up.", "say follow-up script"), "--resume", sid)...)
	if got := sayings(fourth.events); !reflect.DeepEqual(got, []string{"follow-up script"}) || fourth.sum.SessionID != sid {
		t.Errorf("follow-up: %q", got)
	}
	fifth := e.run(launcherArgs("Also update the docs.\nDetails follow.", "--resume", sid)...)
	if got := sayings(fifth.events); !reflect.DeepEqual(got, []string{"I did the task: Also update the docs."}) {
		t.Errorf("plain follow-up: %q", got)
	}

	var st state
	data, err := os.ReadFile(filepath.Join(e.home, ".scripted-agent", sid+".json"))
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("state: %v %s", err, data)
	}
	if st.Turns != 5 || !reflect.DeepEqual(st.Answers, []string{"blue", "light"}) || len(st.Remaining) != 0 || len(st.Prompts) != 5 {
		t.Errorf("state: %+v", st)
	}

	// -c continues the latest conversation of the cwd.
	cont := e.run("-p", "-c", "carry on", "--output-format", "stream-json", "--verbose")
	if cont.code != 0 || cont.sum.SessionID != sid {
		t.Errorf("-c: exit %d session %q\n%s", cont.code, cont.sum.SessionID, cont.stderr)
	}

	// Resuming from another directory fails as in Claude Code, and so
	// does an unknown id; neither writes an event.
	other := e.runIn(t.TempDir(), launcherArgs("x", "--resume", sid)...)
	if other.code != 1 || other.stdout != "" || !strings.Contains(other.stderr, "No conversation found with session ID: "+sid) {
		t.Errorf("other cwd: %d %q %q", other.code, other.stdout, other.stderr)
	}
	unknown := e.run(launcherArgs("x", "--resume", "00000000-0000-4000-8000-000000000000")...)
	if unknown.code != 1 || unknown.stdout != "" {
		t.Errorf("unknown id: %d %q", unknown.code, unknown.stdout)
	}
	none := e.runIn(t.TempDir(), "-p", "-c", "x")
	if none.code != 1 || !strings.Contains(none.stderr, "No conversation found to continue") {
		t.Errorf("-c elsewhere: %d %q", none.code, none.stderr)
	}

	// --session-id names a new conversation, once.
	const fixed = "11111111-2222-4333-8444-555555555555"
	named := e.run(launcherArgs("hello", "--session-id", fixed)...)
	if named.code != 0 || named.sum.SessionID != fixed {
		t.Errorf("--session-id: %d %q", named.code, named.sum.SessionID)
	}
	again := e.run(launcherArgs("hello", "--session-id", fixed)...)
	if again.code != 1 || !strings.Contains(again.stderr, "already in use") {
		t.Errorf("--session-id reuse: %d %q", again.code, again.stderr)
	}

	// The knob that mimics releases reporting a new id on resume.
	e.extra = append(e.extra, "SCRIPTED_AGENT_FORK_SESSION_ON_RESUME=1")
	forked := e.run(launcherArgs("x", "--resume", fixed)...)
	if forked.code != 0 || forked.sum.SessionID == fixed || forked.sum.SessionID == "" {
		t.Errorf("fork knob: %d %q", forked.code, forked.sum.SessionID)
	}
}

func TestFailAndCrash(t *testing.T) {
	e := newEnv(t)
	r := e.run(launcherArgs(scriptedtest.Prompt("Break.", "say trying", "fail 3 the build is broken", "say never"))...)
	if r.code != 3 {
		t.Fatalf("exit %d", r.code)
	}
	if got := kinds(r.events); !reflect.DeepEqual(got, []agent.Kind{agent.KindSystemInit, agent.KindAssistantText, agent.KindResult}) {
		t.Fatalf("kinds %v", got)
	}
	res := r.events[2]
	if !res.IsError || res.Subtype != agent.SubtypeErrorDuringExecution || !reflect.DeepEqual(res.Errors, []string{"the build is broken"}) ||
		res.Text != "" || !r.sum.Failed() || r.sum.Text() != "the build is broken" || res.SessionID != r.sum.SessionID {
		t.Errorf("result: %+v", res)
	}

	r = e.run(launcherArgs(scriptedtest.Prompt("Break.", "fail"))...)
	if r.code != 1 || r.sum.Text() != "scripted failure (exit code 1)" {
		t.Errorf("bare fail: %d %q", r.code, r.sum.Text())
	}

	// crash dies without a result; the conversation resumes after it.
	r = e.run(launcherArgs(scriptedtest.Prompt("Die.", "say going down", "crash 9", "say after the crash"))...)
	if r.code != 9 || r.sum.Done || r.sum.LastText != "going down" {
		t.Fatalf("crash: %d %+v", r.code, r.sum)
	}
	resumed := e.run(launcherArgs("retry", "--resume", r.sum.SessionID)...)
	if got := sayings(resumed.events); !reflect.DeepEqual(got, []string{"answer received: retry", "after the crash"}) {
		t.Errorf("after crash: %q", got)
	}

	// A malformed script fails before doing anything.
	r = e.run(launcherArgs(scriptedtest.Prompt("Oops.", "write a.txt x", "explode now"))...)
	if r.code != 1 || !r.sum.Failed() || !strings.Contains(r.sum.Text(), `script line 2: unknown directive "explode"`) {
		t.Errorf("bad script: %d %q", r.code, r.sum.Text())
	}
	if _, err := os.Stat(filepath.Join(e.repo, "a.txt")); err == nil {
		t.Error("a malformed script ran")
	}
}

// denyBashHook is a PreToolUse hook in Claude Code's protocol: it logs its
// input and denies Bash with a JSON decision, allowing everything else.
const denyBashHook = `#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> "$HOOK_LOG"
case "$input" in
  *'"tool_name":"Bash"'*)
    printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Bash is not allowed here"}}\n'
    ;;
esac
exit 0
`

func writeExec(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHookDeniesBash(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "hook.log")
	hook := writeExec(t, filepath.Join(t.TempDir(), "hook.sh"), denyBashHook)
	e.extra = append(e.extra, "ASB_HOOK="+hook, "HOOK_LOG="+log)

	r := e.run(launcherArgs(scriptedtest.Prompt("Try.", "run touch ran.marker", "write ok.txt fine", "say done"))...)
	if r.code != 0 || r.sum.Failed() {
		t.Fatalf("exit %d %+v\n%s", r.code, r.sum, r.stderr)
	}
	bash := toolResult(t, r.events, "Bash", 0)
	if !bash.IsError || bash.Text != "Bash is not allowed here" {
		t.Errorf("denied Bash: %+v", bash)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "ran.marker")); err == nil {
		t.Error("the denied command ran")
	}
	if w := toolResult(t, r.events, "Write", 0); w.IsError {
		t.Errorf("Write was not allowed: %+v", w)
	}
	if len(r.sum.PermissionDenials) != 1 || r.sum.PermissionDenials[0].ToolName != "Bash" || r.sum.PermissionDenials[0].ToolUseID != bash.ToolUseID {
		t.Errorf("denials: %+v", r.sum.PermissionDenials)
	}

	// The hook got Claude Code's PreToolUse input, once per tool call.
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("hook calls: %d\n%s", len(lines), data)
	}
	var in struct {
		SessionID      string          `json:"session_id"`
		TranscriptPath string          `json:"transcript_path"`
		Cwd            string          `json:"cwd"`
		PermissionMode string          `json:"permission_mode"`
		HookEventName  string          `json:"hook_event_name"`
		ToolName       string          `json:"tool_name"`
		ToolInput      json.RawMessage `json:"tool_input"`
		ToolUseID      string          `json:"tool_use_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if in.SessionID != r.sum.SessionID || in.Cwd != e.repo || in.PermissionMode != "default" || in.HookEventName != "PreToolUse" ||
		in.ToolName != "Bash" || string(in.ToolInput) != `{"command":"touch ran.marker"}` || in.ToolUseID != bash.ToolUseID ||
		!strings.HasSuffix(in.TranscriptPath, "/"+r.sum.SessionID+".jsonl") {
		t.Errorf("hook input: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"tool_name":"Write"`) {
		t.Errorf("second hook call: %s", lines[1])
	}
}

func TestHookExitCodes(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	// exit 2 blocks with stderr as the reason; other codes are not blocking.
	block := writeExec(t, filepath.Join(dir, "block.sh"), "#!/bin/sh\ncat >/dev/null\necho 'guard: nope' >&2\nexit 2\n")
	broken := writeExec(t, filepath.Join(dir, "broken.sh"), "#!/bin/sh\ncat >/dev/null\necho oops >&2\nexit 1\n")
	legacy := writeExec(t, filepath.Join(dir, "legacy.sh"), "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"block\",\"reason\":\"legacy says no\"}'\n")
	allow := writeExec(t, filepath.Join(dir, "allow.sh"), "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n")
	stop := writeExec(t, filepath.Join(dir, "stop.sh"), "#!/bin/sh\ncat >/dev/null\necho '{\"continue\":false,\"stopReason\":\"stopped by hook\"}'\n")

	script := scriptedtest.Prompt("Try.", "write a.txt x", "say after")
	tests := []struct {
		name     string
		hook     string
		args     []string
		wantErr  bool
		wantText string
		wantLast string
	}{
		{"exit 2", block, nil, true, "PreToolUse:Write hook error: [" + block + "]: guard: nope", "after"},
		{"exit 1 is not blocking", broken, nil, false, "File created", "after"},
		{"legacy block", legacy, nil, true, "legacy says no", "after"},
		// allow skips the permission check: no --allowedTools here.
		{"allow", allow, []string{"-p", script, "--output-format", "stream-json", "--verbose"}, false, "File created", "after"},
		{"continue false", stop, nil, false, "File created", "stopped by hook"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(e.repo, "a.txt"))
			e.extra = []string{"ASB_HOOK=" + tc.hook}
			args := tc.args
			if args == nil {
				args = launcherArgs(script)
			}
			r := e.run(args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			res := toolResult(t, r.events, "Write", 0)
			if res.IsError != tc.wantErr || !strings.HasPrefix(res.Text, tc.wantText) {
				t.Errorf("result: %+v", res)
			}
			if r.sum.Result != tc.wantLast {
				t.Errorf("last text %q", r.sum.Result)
			}
		})
	}
}

func TestPermissions(t *testing.T) {
	e := newEnv(t)
	script := scriptedtest.Prompt("Go.", "todo one", "read missing.txt", "write a.txt x", "run echo hi", "commit msg")
	base := []string{"-p", script, "--output-format", "stream-json", "--verbose"}
	denied := func(r invocation) []string {
		var out []string
		for _, d := range r.sum.PermissionDenials {
			out = append(out, d.ToolName)
		}
		return out
	}

	// No --allowedTools: -p cannot prompt, so Write and Bash are denied.
	r := e.run(base...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"Write", "Bash", "Bash"}) {
		t.Errorf("no rules: %v", got)
	}
	if res := toolResult(t, r.events, "Bash", 0); res.Text != "Claude requested permissions to use Bash, but you haven't granted it yet." {
		t.Errorf("denial text: %q", res.Text)
	}
	if res := toolResult(t, r.events, "Read", 0); !res.IsError || !strings.Contains(res.Text, "File does not exist.") {
		t.Errorf("read of a missing file: %+v", res)
	}

	// The commit directive is "git add -A && git commit …": both parts
	// need a rule.
	r = e.run(append(base, "--allowedTools", "Bash(git commit:*)")...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"Write", "Bash", "Bash"}) {
		t.Errorf("git commit only: %v", got)
	}
	r = e.run(append(base, "--allowedTools", "Bash(git add:*)", "Bash(git commit:*)")...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"Write", "Bash"}) ||
		!strings.Contains(toolResult(t, r.events, "Bash", 1).Text, "nothing to commit") {
		t.Errorf("git add and commit: %v", got)
	}
	r = e.run(append(base, "--permission-mode", "acceptEdits")...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"Bash", "Bash"}) {
		t.Errorf("acceptEdits: %v", got)
	}
	r = e.run(append(base, "--dangerously-skip-permissions", "--disallowedTools", "TodoWrite")...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"TodoWrite"}) || r.events[0].PermissionMode != "bypassPermissions" {
		t.Errorf("bypass with a disallowed tool: %v", got)
	}
	r = e.run(append(base, "--tools", "Read,Write,TodoWrite", "--allowedTools", "Write", "Bash")...)
	if got := denied(r); !reflect.DeepEqual(got, []string{"Bash", "Bash"}) || !reflect.DeepEqual(r.events[0].Tools, []string{"Read", "Write", "TodoWrite"}) {
		t.Errorf("--tools: %v %v", got, r.events[0].Tools)
	}
}

func TestSettingsHooks(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	userHook := writeExec(t, filepath.Join(dir, "user.sh"), "#!/bin/sh\ncat >/dev/null\necho 'user hook' >&2\nexit 2\n")
	projectHook := writeExec(t, filepath.Join(dir, "project.sh"), "#!/bin/sh\ncat >/dev/null\necho 'project hook' >&2\nexit 2\n")
	writeSettings := func(path, matcher, cmd string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		s := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 5}}}}}}
		data, _ := json.Marshal(s)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSettings(filepath.Join(e.home, ".claude", "settings.json"), "Edit|Write", userHook)
	writeSettings(filepath.Join(e.repo, ".claude", "settings.json"), "Bash", projectHook)

	script := scriptedtest.Prompt("Go.", "write a.txt x", "run echo hi")
	// The launcher's --setting-sources user: the repo's own hooks never run.
	r := e.run(launcherArgs(script)...)
	if w := toolResult(t, r.events, "Write", 0); !w.IsError || !strings.HasSuffix(w.Text, "user hook") {
		t.Errorf("user hook: %+v", w)
	}
	if b := toolResult(t, r.events, "Bash", 0); b.IsError {
		t.Errorf("project hook ran under --setting-sources user: %+v", b)
	}
	// Claude Code's default sources include the project's settings.
	r = e.run("-p", script, "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash", "Write")
	if b := toolResult(t, r.events, "Bash", 0); !b.IsError || !strings.HasSuffix(b.Text, "project hook") {
		t.Errorf("project hook: %+v", b)
	}
}

// TestStreamIsLive reads the event file while the agent runs, as the
// controller does: every event is on disk as soon as it happens.
func TestStreamIsLive(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "events.ndjson")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(e.bin, launcherArgs(scriptedtest.Prompt("Slow.", "say before", "sleep 3s", "say after"))...)
	cmd.Dir, cmd.Env, cmd.Stdout = e.repo, e.environ(), f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var seen []agent.Event
	deadline := time.Now().Add(2500 * time.Millisecond)
	for len(seen) < 2 && time.Now().Before(deadline) {
		data, _ := os.ReadFile(out)
		lines, _ := agent.SplitLines(data)
		seen = nil
		for _, l := range lines {
			evs, err := agent.ParseAll(l)
			if err != nil {
				t.Fatalf("torn or bad line %q: %v", l, err)
			}
			seen = append(seen, evs...)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("agent ended before the test saw its first events: %v", err)
	default:
	}
	if len(seen) != 2 || seen[0].Kind != agent.KindSystemInit || seen[1].Text != "before" {
		t.Fatalf("live events: %+v", seen)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	evs, err := agent.ParseStream(bytes.NewReader(data))
	if err != nil || len(evs) != 4 || evs[3].Kind != agent.KindResult {
		t.Fatalf("final stream: %v %d", err, len(evs))
	}
}

func TestEmitOrdering(t *testing.T) {
	e := newEnv(t)
	r := e.run(launcherArgs(scriptedtest.Prompt("Load.", "emit 2000", "say end"))...)
	got := sayings(r.events)
	if len(got) != 2001 || r.code != 0 {
		t.Fatalf("%d texts, exit %d", len(got), r.code)
	}
	for i := range 2000 {
		if want := "emit " + itoa(i+1) + " of 2000"; got[i] != want {
			t.Fatalf("text %d = %q, want %q", i, got[i], want)
		}
	}
	if r.sum.NumTurns != 2001 {
		t.Errorf("num_turns %d", r.sum.NumTurns)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCommandLineAndFormats(t *testing.T) {
	e := newEnv(t)
	// No script: it says it did the task.
	r := e.run(launcherArgs("Fix the login bug.\nMore detail.")...)
	if r.code != 0 || r.sum.Result != "I did the task: Fix the login bug." {
		t.Errorf("no script: %d %q", r.code, r.sum.Result)
	}

	r = e.run("-p", scriptedtest.Prompt("x", "say plain text out"))
	if r.code != 0 || r.stdout != "plain text out\n" {
		t.Errorf("text format: %q", r.stdout)
	}
	r = e.run("-p", scriptedtest.Prompt("x", "say json out"), "--output-format", "json", "--model", "claude-opus-4-1")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res["result"] != "json out" || res["type"] != "result" {
		t.Errorf("json format: %q", r.stdout)
	}
	if mu, _ := res["modelUsage"].(map[string]any); mu["claude-opus-4-1"] == nil {
		t.Errorf("model not used: %v", res["modelUsage"])
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "x", "--output-format", "stream-json"}, "requires --verbose"},
		{[]string{"x"}, "--print"},
		{[]string{"-p", "x", "--output-format", "yaml"}, "Invalid output format"},
		{[]string{"-p", "--resume"}, "argument missing"},
	} {
		r := e.run(tc.args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %d %q %q", tc.args, r.code, r.stdout, r.stderr)
		}
	}

	// The prompt may come on stdin.
	cmd := exec.Command(e.bin, "-p", "--output-format", "stream-json", "--verbose")
	cmd.Dir, cmd.Env = e.repo, e.environ()
	cmd.Stdin = strings.NewReader(scriptedtest.Prompt("x", "echo-prompt"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := agent.ParseStream(bytes.NewReader(out))
	if got := sayings(evs); len(got) != 1 || !strings.HasSuffix(got[0], "#!asb-script\necho-prompt") {
		t.Errorf("stdin prompt: %q", got)
	}
	cmd = exec.Command(e.bin, "-p")
	cmd.Dir, cmd.Env, cmd.Stdin = e.repo, e.environ(), strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Input must be provided") {
		t.Errorf("no prompt: %v %q", err, out)
	}

	if r := e.run("--version"); r.code != 0 || !strings.Contains(r.stdout, "(Claude Code") {
		t.Errorf("--version: %q", r.stdout)
	}
}
