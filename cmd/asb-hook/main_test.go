package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/asb-dev/asb/sandbox/hook"
	"github.com/asb-dev/asb/sandbox/inbox"
)

// buildHook builds the real binary the way asb ships it: static, no cgo.
func buildHook(t *testing.T, goos, goarch string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "asb-hook")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s/%s: %v\n%s", goos, goarch, err, out)
	}
	return bin
}

func TestBuildsStaticForBothArchitectures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		bin := buildHook(t, "linux", arch)
		if fi, err := os.Stat(bin); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: no binary: %v", arch, err)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, bin string, env []string, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// hookJSON is the input Claude Code writes to a PreToolUse hook's stdin.
func hookJSON(tool string, input map[string]any, cwd string) []byte {
	b, _ := json.Marshal(map[string]any{
		"session_id":      "0b6f7c8e-1111-2222-3333-444455556666",
		"transcript_path": "/root/.claude/projects/-workspace-app/0b6f7c8e.jsonl",
		"cwd":             cwd,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       tool,
		"tool_input":      input,
		"tool_use_id":     "toolu_01ABC",
	})
	return b
}

func assertDeny(t *testing.T, name string, r result, want string) {
	t.Helper()
	if r.code != 2 {
		t.Errorf("%s: exit %d, want 2 (stderr %q)", name, r.code, r.stderr)
		return
	}
	var out hook.HookOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Errorf("%s: stdout is not the hook JSON: %q", name, r.stdout)
		return
	}
	o := out.HookSpecificOutput
	if o.HookEventName != "PreToolUse" || o.PermissionDecision != "deny" || o.PermissionDecisionReason == "" {
		t.Errorf("%s: decision %+v", name, o)
	}
	if strings.TrimSpace(r.stderr) != o.PermissionDecisionReason {
		t.Errorf("%s: stderr and JSON reason differ:\n%q\n%q", name, r.stderr, o.PermissionDecisionReason)
	}
	if want != "" && !strings.Contains(o.PermissionDecisionReason, want) {
		t.Errorf("%s: reason %q lacks %q", name, o.PermissionDecisionReason, want)
	}
}

func assertAllow(t *testing.T, name string, r result) {
	t.Helper()
	if r.code != 0 || r.stdout != "" {
		t.Errorf("%s: exit %d stdout %q stderr %q, want a silent exit 0", name, r.code, r.stdout, r.stderr)
	}
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the hook runs on linux")
	}
	bin := buildHook(t, "linux", runtime.GOARCH)

	t.Run("help", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h", "help"} {
			r := runBin(t, bin, nil, nil, arg)
			if r.code != 0 || !strings.Contains(r.stdout, "asb-hook gate") || !strings.Contains(r.stdout, "permissionDecision") {
				t.Errorf("%s: %+v", arg, r)
			}
		}
	})
	t.Run("bad usage denies", func(t *testing.T) {
		for _, args := range [][]string{nil, {"allow"}, {"gate", "guard"}} {
			r := runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "ls"}, "/workspace/app"), args...)
			if r.code != 2 {
				t.Errorf("%v: exit %d, want 2", args, r.code)
			}
		}
	})

	t.Run("guard", func(t *testing.T) {
		assertAllow(t, "go test", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "go test ./...", "description": "run tests"}, "/workspace/app"), "guard"))
		assertAllow(t, "edit code", runBin(t, bin, nil, hookJSON("Edit", map[string]any{"file_path": "/workspace/app/main.go", "old_string": "a", "new_string": "b"}, "/workspace/app"), "guard"))
		assertDeny(t, "git credentials", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "cat ~/.git-credentials"}, "/workspace/app"), "guard"), "Credentials")
		assertDeny(t, "settings", runBin(t, bin, nil, hookJSON("Write", map[string]any{"file_path": inbox.ClaudeSettings, "content": "{}"}, "/workspace/app"), "guard"), "control plane")
		assertDeny(t, "run state", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "echo 0 > /workspace/.agent.runs/r1-1/exit"}, "/workspace/app"), "guard"), "control plane")
		assertDeny(t, "pkill", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "pkill asb-hook"}, "/workspace/app"), "guard"), "runtime")
	})

	t.Run("guard follows links", func(t *testing.T) {
		// A real link planted towards a protected path.
		dir := t.TempDir()
		target := filepath.Join(dir, "real")
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link")
		if err := os.Symlink("/etc", link); err != nil {
			t.Skip(err)
		}
		assertDeny(t, "write through link", runBin(t, bin, nil, hookJSON("Write", map[string]any{"file_path": link + "/hosts", "content": "x"}, dir), "guard"), "control plane")
		assertAllow(t, "write real dir", runBin(t, bin, nil, hookJSON("Write", map[string]any{"file_path": target + "/x", "content": "x"}, dir), "guard"))
	})

	t.Run("ro", func(t *testing.T) {
		lane := []string{inbox.AskLaneEnv + "=1"}
		assertAllow(t, "git diff", runBin(t, bin, lane, hookJSON("Bash", map[string]any{"command": "git diff --stat"}, "/ask"), "ro"))
		assertAllow(t, "Read", runBin(t, bin, lane, hookJSON("Read", map[string]any{"file_path": "/workspace/app/main.go"}, "/ask"), "ro"))
		assertDeny(t, "python -c", runBin(t, bin, lane, hookJSON("Bash", map[string]any{"command": "python3 -c 'open(\"x\",\"w\")'"}, "/ask"), "ro"), "read-only")
		assertDeny(t, "Edit", runBin(t, bin, lane, hookJSON("Edit", map[string]any{"file_path": "/workspace/app/main.go"}, "/ask"), "ro"), "read-only")
		// Outside the ask lane the ro hook has no opinion.
		assertAllow(t, "driver", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "rm -rf build"}, "/workspace/app"), "ro"))
		// A call from /ask is held to read-only even without ASK_LANE.
		assertDeny(t, "from /ask", runBin(t, bin, nil, hookJSON("Bash", map[string]any{"command": "rm -rf build"}, "/ask"), "ro"), "read-only")
	})

	t.Run("gate", func(t *testing.T) {
		// The gate looks at a fixed path, /workspace/.agent.question. Give
		// the binary a /workspace of its own: it is static, so an empty
		// tmpfs root with the binary and a bind-mounted temp dir is a
		// whole world, and nothing on the host is touched.
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			t.Skip("needs bwrap to give the binary its own /workspace")
		}
		ws := t.TempDir()
		inBox := func(env []string, stdin []byte) result {
			return runBin(t, bwrap, env, stdin, "--tmpfs", "/", "--ro-bind", bin, "/asb-hook", "--bind", ws, inbox.Workspace,
				"--proc", "/proc", "--dev", "/dev", "--unshare-pid", "/asb-hook", "gate")
		}
		if r := runBin(t, bwrap, nil, nil, "--tmpfs", "/", "--ro-bind", bin, "/asb-hook", "/asb-hook", "--help"); r.code != 0 {
			t.Skipf("bwrap cannot run here: %s", r.stderr)
		}
		in := hookJSON("Bash", map[string]any{"command": "go test ./..."}, "/workspace/app")
		assertAllow(t, "no question", inBox(nil, in))
		if err := os.WriteFile(filepath.Join(ws, ".agent.task"), []byte("task\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		assertAllow(t, "other state files", inBox(nil, in))
		if err := os.WriteFile(filepath.Join(ws, ".agent.question"), []byte("Postgres or SQLite?\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		assertDeny(t, "question pending", inBox(nil, in), "end your turn")
		assertDeny(t, "even a Write of the question", inBox(nil, hookJSON("Write", map[string]any{"file_path": inbox.QuestionFile, "content": "x"}, "/workspace/app")), "end your turn")
		assertDeny(t, "ASK_LANE=0", inBox([]string{inbox.AskLaneEnv + "=0"}, in), "end your turn")
		assertAllow(t, "ask lane", inBox([]string{inbox.AskLaneEnv + "=1"}, in))
		// Unreadable is not absent: a question file the hook cannot stat
		// still holds the gate shut.
		if err := os.Chmod(ws, 0); err == nil && os.Geteuid() != 0 {
			assertDeny(t, "unreadable workspace", inBox(nil, in), "end your turn")
		}
		_ = os.Chmod(ws, 0o755)
	})

	t.Run("malformed input is denied", func(t *testing.T) {
		for name, in := range map[string][]byte{
			"empty":        nil,
			"not json":     []byte("cat ~/.git-credentials"),
			"no tool_name": []byte(`{"tool_input":{"command":"ls"}}`),
			"wrong event":  []byte(`{"hook_event_name":"Stop","tool_name":"Bash","tool_input":{}}`),
			"truncated":    hookJSON("Bash", map[string]any{"command": "ls"}, "/w")[:30],
			"oversized":    append(append([]byte(`{"tool_name":"Bash","tool_input":{"command":"`), bytes.Repeat([]byte("a"), hook.MaxInput)...), []byte(`"}}`)...),
		} {
			for _, mode := range []string{"gate", "ro", "guard"} {
				assertDeny(t, name+"/"+mode, runBin(t, bin, []string{inbox.AskLaneEnv + "=1"}, in, mode), "")
			}
		}
	})
}

// The in-process run covers the same paths without a build.
func TestRunInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"guard"}, bytes.NewReader(hookJSON("Bash", map[string]any{"command": "printenv"}, "/workspace/app")), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "printenv") {
		t.Fatalf("code %d stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage") {
		t.Fatalf("help: %d %q", code, out.String())
	}
	if code := run(nil, bytes.NewReader(nil), &out, &errb); code != 2 {
		t.Fatalf("no mode: %d", code)
	}
}

func TestRealpath(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(dir, "l")); err != nil {
		t.Skip(err)
	}
	if got := realpath(filepath.Join(dir, "l", "nonexistent", "x")); got != "/etc/nonexistent/x" {
		t.Errorf("realpath through a link = %q", got)
	}
	if got := realpath("/nonexistent/a/b"); got != "/nonexistent/a/b" {
		t.Errorf("realpath of a missing path = %q", got)
	}
}
