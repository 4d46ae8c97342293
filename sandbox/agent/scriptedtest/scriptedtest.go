// Package scriptedtest builds the scripted agent (sandbox/agent/scripted),
// the stand-in for Claude Code, for tests, and writes its prompts.
package scriptedtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the scripted agent, built once per test process as a
// static binary (CGO_ENABLED=0), so it also runs inside a box.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "scripted")
		dir, err := os.MkdirTemp("", "asb-scripted-agent-")
		if err != nil {
			buildErr = err
			return
		}
		// Other users (a box's or an SSH test account's) may run it.
		if err := os.Chmod(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "claude")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build scripted agent: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
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
