// Command asb-hook is the PreToolUse hook asb installs in every box
// (inbox.HookBinary). Claude Code runs it before each tool call with the
// call as JSON on stdin; it answers with Claude Code's hook protocol:
// nothing and exit 0 to let the call go on, or a deny decision (JSON on
// stdout, the reason on stderr, exit 2) to block it.
//
//	asb-hook gate    deny every tool while /workspace/.agent.question exists (not in the ask lane)
//	asb-hook ro      in the ask lane (ASK_LANE=1), allow only tools and shell commands that read
//	asb-hook guard   deny control-plane edits, credential exfiltration and runtime reconfiguration
//
// The predicates live in sandbox/hook. This file only does I/O, and fails
// closed: unreadable, oversized or malformed input is denied, and so is a
// stdin that never ends.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asb-dev/asb/sandbox/hook"
	"github.com/asb-dev/asb/sandbox/inbox"
)

const usage = `asb-hook: asb's PreToolUse hooks for Claude Code.

Usage:
  asb-hook gate     deny every tool while ` + inbox.QuestionFile + ` exists
                    (skipped when ` + inbox.AskLaneEnv + `=1, the co-pilot's lane)
  asb-hook ro       the ask lane's read-only gate: applies when ` + inbox.AskLaneEnv + `=1
                    (or the call comes from ` + inbox.AskDir + `); allows reading tools and shell
                    commands that only read, denies everything else
  asb-hook guard    deterministic denylist for every lane: edits to the control
                    plane (hooks, Claude settings, ` + inbox.StatePrefix + `* state),
                    credential exfiltration, runtime reconfiguration

Each mode reads one Claude Code PreToolUse JSON object on stdin (at most 4 MiB).
No objection: prints nothing, exits 0. Deny: prints
{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",
"permissionDecisionReason":"..."}} on stdout, the reason on stderr, exits 2.
Malformed input is denied (fail closed).

Register all three for every tool in ~/.claude/settings.json:
  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[
    {"type":"command","command":"` + inbox.HookBinary + ` gate","timeout":30},
    {"type":"command","command":"` + inbox.HookBinary + ` guard","timeout":30},
    {"type":"command","command":"` + inbox.HookBinary + ` ro","timeout":30}]}]}}
`

// readTimeout bounds how long the hook waits for stdin. Claude Code closes
// stdin after writing the input; a hook that hangs would be killed by its
// timeout and Claude Code would carry on as if it had not objected.
const readTimeout = 10 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help", "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	if len(args) != 1 || (args[0] != hook.ModeGate && args[0] != hook.ModeRO && args[0] != hook.ModeGuard) {
		// Exit 2 blocks: a misregistered hook must not wave calls through.
		fmt.Fprintf(stderr, "asb-hook: want one of gate, ro, guard (got %q); denying.\n\n%s", strings.Join(args, " "), usage)
		return 2
	}
	mode := args[0]
	data, err := readInput(stdin)
	var out hook.Output
	if err != nil {
		out = hook.Render(hook.Denied("asb-hook %s: cannot read the hook input (%v); denying (fail closed).", mode, err))
	} else {
		out = hook.Run(mode, data, osEnv())
	}
	stdout.Write(out.Stdout)
	stderr.Write(out.Stderr)
	return out.ExitCode
}

type readResult struct {
	data []byte
	err  error
}

func readInput(r io.Reader) ([]byte, error) {
	done := make(chan readResult, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(r, hook.MaxInput+1))
		done <- readResult{data, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		if len(res.data) > hook.MaxInput {
			return nil, fmt.Errorf("input larger than %d bytes", hook.MaxInput)
		}
		return res.data, nil
	case <-time.After(readTimeout):
		return nil, errors.New("stdin not closed within " + readTimeout.String())
	}
}

func osEnv() hook.Env {
	return hook.Env{
		AskLane: os.Getenv(inbox.AskLaneEnv),
		Exists: func(p string) bool {
			// Anything but "certainly absent" counts as present: a
			// permission error must not open the gate.
			_, err := os.Lstat(p)
			return err == nil || !errors.Is(err, fs.ErrNotExist)
		},
		Realpath: realpath,
	}
}

// realpath resolves symbolic links in the longest existing prefix of p, so
// that a Write through a link into the control plane is seen for what it
// is.
func realpath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
