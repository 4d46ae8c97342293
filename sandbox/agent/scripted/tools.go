package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Tool inputs, shaped like Claude Code's.
type bashInput struct {
	Command     string `json:"command"`
	Description string `json:"description,omitempty"`
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

type readInput struct {
	FilePath string `json:"file_path"`
}

type todoInput struct {
	Todos []todo `json:"todos"`
}

type bashResult struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	Interrupted bool   `json:"interrupted"`
	IsImage     bool   `json:"isImage"`
}

// outcome is what a tool call returns to the model.
type outcome struct {
	content string
	isError bool
	// result is the event's tool_use_result (Claude Code's structured
	// tool output).
	result any
}

func toolError(msg string) outcome {
	return outcome{content: "<tool_use_error>" + msg + "</tool_use_error>", isError: true, result: "Error: " + msg}
}

// Tools that need no permission in -p mode, and the file-editing tools
// (allowed by acceptEdits and covered by Edit(...) rules).
var (
	readOnlyTools = map[string]bool{"Read": true, "Glob": true, "Grep": true, "TodoWrite": true, "LS": true, "NotebookRead": true}
	editTools     = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}
)

// permitted applies --disallowedTools, the permission mode and
// --allowedTools the way `claude -p` does (it cannot prompt, so anything
// not allowed is denied). A compound Bash command is allowed only if each
// of its subcommands is, and denied if any is.
func (t *turn) permitted(tool string, in map[string]any) bool {
	for _, r := range t.o.DisallowedTools {
		if t.ruleMatches(r, tool, in) {
			return false
		}
	}
	if readOnlyTools[tool] {
		return true
	}
	switch t.o.PermissionMode {
	case "bypassPermissions":
		return true
	case "acceptEdits":
		if editTools[tool] {
			return true
		}
	case "plan":
		return false
	}
	if tool == "Bash" {
		cmd, _ := in["command"].(string)
		for _, sub := range subcommands(cmd) {
			ok := false
			for _, r := range t.o.AllowedTools {
				if t.ruleMatches(r, tool, map[string]any{"command": sub}) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}
	for _, r := range t.o.AllowedTools {
		if t.ruleMatches(r, tool, in) {
			return true
		}
	}
	return false
}

// ruleMatches matches a permission rule: "Tool", "Tool(*)", Bash command
// rules "Bash(git commit:*)" (prefix) and "Bash(npm test)" (exact), which
// match if any subcommand of a compound command does, and file rules
// "Write(src/**)", "Edit(*.md)" (glob against the path, absolute or
// relative to the cwd; Edit rules cover every file-editing tool).
func (t *turn) ruleMatches(rule, tool string, in map[string]any) bool {
	name, spec, hasSpec := strings.Cut(rule, "(")
	spec = strings.TrimSuffix(spec, ")")
	if name != tool && !(name == "Edit" && editTools[tool]) {
		return false
	}
	if !hasSpec || spec == "" || spec == "*" {
		return true
	}
	if tool == "Bash" {
		cmd, _ := in["command"].(string)
		for _, sub := range subcommands(cmd) {
			if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
				if strings.HasPrefix(sub, prefix) {
					return true
				}
			} else if sub == spec {
				return true
			}
		}
		return false
	}
	path, _ := in["file_path"].(string)
	if path == "" {
		return false
	}
	rel, err := filepath.Rel(t.cwd, path)
	if err != nil {
		rel = path
	}
	for _, p := range []string{path, rel} {
		if dir, ok := strings.CutSuffix(spec, "/**"); ok {
			if p == dir || strings.HasPrefix(p, dir+"/") {
				return true
			}
		}
		if ok, _ := filepath.Match(spec, p); ok || spec == p {
			return true
		}
	}
	return false
}

// subcommands splits a shell command on &&, ||, ;, | and newlines outside
// quotes, trimming each part (a simple approximation of Claude Code's
// command splitting).
func subcommands(cmd string) []string {
	var (
		out   []string
		cur   strings.Builder
		quote byte
	)
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(c)
				i++
				c = cmd[i]
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\' && i+1 < len(cmd):
			cur.WriteByte(c)
			i++
			c = cmd[i]
		case c == ';' || c == '\n' || c == '|' || c == '&' && i+1 < len(cmd) && cmd[i+1] == '&':
			if c == '&' || (c == '|' && i+1 < len(cmd) && cmd[i+1] == '|') {
				i++
			}
			flush()
			continue
		}
		cur.WriteByte(c)
	}
	flush()
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// hookCommand is one PreToolUse hook.
type hookCommand struct {
	Command string
	Matcher string
	Timeout time.Duration
	Source  string
}

const defaultHookTimeout = 60 * time.Second

// settingsFile is the part of a Claude Code settings file we read.
type settingsFile struct {
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string  `json:"type"`
			Command string  `json:"command"`
			Timeout float64 `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// loadHooks collects the PreToolUse hooks: $ASB_HOOK, then those of the
// settings files the setting sources select.
func (t *turn) loadHooks() {
	if cmd := strings.TrimSpace(os.Getenv("ASB_HOOK")); cmd != "" {
		t.hooks = append(t.hooks, hookCommand{Command: cmd, Timeout: defaultHookTimeout, Source: "ASB_HOOK"})
	}
	for _, src := range t.o.SettingSources {
		var path string
		switch src {
		case "user":
			path = filepath.Join(t.home, ".claude", "settings.json")
		case "project":
			path = filepath.Join(t.cwd, ".claude", "settings.json")
		case "local":
			path = filepath.Join(t.cwd, ".claude", "settings.local.json")
		default:
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var sf settingsFile
		if err := json.Unmarshal(data, &sf); err != nil {
			fmt.Fprintf(t.stderr, "Warning: ignoring invalid settings file %s: %v\n", path, err)
			continue
		}
		for _, m := range sf.Hooks["PreToolUse"] {
			for _, h := range m.Hooks {
				if h.Type != "command" || strings.TrimSpace(h.Command) == "" {
					continue
				}
				timeout := defaultHookTimeout
				if h.Timeout > 0 {
					timeout = time.Duration(h.Timeout * float64(time.Second))
				}
				t.hooks = append(t.hooks, hookCommand{Command: h.Command, Matcher: m.Matcher, Timeout: timeout, Source: path})
			}
		}
	}
}

func matcherMatches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	if err != nil {
		return matcher == tool
	}
	return re.MatchString(tool)
}

// hookInput is Claude Code's PreToolUse hook input.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// hookOutput is the JSON a hook may print on stdout (exit 0).
type hookOutput struct {
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// verdict is the combined answer of the hooks for one tool call.
type verdict struct {
	deny       bool
	reason     string
	allow      bool
	stop       bool
	stopReason string
}

// preToolUse runs every matching hook. A deny wins over an allow.
func (t *turn) preToolUse(tool, id string, input json.RawMessage) verdict {
	var v verdict
	for _, h := range t.hooks {
		if !matcherMatches(h.Matcher, tool) {
			continue
		}
		in, _ := json.Marshal(hookInput{
			SessionID:      t.sessionID,
			TranscriptPath: t.transcriptPath(),
			Cwd:            t.cwd,
			PermissionMode: t.o.PermissionMode,
			HookEventName:  "PreToolUse",
			ToolName:       tool,
			ToolInput:      input,
			ToolUseID:      id,
		})
		code, stdout, stderr, err := t.runHook(h, in)
		switch {
		case err != nil:
			fmt.Fprintf(t.stderr, "PreToolUse:%s hook error: [%s]: %v\n", tool, h.Command, err)
		case code == 2:
			if !v.deny {
				msg := strings.TrimSpace(stderr)
				if msg == "" {
					msg = "No stderr output"
				}
				v.deny, v.reason = true, fmt.Sprintf("PreToolUse:%s hook error: [%s]: %s", tool, h.Command, msg)
			}
		case code != 0:
			fmt.Fprintf(t.stderr, "PreToolUse:%s hook error: [%s]: exit %d: %s\n", tool, h.Command, code, strings.TrimSpace(stderr))
		default:
			out := strings.TrimSpace(stdout)
			if !strings.HasPrefix(out, "{") {
				continue
			}
			var ho hookOutput
			if err := json.Unmarshal([]byte(out), &ho); err != nil {
				fmt.Fprintf(t.stderr, "PreToolUse:%s hook [%s] printed invalid JSON: %v\n", tool, h.Command, err)
				continue
			}
			decision, reason := ho.HookSpecificOutput.PermissionDecision, ho.HookSpecificOutput.PermissionDecisionReason
			if decision == "" {
				switch ho.Decision {
				case "block":
					decision, reason = "deny", ho.Reason
				case "approve":
					decision, reason = "allow", ho.Reason
				}
			}
			switch decision {
			case "deny":
				if !v.deny {
					if reason == "" {
						reason = fmt.Sprintf("Hook PreToolUse:%s denied this tool", tool)
					}
					v.deny, v.reason = true, reason
				}
			case "allow":
				v.allow = true
			}
			if ho.Continue != nil && !*ho.Continue {
				v.stop = true
				if v.stopReason == "" {
					v.stopReason = ho.StopReason
				}
			}
		}
	}
	return v
}

func (t *turn) runHook(h hookCommand, input []byte) (code int, stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir = t.cwd
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+t.cwd)
	cmd.Stdin = bytes.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, out.String(), errb.String(), fmt.Errorf("timed out after %s", h.Timeout)
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String(), nil
	case err != nil:
		return -1, out.String(), errb.String(), err
	}
	return 0, out.String(), errb.String(), nil
}

// transcriptPath is where Claude Code would keep the session transcript
// (~/.claude/projects/<cwd with every non-alphanumeric as ->/<id>.jsonl).
// The scripted agent writes none; hooks get the path for fidelity.
func (t *turn) transcriptPath() string {
	enc := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, t.cwd)
	return filepath.Join(t.home, ".claude", "projects", enc, t.sessionID+".jsonl")
}

// bashTimeout is Claude Code's maximum Bash tool timeout.
const bashTimeout = 10 * time.Minute

// bash runs a command like the Bash tool: sh -c in the cwd, stdin from
// /dev/null, stdout and stderr captured.
func (t *turn) bash(command string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), bashTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = t.cwd
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	stdout := strings.TrimRight(out.String(), "\n")
	stderr := strings.TrimRight(errb.String(), "\n")
	text := stdout
	if stderr != "" {
		if text != "" {
			text += "\n"
		}
		text += stderr
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		msg := fmt.Sprintf("Command timed out after %s", bashTimeout)
		return outcome{content: msg + "\n" + text, isError: true, result: "Error: " + msg}
	case errors.As(err, &ee):
		msg := fmt.Sprintf("Exit code %d", ee.ExitCode())
		if text != "" {
			msg += "\n" + text
		}
		return outcome{content: msg, isError: true, result: "Error: " + msg}
	case err != nil:
		return toolError(err.Error())
	}
	return outcome{content: text, result: bashResult{Stdout: stdout, Stderr: stderr}}
}

// abs resolves a script path against the cwd.
func (t *turn) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(t.cwd, p)
}

// writeFile is the Write tool: it creates parent directories and reports
// a creation or an update.
func writeFile(path, content string) outcome {
	_, statErr := os.Stat(path)
	existed := statErr == nil
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return toolError(err.Error())
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return toolError(err.Error())
	}
	kind, msg := "create", "File created successfully at: "+path
	if existed {
		kind, msg = "update", fmt.Sprintf("The file %s has been updated successfully.", path)
	}
	return outcome{content: msg, result: map[string]any{"type": kind, "filePath": path, "content": content}}
}

// readFile is the Read tool: numbered lines, as `cat -n` prints them.
func readFile(path string) outcome {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return toolError("File does not exist.")
	}
	if err != nil {
		return toolError(err.Error())
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 256<<10))
	if err != nil {
		return toolError(err.Error())
	}
	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
	}
	return outcome{content: strings.TrimSuffix(b.String(), "\n"),
		result: map[string]any{"type": "text", "file": map[string]any{"filePath": path, "content": string(data), "numLines": len(lines)}}}
}
