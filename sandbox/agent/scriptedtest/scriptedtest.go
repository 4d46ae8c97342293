// Package scriptedtest builds the scripted agent (sandbox/agent/scripted),
// the stand-in for Claude Code, for tests, and writes its prompts.
package scriptedtest

import (
	"strings"
	"testing"

	"github.com/asb-dev/asb/internal/testbin"
)

// Binary returns the scripted agent, built once per test process as a
// static binary (CGO_ENABLED=0), so it also runs inside a box. It is
// called claude, as the real agent is.
func Binary(tb testing.TB) string {
	tb.Helper()
	return testbin.Build(tb, "./sandbox/agent/scripted", "claude")
}

// Marker opens the script in a prompt.
const Marker = "#!asb-script"

// Prompt returns a prompt made of task and, after the script marker, one
// directive a line (see the scripted command's documentation).
func Prompt(task string, directives ...string) string {
	var b strings.Builder
	b.WriteString(task)
	b.WriteString("\n" + Marker + "\n")
	for _, d := range directives {
		b.WriteString(d)
		b.WriteByte('\n')
	}
	return b.String()
}
