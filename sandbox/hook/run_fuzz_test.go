package hook

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// linkedSecret is where FuzzRun's symbolic links point: any path with
// "lnk" in it resolves to a credential.
const linkedSecret = "/root/.git-credentials"

// FuzzRun feeds the whole hook what Claude Code could write on its stdin,
// in every mode and lane. Properties: the answer is either "no objection"
// (exit 0, nothing printed) or a deny on both channels (exit 2, the reason
// on stderr and the same reason in a PreToolUse deny on stdout); input it
// cannot read is denied (fail closed); no predicate panics (Run would turn
// the panic into a deny, hiding the bug); the gate denies every driver
// tool while a question is pending; a file tool whose path is a link to a
// credential is denied by the guard; and the same input gets the same
// answer. The seed corpus in testdata/fuzz/FuzzRun holds the predicates'
// table cases as Claude Code sends them.
func FuzzRun(f *testing.F) {
	full := `{"session_id":"abc123","transcript_path":"/root/.claude/projects/x/abc123.jsonl","cwd":"/workspace/app",` +
		`"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"go test ./...","description":"Run the tests"},"tool_use_id":"toolu_01"}`
	f.Add(uint8(2), false, false, []byte(full))
	f.Add(uint8(0), false, true, []byte(full))
	f.Add(uint8(1), true, false, []byte(`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"lnk"}}`))
	f.Add(uint8(2), false, false, []byte(`{"tool_name":"Write","tool_input":{"file_path":"/workspace/lnk","content":"x"}}`))
	f.Add(uint8(2), false, false, []byte(`{"tool_name":"Edit","tool_input":{"file_path":7}}`))
	f.Add(uint8(3), false, false, []byte(`{"tool_name":"Bash"} {}`))
	f.Add(uint8(2), false, false, []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash"}`))
	for i, c := range append(append(append([]guardCase(nil), guardHostile...), guardOrdinary...), roBypasses...) {
		b, err := json.Marshal(c.in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), i%2 == 0, i%3 == 0, b)
	}
	modes := []string{ModeGate, ModeRO, ModeGuard, "bogus"}
	f.Fuzz(func(t *testing.T, mode uint8, askLane, pending bool, data []byte) {
		m := modes[int(mode)%len(modes)]
		env := Env{
			Exists: func(string) bool { return pending },
			Realpath: func(p string) string {
				if strings.Contains(p, "lnk") {
					return linkedSecret
				}
				return p
			},
		}
		if askLane {
			env.AskLane = "1"
		}
		out := Run(m, data, env)
		if again := Run(m, data, env); !reflect.DeepEqual(again, out) {
			t.Fatalf("two answers to one input: %+v and %+v", out, again)
		}
		switch out.ExitCode {
		case 0:
			if len(out.Stdout) != 0 || len(out.Stderr) != 0 {
				t.Fatalf("allowed with output: %q %q", out.Stdout, out.Stderr)
			}
		case 2:
			var ho HookOutput
			if err := json.Unmarshal(out.Stdout, &ho); err != nil {
				t.Fatalf("deny JSON: %v: %q", err, out.Stdout)
			}
			reason := strings.TrimSuffix(string(out.Stderr), "\n")
			if ho.HookSpecificOutput.PermissionDecision != "deny" || ho.HookSpecificOutput.HookEventName != "PreToolUse" ||
				reason == "" || ho.HookSpecificOutput.PermissionDecisionReason != reason {
				t.Fatalf("deny is not one on both channels: %+v / %q", ho, out.Stderr)
			}
			if strings.Contains(reason, "internal error") {
				t.Fatalf("a predicate panicked: %s", reason)
			}
		default:
			t.Fatalf("exit code %d", out.ExitCode)
		}
		in, err := ParseInput(data)
		allowed := out.ExitCode == 0
		if err != nil || m == "bogus" {
			if allowed {
				t.Fatalf("mode %q allowed input it cannot use (%v)", m, err)
			}
			return
		}
		if m == ModeGate && pending && !askLane && allowed {
			t.Fatalf("the gate allowed %s while a question is pending", in.ToolName)
		}
		if m == ModeGuard && allowed && in.ToolName != "Bash" {
			for _, key := range []string{"file_path", "notebook_path", "path"} {
				if p, ok := in.ToolInput[key].(string); ok && strings.Contains(p, "lnk") {
					t.Fatalf("the guard allowed %s of %q, a link to %s", in.ToolName, p, linkedSecret)
				}
			}
		}
	})
}

// The fuzz property above relies on the guard denying the link target.
func TestLinkedSecretIsDenied(t *testing.T) {
	if d := Guard(tool("Read", "file_path", linkedSecret)); d.Allow {
		t.Fatal("the guard allows reading " + linkedSecret)
	}
	if out := Run(ModeGuard, mustJSON(t, tool("Write", "file_path", "/workspace/lnk")), Env{Realpath: func(string) string { return linkedSecret }}); out.ExitCode != 2 || !bytes.Contains(out.Stdout, []byte("deny")) {
		t.Fatalf("a link to a credential laundered a Write: %+v", out)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
