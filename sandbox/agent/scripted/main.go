// Command scripted is a stand-in for Claude Code in tests: it takes the
// same command line as `claude -p … --output-format stream-json --verbose`
// and writes a genuine stream-json event stream (system/init, assistant
// text and tool_use messages, user tool_result messages, TodoWrite calls
// and a final result), but instead of asking a model it follows a script
// embedded in the prompt. It really does what the script says — files are
// written, shell commands and git commits run in the working directory,
// questions are written to the in-box question file — and it calls
// PreToolUse hooks the way Claude Code does, so end-to-end tests can drive
// the controller, the launcher and the hook binary without a model.
//
// # Script
//
// The script is every line after a line reading `#!asb-script` in the
// prompt (text before it is the task, ignored), up to a line reading `---`
// (context a surface appends). One directive a line;
// blank lines and lines starting with `#` are skipped; leading blanks are
// ignored. In the arguments marked (esc), `\n`, `\t` and `\\` stand for a
// newline, a tab and a backslash.
//
//	say TEXT              assistant text (esc)
//	todo ITEM; ITEM; …    TodoWrite with these items (esc); an item may start
//	                      with "[x] " (completed), "[>] " or "[~] " (in
//	                      progress) or "[ ] " (pending, the default)
//	write PATH [CONTENT]  Write tool: create/overwrite PATH (no blanks; relative to the
//	                      cwd, or absolute) with CONTENT (esc)
//	append PATH CONTENT   Write tool with the file's old content plus CONTENT (esc)
//	read PATH             Read tool
//	run SHELLCMD          Bash tool: sh -c SHELLCMD in the cwd; the result holds
//	                      stdout and stderr and, on failure, "Exit code N"
//	commit MESSAGE        Bash tool: git add -A && git commit -m MESSAGE (esc)
//	env NAME              Bash tool reporting whether $NAME is set and its
//	                      length in bytes, never its value
//	ask QUESTION          Write tool: QUESTION (esc) into the question file,
//	                      then end the turn (result event, exit 0); the next
//	                      turn (--resume) continues after this line
//	echo-prompt           say the prompt exactly as received
//	echo-system-prompt    say the --append-system-prompt text
//	echo-flags            say the parsed command line as JSON
//	sleep DURATION        pause (Go duration: 500ms, 2s), emitting nothing
//	emit N                N assistant text messages, back to back
//	stderr TEXT           write TEXT (esc) and a newline to stderr
//	fail [CODE [MESSAGE]] error result (error_during_execution), exit CODE
//	                      (default 1)
//	crash [CODE]          exit CODE (default 1) at once, without a result
//
// A prompt without `#!asb-script` gets a one-line "did the task" answer.
// A malformed script is reported as an error result before anything runs.
//
// # Turns and state
//
// Each invocation is one turn. The conversation state — the directives
// still to run, the answers received, the turn count, the cwd — is kept in
// $HOME/.scripted-agent/<session id>.json and updated after every
// directive. `--resume ID` (or `-c`, the latest session of this cwd)
// loads it; like Claude Code, resuming from another cwd fails with "No
// conversation found with session ID: ID". A resumed turn whose prompt
// holds a script runs that script; otherwise, if directives remain after
// an `ask`, it says "answer received: PROMPT" and runs them; otherwise it
// gives the "did the task" answer. The session id stays the same across
// turns (set SCRIPTED_AGENT_FORK_SESSION_ON_RESUME=1 to report a fresh id
// on resumed turns instead, as some Claude Code releases do).
//
// # Tools, permissions and hooks
//
// Before each tool call it runs the PreToolUse hooks: the command in
// $ASB_HOOK (run with sh -c, for every tool) and the PreToolUse hooks of
// the settings files that --setting-sources selects (user:
// $HOME/.claude/settings.json; project and local: .claude/settings.json
// and .claude/settings.local.json in the cwd; all three by default). A
// hook gets Claude Code's hook input JSON on stdin; exit 2 (stderr is the
// reason) or a JSON answer with hookSpecificOutput.permissionDecision
// "deny" (or the legacy decision "block") denies the call, "allow" (or
// "approve") skips the permission check, `"continue": false` ends the turn
// after the call. Without a hook's allow, Bash and Write need permission
// as in `claude -p`: --allowedTools rules ("Bash", "Bash(git commit:*)",
// "Write"), --permission-mode acceptEdits (Write) or bypassPermissions
// (--dangerously-skip-permissions); --disallowedTools always denies.
// TodoWrite and Read need none. A denied call gets an is_error tool_result
// with the reason and is listed in the result's permission_denials.
//
// Usage and cost are synthetic but consistent: per-message usage, summed
// on the result and priced at Sonnet list prices.
//
// The question file is /workspace/.agent.question (inbox.QuestionFile);
// SCRIPTED_AGENT_QUESTION_FILE overrides it for tests outside a box.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// version is what --version prints, in Claude Code's format.
const version = "2.0.0 (Claude Code; asb scripted agent)"

// options is the parsed command line.
type options struct {
	Print              bool     `json:"print"`
	Prompt             string   `json:"-"`
	OutputFormat       string   `json:"output_format"`
	InputFormat        string   `json:"input_format,omitempty"`
	Verbose            bool     `json:"verbose"`
	Resume             string   `json:"resume,omitempty"`
	Continue           bool     `json:"continue,omitempty"`
	SessionID          string   `json:"session_id,omitempty"`
	AppendSystemPrompt string   `json:"append_system_prompt,omitempty"`
	SystemPrompt       string   `json:"system_prompt,omitempty"`
	AllowedTools       []string `json:"allowed_tools,omitempty"`
	DisallowedTools    []string `json:"disallowed_tools,omitempty"`
	Tools              []string `json:"tools,omitempty"`
	SettingSources     []string `json:"setting_sources"`
	Model              string   `json:"model,omitempty"`
	PermissionMode     string   `json:"permission_mode"`
	Ignored            []string `json:"ignored,omitempty"`
	Version            bool     `json:"-"`
	Help               bool     `json:"-"`
}

// Flags by arity, as Claude Code's CLI declares them.
var (
	boolFlags = map[string]bool{
		"-p": true, "--print": true, "--verbose": true, "-c": true, "--continue": true,
		"--dangerously-skip-permissions": true, "--allow-dangerously-skip-permissions": true,
		"--include-partial-messages": true, "--replay-user-messages": true,
		"--strict-mcp-config": true, "--fork-session": true, "--ide": true, "--mcp-debug": true,
		"-d": true, "--debug": true, "-v": true, "--version": true, "-h": true, "--help": true,
	}
	valueFlags = map[string]bool{
		"--output-format": true, "--input-format": true, "-r": true, "--resume": true,
		"--session-id": true, "--append-system-prompt": true, "--system-prompt": true,
		"--setting-sources": true, "--model": true, "--fallback-model": true,
		"--permission-mode": true, "--max-turns": true, "--settings": true,
		"--permission-prompt-tool": true, "--agents": true, "--agent": true,
		"--json-schema": true, "--max-budget-usd": true,
	}
	// listFlags take every following argument up to the next flag, which is
	// why launchers put --allowedTools last.
	listFlags = map[string]bool{
		"--allowedTools": true, "--allowed-tools": true, "--disallowedTools": true,
		"--disallowed-tools": true, "--tools": true, "--add-dir": true,
		"--mcp-config": true, "--betas": true, "--plugin-dir": true,
	}
)

// parseArgs reads Claude Code's command line. An unknown `--flag` takes
// the next argument as its value unless that starts with "-" (or the flag
// is written --flag=value); an unknown `-x` is taken as a switch. Only the
// first positional argument is the prompt; later ones are ignored.
func parseArgs(args []string) (options, error) {
	o := options{OutputFormat: "text", PermissionMode: "default"}
	sourcesSet := false
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			positional = append(positional, arg)
			continue
		}
		name, inline, hasInline := strings.Cut(arg, "=")
		if !strings.HasPrefix(name, "--") {
			name, hasInline = arg, false
		}
		next := func() (string, error) {
			if hasInline {
				return inline, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("error: option '%s' argument missing", name)
			}
			i++
			return args[i], nil
		}
		switch {
		case boolFlags[name]:
			switch name {
			case "-p", "--print":
				o.Print = true
			case "--verbose":
				o.Verbose = true
			case "-c", "--continue":
				o.Continue = true
			case "--dangerously-skip-permissions":
				o.PermissionMode = "bypassPermissions"
			case "-v", "--version":
				o.Version = true
			case "-h", "--help":
				o.Help = true
			default:
				o.Ignored = append(o.Ignored, name)
			}
		case valueFlags[name]:
			v, err := next()
			if err != nil {
				return o, err
			}
			switch name {
			case "--output-format":
				o.OutputFormat = v
			case "--input-format":
				o.InputFormat = v
			case "-r", "--resume":
				o.Resume = v
			case "--session-id":
				o.SessionID = v
			case "--append-system-prompt":
				o.AppendSystemPrompt = v
			case "--system-prompt":
				o.SystemPrompt = v
			case "--setting-sources":
				sourcesSet = true
				o.SettingSources = splitList(v)
			case "--model":
				o.Model = v
			case "--permission-mode":
				o.PermissionMode = v
			default:
				o.Ignored = append(o.Ignored, name)
			}
		case listFlags[name]:
			var vals []string
			if hasInline {
				vals = append(vals, inline)
			}
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals = append(vals, args[i])
			}
			var list []string
			for _, v := range vals {
				list = append(list, splitRules(v)...)
			}
			switch name {
			case "--allowedTools", "--allowed-tools":
				o.AllowedTools = append(o.AllowedTools, list...)
			case "--disallowedTools", "--disallowed-tools":
				o.DisallowedTools = append(o.DisallowedTools, list...)
			case "--tools":
				o.Tools = append(o.Tools, list...)
			default:
				o.Ignored = append(o.Ignored, name)
			}
		default:
			o.Ignored = append(o.Ignored, name)
			if strings.HasPrefix(name, "--") && !hasInline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		}
	}
	if !sourcesSet {
		o.SettingSources = []string{"user", "project", "local"}
	}
	if len(positional) > 0 {
		o.Prompt = positional[0]
	}
	return o, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// splitRules splits a tool rule list on commas and blanks outside
// parentheses: "Bash(git commit:*) Edit,Write" is three rules.
func splitRules(s string) []string {
	var (
		out   []string
		cur   strings.Builder
		depth int
	)
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ' || r == '\t' || r == '\n') && depth == 0:
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	switch {
	case o.Version:
		fmt.Fprintln(stdout, version)
		return 0
	case o.Help:
		fmt.Fprintln(stdout, "Usage: claude -p [options] [prompt]  (asb scripted agent; see the package documentation)")
		return 0
	case !o.Print:
		fmt.Fprintln(stderr, "Error: the scripted agent runs only in --print (-p) mode")
		return 1
	case o.OutputFormat != "text" && o.OutputFormat != "json" && o.OutputFormat != "stream-json":
		fmt.Fprintf(stderr, "Error: Invalid output format %q. Must be one of: text, json, stream-json\n", o.OutputFormat)
		return 1
	case o.OutputFormat == "stream-json" && !o.Verbose:
		fmt.Fprintln(stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	}
	if o.Prompt == "" && stdin != nil && !isTerminal(stdin) {
		data, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintln(stderr, "Error: reading stdin:", err)
			return 1
		}
		o.Prompt = strings.TrimRight(string(data), "\n")
	}
	if strings.TrimSpace(o.Prompt) == "" {
		fmt.Fprintln(stderr, "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		return 1
	}
	return newTurn(o, stdout, stderr).run()
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
