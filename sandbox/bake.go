package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asb-dev/asb/app"
)

// BakeSpec describes a pool snapshot: a box booted from Image with open
// egress runs Script (sh -c) once, and is saved as snapshot Name.
type BakeSpec struct {
	Name      string
	Image     string
	MemoryMiB int
	Script    string
	// Timeout bounds the script (default 20 minutes).
	Timeout time.Duration
	// Progress receives the script's output as it runs (may be nil).
	Progress interface{ Write([]byte) (int, error) }
}

// DefaultBakeScript installs what every box needs: git, and the agent CLI
// when the agent is Claude Code. It is idempotent.
func DefaultBakeScript(agentCommand string) string {
	script := `set -e
if ! command -v git >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq git;
  elif command -v apk >/dev/null 2>&1; then apk add --no-cache git; fi
fi
git --version
mkdir -p /workspace
`
	if agentCommand == "claude" {
		script += `command -v claude >/dev/null 2>&1 || npm install -g @anthropic-ai/claude-code
claude --version
`
	}
	return script
}

// Bake builds a snapshot on one host. The scratch box is removed whatever
// happens; an older snapshot of the same name is replaced only when the
// new one is complete.
func Bake(ctx context.Context, m *MSB, spec BakeSpec, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !ValidBoxName(spec.Name) {
		return app.Errorf(app.EINVALID, "snapshot name %q must be a valid msb name (letters, digits, '.', '_', '-')", clipText(spec.Name, 140))
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 20 * time.Minute
	}
	box := "asb-bake-" + randomHex(4)
	defer func() {
		if err := m.Remove(context.WithoutCancel(ctx), box); err != nil {
			log.Warn("remove the bake box", "box", box, "err", err)
		}
	}()
	log.Info("booting a scratch box", "box", box, "image", spec.Image, "host", m.Host())
	// Installing tools needs the internet, and the image may not be pulled yet.
	if err := m.Run(ctx, RunSpec{Name: box, Image: spec.Image, MemoryMiB: spec.MemoryMiB, Egress: Egress{AllowAll: true}, Pull: "if-missing"}); err != nil {
		return fmt.Errorf("boot scratch box: %w", err)
	}
	res, err := m.Exec(ctx, box, ExecSpec{Timeout: spec.Timeout, Stdout: spec.Progress, Stderr: spec.Progress}, "sh", "-c", spec.Script)
	if err != nil {
		return fmt.Errorf("install tools: %w", err)
	}
	if res.ExitCode != 0 {
		return app.Errorf(app.EUNAVAILABLE, "the install script failed in %s with exit %d", box, res.ExitCode)
	}
	if err := m.Stop(ctx, box); err != nil {
		return fmt.Errorf("stop scratch box: %w", err)
	}
	if err := m.SnapshotCreate(ctx, spec.Name, box); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	log.Info("snapshot ready", "snapshot", spec.Name, "host", m.Host())
	return nil
}
