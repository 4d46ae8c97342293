package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/asb-dev/asb/app"
)

// DefaultLocalWaitDelay is how long LocalTransport waits for a command's
// output pipes to close after the command exits or is killed.
const DefaultLocalWaitDelay = 5 * time.Second

// LocalTransport runs commands on the controller's own machine
// (SANDBOX_HOSTS=local), without an SSH hop and without a shell: argv goes
// straight to execve, so quoting cannot go wrong.
type LocalTransport struct {
	log *slog.Logger
	// WaitDelay bounds the wait for output pipes that a background child
	// keeps open after the command itself exits (`cmd &` in a script): the
	// pipes are then closed and the exit status stands. It also bounds the
	// wait after a context kill. Zero means DefaultLocalWaitDelay.
	WaitDelay time.Duration
}

// NewLocalTransport returns a transport for the local host. logger may be
// nil.
func NewLocalTransport(logger *slog.Logger) *LocalTransport {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &LocalTransport{log: logger.With("host", "local")}
}

// String implements Transport.
func (t *LocalTransport) String() string { return "local" }

// Close implements Transport. A local transport holds nothing.
func (t *LocalTransport) Close() error { return nil }

// Run implements Transport. The command runs in its own process group, and
// a done context kills the whole group, so children it started (msb's
// helpers, a shell's pipeline) die with it instead of lingering.
func (t *LocalTransport) Run(ctx context.Context, cmd Command) (Result, error) {
	if err := cmd.validate(); err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{ExitCode: -1}, contextError(ctx, t.String())
	}
	prog := filepath.Base(cmd.Argv[0])
	c := exec.CommandContext(ctx, cmd.Argv[0], cmd.Argv[1:]...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		// Negative pid: the process group the command leads.
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	c.WaitDelay = t.WaitDelay
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultLocalWaitDelay
	}
	c.Stdin = cmd.Stdin // nil is /dev/null: EOF at once
	out := newOutputs(cmd)
	c.Stdout, c.Stderr = out.stdout, out.stderr

	start := time.Now()
	err := c.Run()
	res := Result{ExitCode: -1}
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
			res.Signal = signalName(int(ws.Signal()))
		}
	}
	werr := out.fill(&res)
	var exitErr *exec.ExitError
	switch {
	case c.ProcessState == nil:
		// It never started: not found, not executable, or ctx done first.
		if ctx.Err() != nil {
			return res, contextError(ctx, t.String())
		}
		return t.startFailure(err, cmd.Argv[0], out)
	case ctx.Err() != nil && (err != nil || res.Signal != ""):
		// Killed by our Cancel (or finished just as the context ended, in
		// which case the status is ambiguous and the deadline wins).
		return res, contextError(ctx, t.String())
	case err == nil, errors.As(err, &exitErr), errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: the command exited 0 but a background child held
		// its output open; we closed the pipes, the status is good.
	default:
		return res, app.WrapError(app.EUNAVAILABLE, err, "Running %s on the local host failed.", prog)
	}
	t.log.Debug("command finished", "program", prog, "exit", res.ExitCode, "duration", time.Since(start))
	return res, werr
}

// startFailure reports a program that cannot be started the way a POSIX
// shell does (exit 127 not found, 126 not executable, message on stderr),
// because that is what the same command over SSH yields: the remote login
// shell runs it. Callers thus see one behaviour whatever the transport.
// Other failures (fork limits, bad working directory) stay errors.
func (t *LocalTransport) startFailure(err error, prog string, out *outputs) (Result, error) {
	res := Result{}
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		res.ExitCode = 127
		_, _ = fmt.Fprintf(out.stderr, "%s: not found\n", prog)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		res.ExitCode = 126
		_, _ = fmt.Fprintf(out.stderr, "%s: cannot execute\n", prog)
	default:
		return Result{ExitCode: -1}, app.WrapError(app.EUNAVAILABLE, err,
			"Program %s could not be started on the local host.", filepath.Base(prog))
	}
	t.log.Debug("command not started", "program", filepath.Base(prog), "exit", res.ExitCode)
	return res, out.fill(&res)
}
