// Package hook holds the predicates behind asb-hook, the PreToolUse hooks
// asb installs in every box. They are pure functions of Claude Code's hook
// input (plus, for the gate, whether the question file exists and which
// lane is asking), so they can be table-tested without a box:
//
//   - Gate denies every tool while a question is pending, so the agent ends
//     its turn instead of carrying on without the answer (skipped in the ask
//     lane, whose co-pilot must keep working while the driver waits).
//   - ReadOnly is the ask lane's read-only gate: an allowlist of reading
//     tools and of shell commands that only read.
//   - Guard is a deterministic denylist applied to every lane: no edits to
//     the control plane, no credential exfiltration, no runtime
//     reconfiguration. There is no model in the loop, so a prompt injection
//     cannot talk it round.
//
// The wire format (what Claude Code sends on stdin, what it expects on
// stdout/stderr and as exit code) lives in this file; Run ties it together
// for the binary.
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/asb-dev/asb/sandbox/inbox"
)

// Input mirrors the JSON Claude Code writes to a PreToolUse command hook's
// stdin. Field names follow the Claude Code hooks reference: the common
// fields (session_id, transcript_path, cwd, permission_mode,
// hook_event_name) plus the PreToolUse ones (tool_name, tool_input,
// tool_use_id). tool_input's shape depends on the tool (Bash: command;
// Read/Edit/MultiEdit/Write: file_path; NotebookEdit/NotebookRead:
// notebook_path; Grep/Glob/LS: path, pattern), so it stays a generic map
// and the predicates read the fields they know.
type Input struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode,omitempty"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id,omitempty"`
}

// MaxInput bounds what the binary reads from stdin. A Write of a large file
// carries its content in tool_input, so this is generous; anything bigger
// is denied rather than half-read.
const MaxInput = 4 << 20

// ParseInput decodes and validates hook input. Anything that is not a
// PreToolUse event naming a tool is an error: the caller denies on error,
// because a hook that cannot read its input must not wave the call through.
func ParseInput(data []byte) (Input, error) {
	var in Input
	if len(bytes.TrimSpace(data)) == 0 {
		return in, errors.New("empty input")
	}
	if len(data) > MaxInput {
		return in, fmt.Errorf("input larger than %d bytes", MaxInput)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return Input{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return Input{}, errors.New("trailing data after the JSON object")
	}
	if in.HookEventName != "" && in.HookEventName != "PreToolUse" {
		return Input{}, fmt.Errorf("hook_event_name is %q, want PreToolUse", in.HookEventName)
	}
	if strings.TrimSpace(in.ToolName) == "" {
		return Input{}, errors.New("tool_name is missing")
	}
	if in.ToolInput == nil {
		// Some tools take no arguments; an absent tool_input is an empty one.
		in.ToolInput = map[string]any{}
	}
	return in, nil
}

// str returns tool_input[key] as a string. ok is false when the key is
// absent; err is set when it is present with another type (a malformed
// call the predicates deny).
func (in Input) str(key string) (s string, ok bool, err error) {
	v, present := in.ToolInput[key]
	if !present || v == nil {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, fmt.Errorf("tool_input.%s is not a string", key)
	}
	return s, true, nil
}

// Decision is a predicate's verdict. Allow means "no objection": the call
// goes on through Claude Code's normal permission flow; the hooks never
// grant anything the settings would not.
type Decision struct {
	Allow  bool
	Reason string
}

// Allowed is the no-objection decision.
func Allowed() Decision { return Decision{Allow: true} }

// Denied builds a denial; the reason is shown to the agent, so it says what
// to do instead.
func Denied(format string, args ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, args...)}
}

// Output is what the hook process writes and how it exits.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// HookOutput is the JSON a PreToolUse hook prints on stdout.
type HookOutput struct {
	HookSpecificOutput PreToolUseOutput `json:"hookSpecificOutput"`
}

// PreToolUseOutput carries the permission decision ("allow", "deny" or
// "ask") and the reason Claude Code shows to the model for a denial.
type PreToolUseOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

// Render turns a decision into the hook's output.
//
// Allow prints nothing and exits 0: "no decision", so the call continues
// through the normal permission flow (printing "allow" would skip the
// permission prompt and widen what the settings permit).
//
// Deny says it on both channels Claude Code knows: the hookSpecificOutput
// JSON with permissionDecision "deny" on stdout, and exit code 2 with the
// reason on stderr. Exit 2 is the oldest and simplest blocking contract
// (stderr becomes the reason shown to the model, stdout is then ignored);
// the JSON covers versions that read the structured decision. Either one
// alone blocks, so a change in one contract does not turn the guard into a
// no-op.
func Render(d Decision) Output {
	if d.Allow {
		return Output{ExitCode: 0}
	}
	reason := d.Reason
	if reason == "" {
		reason = "denied by asb-hook"
	}
	out, _ := json.Marshal(HookOutput{HookSpecificOutput: PreToolUseOutput{
		HookEventName:            "PreToolUse",
		PermissionDecision:       "deny",
		PermissionDecisionReason: reason,
	}})
	return Output{
		Stdout:   append(out, '\n'),
		Stderr:   []byte(reason + "\n"),
		ExitCode: 2,
	}
}

// Env is what the gate needs from the box besides the hook input.
type Env struct {
	// AskLane is the value of ASK_LANE in the hook's environment. Claude
	// Code runs hooks with its own environment, which the launcher sets:
	// "1" for the co-pilot, unset for the driver.
	AskLane string
	// Exists reports whether a path exists. A nil Exists counts as "yes"
	// for the question file: without a way to look, the gate fails closed.
	Exists func(path string) bool
	// Realpath, when set, resolves symbolic links in an absolute path.
	// Structured tools (Write, Edit, Read, ...) are checked on the path as
	// given and again on the path it resolves to, so a link planted
	// towards the control plane or a credential does not launder the call.
	Realpath func(path string) string
}

// withResolvedPaths runs f on the input and, when the file tool's path
// resolves elsewhere, again on the resolved path.
func withResolvedPaths(in Input, env Env, f func(Input) Decision) Decision {
	d := f(in)
	if !d.Allow || env.Realpath == nil || in.ToolName == "Bash" {
		return d
	}
	for _, key := range []string{"file_path", "notebook_path", "path"} {
		p, ok, err := in.str(key)
		if err != nil || !ok || p == "" {
			continue
		}
		abs := toolPath(p, toolCwd(in.Cwd))
		rp := env.Realpath(abs)
		if rp == "" || rp == abs {
			continue
		}
		in2 := in
		in2.ToolInput = make(map[string]any, len(in.ToolInput))
		for k, v := range in.ToolInput {
			in2.ToolInput[k] = v
		}
		in2.ToolInput[key] = rp
		if d2 := f(in2); !d2.Allow {
			return d2
		}
	}
	return d
}

// Gate denies every tool while the driver's question is pending. The agent
// asked because it could not go on; carrying on anyway (or rewriting the
// question) would race the answer. The ask lane is exempt: the co-pilot
// answers questions about a waiting driver and must be able to read.
func Gate(in Input, env Env) Decision {
	if env.AskLane == "1" {
		return Allowed()
	}
	if env.Exists != nil && !env.Exists(inbox.QuestionFile) {
		return Allowed()
	}
	return Denied("asb: a question is pending in %s. Every tool is blocked until it is answered. "+
		"Stop now: end your turn without calling any more tools and wait; the answer will arrive "+
		"as your next message.", inbox.QuestionFile)
}

// AskLane reports whether the call comes from the read-only co-pilot. The
// launcher sets ASK_LANE=1, which is the primary signal; the co-pilot also
// starts in /ask, so a cwd under /ask or a transcript filed under the /ask
// project (Claude Code keys transcripts by the launch directory, and that
// does not follow a later cd) count too. The extra signals can only make a
// call stricter (ro applies), never laxer: the gate's exemption looks at
// ASK_LANE alone.
func AskLane(in Input, env Env) bool {
	if env.AskLane == "1" {
		return true
	}
	if c := path.Clean("/" + in.Cwd); in.Cwd != "" && (c == inbox.AskDir || strings.HasPrefix(c, inbox.AskDir+"/")) {
		return true
	}
	return strings.Contains(in.TranscriptPath, "/projects/-ask/")
}

// Modes the binary serves.
const (
	ModeGate  = "gate"
	ModeRO    = "ro"
	ModeGuard = "guard"
)

// Run is the whole hook: parse the input, apply the mode's predicate,
// render the result. Malformed input, an unknown mode or a panic in a
// predicate all deny: a hook that cannot decide must not allow.
func Run(mode string, data []byte, env Env) (out Output) {
	defer func() {
		if r := recover(); r != nil {
			out = Render(Denied("asb-hook %s: internal error (%v); denying to stay safe. "+
				"Try a simpler form of the same call.", mode, r))
		}
	}()
	in, err := ParseInput(data)
	if err != nil {
		return Render(Denied("asb-hook %s: malformed hook input (%v); denying (fail closed).", mode, err))
	}
	switch mode {
	case ModeGate:
		return Render(Gate(in, env))
	case ModeRO:
		if !AskLane(in, env) {
			return Render(Allowed())
		}
		return Render(withResolvedPaths(in, env, ReadOnly))
	case ModeGuard:
		return Render(withResolvedPaths(in, env, Guard))
	}
	return Render(Denied("asb-hook: unknown mode %q (want gate, ro or guard); denying.", mode))
}
