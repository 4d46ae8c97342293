package hook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/asb-dev/asb/sandbox/inbox"
)

func exists(paths ...string) func(string) bool {
	return func(p string) bool {
		for _, q := range paths {
			if p == q {
				return true
			}
		}
		return false
	}
}

func TestGate(t *testing.T) {
	pending := exists(inbox.QuestionFile)
	none := exists()
	calls := []Input{
		bash("go test ./..."),
		bash("cat /workspace/.agent.question"),
		tool("Read", "file_path", "/workspace/app/main.go"),
		tool("Write", "file_path", inbox.QuestionFile, "content", "a better question"),
		tool("Edit", "file_path", "/workspace/app/main.go"),
		tool("TodoWrite"),
		tool("mcp__github__create_issue"),
	}
	cases := []struct {
		name  string
		env   Env
		allow bool
	}{
		{"question pending, driver", Env{Exists: pending}, false},
		{"question pending, ASK_LANE empty", Env{AskLane: "", Exists: pending}, false},
		{"question pending, ASK_LANE=0", Env{AskLane: "0", Exists: pending}, false},
		{"question pending, ASK_LANE=true", Env{AskLane: "true", Exists: pending}, false},
		{"question pending, ask lane", Env{AskLane: "1", Exists: pending}, true},
		{"no question, driver", Env{Exists: none}, true},
		{"no question, ask lane", Env{AskLane: "1", Exists: none}, true},
		{"other state files only", Env{Exists: exists(inbox.TaskFile, inbox.RunsDir)}, true},
		{"cannot look (nil Exists)", Env{}, false},
		{"cannot look, ask lane", Env{AskLane: "1"}, true},
	}
	for _, tc := range cases {
		for _, in := range calls {
			d := Gate(in, tc.env)
			if d.Allow != tc.allow {
				t.Errorf("%s, %s: allow=%v, want %v", tc.name, in.ToolName, d.Allow, tc.allow)
			}
			if !d.Allow && (!strings.Contains(d.Reason, "end your turn") || !strings.Contains(d.Reason, inbox.QuestionFile)) {
				t.Errorf("%s: the reason must tell the agent to end its turn and wait: %q", tc.name, d.Reason)
			}
		}
	}
}

func TestAskLane(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		env  Env
		want bool
	}{
		{"ASK_LANE=1", bash("ls"), Env{AskLane: "1"}, true},
		{"driver", bash("ls"), Env{}, false},
		{"ASK_LANE=0", bash("ls"), Env{AskLane: "0"}, false},
		{"cwd /ask", bashIn("/ask", "ls"), Env{}, true},
		{"cwd under /ask", bashIn("/ask/x", "ls"), Env{}, true},
		{"cwd /asked", bashIn("/asked", "ls"), Env{}, false},
		{"transcript of the /ask project", Input{ToolName: "Bash", Cwd: "/workspace", TranscriptPath: "/root/.claude/projects/-ask/abc.jsonl"}, Env{}, true},
		{"transcript of a repo", Input{ToolName: "Bash", Cwd: "/workspace/app", TranscriptPath: "/root/.claude/projects/-workspace-app/abc.jsonl"}, Env{}, false},
	} {
		if got := AskLane(tc.in, tc.env); got != tc.want {
			t.Errorf("%s: AskLane=%v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseInput(t *testing.T) {
	good := `{"session_id":"s","transcript_path":"/root/.claude/projects/-workspace-app/s.jsonl","cwd":"/workspace/app",` +
		`"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"ls","description":"list","timeout":120000},"tool_use_id":"toolu_1"}`
	in, err := ParseInput([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if in.ToolName != "Bash" || in.Cwd != "/workspace/app" || in.ToolUseID != "toolu_1" || in.SessionID != "s" {
		t.Fatalf("parsed %+v", in)
	}
	if c, ok, err := in.str("command"); c != "ls" || !ok || err != nil {
		t.Fatalf("command = %q %v %v", c, ok, err)
	}
	if _, err := ParseInput([]byte(`{"tool_name":"TodoWrite"}`)); err != nil {
		t.Fatalf("tool_input may be absent: %v", err)
	}
	for name, bad := range map[string]string{
		"empty":             "",
		"blank":             "  \n",
		"not json":          "ls -la",
		"array":             `[{"tool_name":"Bash"}]`,
		"no tool_name":      `{"tool_input":{"command":"ls"}}`,
		"blank tool_name":   `{"tool_name":"  "}`,
		"tool_input string": `{"tool_name":"Bash","tool_input":"ls"}`,
		"other event":       `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}`,
		"two objects":       `{"tool_name":"Bash"}{"tool_name":"Bash"}`,
		"truncated":         `{"tool_name":"Bash","tool_input":{"command":"l`,
		"tool_name number":  `{"tool_name":7}`,
	} {
		if _, err := ParseInput([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %q", name, bad)
		}
	}
	huge := `{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("a", MaxInput) + `"}}`
	if _, err := ParseInput([]byte(huge)); err == nil {
		t.Error("accepted input over MaxInput")
	}
}

func TestRender(t *testing.T) {
	out := Render(Allowed())
	if out.ExitCode != 0 || len(out.Stdout) != 0 || len(out.Stderr) != 0 {
		t.Fatalf("allow should be silent with exit 0: %+v", out)
	}
	out = Render(Denied("no %s", "way"))
	if out.ExitCode != 2 {
		t.Fatalf("deny exit code = %d, want 2", out.ExitCode)
	}
	if string(out.Stderr) != "no way\n" {
		t.Fatalf("stderr = %q", out.Stderr)
	}
	var got struct {
		HookSpecificOutput map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Stdout, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no way"}
	for k, v := range want {
		if got.HookSpecificOutput[k] != v {
			t.Errorf("%s = %q, want %q", k, got.HookSpecificOutput[k], v)
		}
	}
	if out := Render(Decision{}); out.ExitCode != 2 || !strings.Contains(string(out.Stderr), "denied") {
		t.Errorf("a denial without a reason still needs one: %+v", out)
	}
}

func TestRun(t *testing.T) {
	pending := Env{Exists: exists(inbox.QuestionFile)}
	free := Env{Exists: exists()}
	in := func(tool, key, val string) []byte {
		b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": tool, "cwd": "/workspace/app",
			"tool_input": map[string]any{key: val}})
		return b
	}
	cases := []struct {
		name, mode string
		data       []byte
		env        Env
		code       int
	}{
		{"gate, pending", ModeGate, in("Bash", "command", "ls"), pending, 2},
		{"gate, free", ModeGate, in("Bash", "command", "ls"), free, 0},
		{"guard allows", ModeGuard, in("Bash", "command", "go test ./..."), free, 0},
		{"guard denies", ModeGuard, in("Bash", "command", "cat ~/.git-credentials"), free, 2},
		{"ro outside the lane is a no-op", ModeRO, in("Bash", "command", "rm -rf x"), free, 0},
		{"ro in the lane", ModeRO, in("Bash", "command", "rm -rf x"), Env{AskLane: "1", Exists: exists()}, 2},
		{"ro allows reads in the lane", ModeRO, in("Bash", "command", "git diff"), Env{AskLane: "1", Exists: exists()}, 0},
		{"malformed gate", ModeGate, []byte("not json"), free, 2},
		{"malformed guard", ModeGuard, []byte(`{"tool_input":{}}`), free, 2},
		{"malformed ro", ModeRO, []byte(""), free, 2},
		{"unknown mode", "allow-all", in("Bash", "command", "ls"), free, 2},
	}
	for _, tc := range cases {
		out := Run(tc.mode, tc.data, tc.env)
		if out.ExitCode != tc.code {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, out.ExitCode, tc.code, out.Stderr)
		}
		if tc.code == 2 && !json.Valid(out.Stdout) {
			t.Errorf("%s: deny stdout is not JSON: %q", tc.name, out.Stdout)
		}
	}
	out := Run(ModeGuard, []byte("{"), free)
	if !strings.Contains(string(out.Stderr), "malformed") || !strings.Contains(string(out.Stderr), "fail closed") {
		t.Errorf("malformed input reason: %q", out.Stderr)
	}
}

// A link planted towards the control plane does not launder a Write.
func TestRunResolvesLinks(t *testing.T) {
	env := Env{Exists: exists(), Realpath: func(p string) string {
		if p == "/workspace/app/innocent.json" {
			return "/root/.claude/settings.json"
		}
		return p
	}}
	data, _ := json.Marshal(map[string]any{"tool_name": "Write", "cwd": "/workspace/app",
		"tool_input": map[string]any{"file_path": "/workspace/app/innocent.json", "content": "{}"}})
	if out := Run(ModeGuard, data, env); out.ExitCode != 2 {
		t.Fatalf("Write through a link into settings was allowed")
	}
	data, _ = json.Marshal(map[string]any{"tool_name": "Write", "cwd": "/workspace/app",
		"tool_input": map[string]any{"file_path": "/workspace/app/other.json", "content": "{}"}})
	if out := Run(ModeGuard, data, env); out.ExitCode != 0 {
		t.Fatalf("ordinary Write denied: %s", out.Stderr)
	}
}
