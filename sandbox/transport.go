// Package sandbox drives msb (microsandbox) on sandbox hosts. This file
// holds the command transport: the one way asb runs a program on a host,
// either locally (LocalTransport) or over SSH (SSHTransport).
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/asb-dev/asb/app"
)

// Transport runs commands on one sandbox host.
//
// Contract, shared by every implementation:
//   - Argv is executed exactly as given: no word splitting, globbing or
//     expansion happens on the way, whatever the transport.
//   - A command that runs and exits non-zero is not an error: its status is
//     in Result.ExitCode. A program that is missing or not executable
//     yields 127 or 126 with a message on stderr, as a POSIX shell reports
//     it (over SSH the remote shell does exactly that). An error means the
//     command could not be run, was lost, or was cut short (context done);
//     it is then an *app.Error whose message names the host but never the
//     argv.
//   - Context cancellation kills the command on the host, not just the wait.
//   - A transport is safe for concurrent use. Close releases it; Run after
//     Close fails.
type Transport interface {
	Run(ctx context.Context, cmd Command) (Result, error)
	Close() error
	// String names the host for logs and messages ("local", "ssh://u@h:22").
	String() string
}

// DefaultMaxOutput caps each captured stream (stdout and stderr separately)
// when Command.MaxOutput is zero. msb's JSON listings are far smaller; the
// cap only stops a runaway command from filling the controller's memory.
const DefaultMaxOutput = 8 << 20

// Command is one program invocation.
type Command struct {
	// Argv is the program and its arguments. Argv[0] is looked up in PATH
	// on the host. No element may contain a NUL byte.
	Argv []string
	// Stdin feeds the command's standard input. Nil means empty input (the
	// command sees EOF at once), which matters for msb: `msb exec` reads
	// stdin to EOF before running and hangs on an open one.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the output as it arrives and
	// nothing is captured in Result for that stream. If one writer fails,
	// the rest of that stream is discarded (so the command never blocks on
	// a dead writer) and Run returns the writer's error after the command
	// ends. The same writer may be given for both; writes are serialised.
	Stdout io.Writer
	Stderr io.Writer
	// MaxOutput caps each captured stream in bytes (0 means
	// DefaultMaxOutput). Output beyond it is read and dropped, and
	// Result.Truncated is set.
	MaxOutput int
}

// Result is the outcome of a command that ran.
type Result struct {
	// ExitCode is the command's exit status. A command killed by a signal
	// reports 128+signal number, as a POSIX shell does, and names the
	// signal in Signal.
	ExitCode int
	// Signal is the name of the signal that killed the command, without
	// the SIG prefix ("KILL"), or "".
	Signal string
	// Stdout and Stderr hold the captured output of the streams that had
	// no writer in Command.
	Stdout, Stderr []byte
	// Truncated reports that a captured stream exceeded MaxOutput.
	Truncated bool
}

// validate rejects commands no transport can run faithfully. NUL cannot
// travel in an execve argument, and silently cutting an argument at a NUL
// would run something other than what the caller asked for.
func (c Command) validate() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return app.Errorf(app.EINVALID, "The command is empty.")
	}
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return app.Errorf(app.EINVALID, "Argument %d of the command contains a NUL byte.", i)
		}
	}
	return nil
}

// outputs routes one command's two output streams either to the caller's
// writers or to capped buffers.
type outputs struct {
	stdout, stderr io.Writer
	capOut, capErr *capBuffer
	guards         []*guardedWriter
}

func newOutputs(c Command) *outputs {
	limit := c.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	o := &outputs{}
	// One mutex per distinct caller writer: the transports copy stdout and
	// stderr on separate goroutines, and the same writer for both must not
	// see interleaved concurrent Writes.
	var shared *sync.Mutex
	if c.Stdout != nil && c.Stdout == c.Stderr {
		shared = new(sync.Mutex)
	}
	guard := func(w io.Writer) *guardedWriter {
		mu := shared
		if mu == nil {
			mu = new(sync.Mutex)
		}
		g := &guardedWriter{w: w, mu: mu}
		o.guards = append(o.guards, g)
		return g
	}
	if c.Stdout != nil {
		o.stdout = guard(c.Stdout)
	} else {
		o.capOut = &capBuffer{max: limit}
		o.stdout = o.capOut
	}
	if c.Stderr != nil {
		o.stderr = guard(c.Stderr)
	} else {
		o.capErr = &capBuffer{max: limit}
		o.stderr = o.capErr
	}
	return o
}

// fill copies the captured output into res and returns the first error a
// caller's writer reported, if any.
func (o *outputs) fill(res *Result) error {
	for _, c := range []struct {
		b   *capBuffer
		dst *[]byte
	}{{o.capOut, &res.Stdout}, {o.capErr, &res.Stderr}} {
		if c.b == nil {
			continue
		}
		c.b.mu.Lock()
		*c.dst = c.b.buf.Bytes()
		res.Truncated = res.Truncated || c.b.truncated
		c.b.mu.Unlock()
	}
	for _, g := range o.guards {
		g.mu.Lock()
		err := g.err
		g.mu.Unlock()
		if err != nil {
			return fmt.Errorf("sandbox: writing command output: %w", err)
		}
	}
	return nil
}

// detach stops all further output from reaching the buffers and the
// caller's writers. Run calls it before returning while a copy may still
// be in flight (a canceled SSH command whose server ignored the kill).
func (o *outputs) detach() {
	for _, b := range []*capBuffer{o.capOut, o.capErr} {
		if b != nil {
			b.mu.Lock()
			b.detached = true
			b.mu.Unlock()
		}
	}
	for _, g := range o.guards {
		g.mu.Lock()
		g.detached = true
		g.mu.Unlock()
	}
}

// capBuffer keeps the first max bytes and swallows the rest. It never
// fails: a failing sink would stop the copy and leave the command blocked
// on a full pipe or SSH window.
type capBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
	detached  bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.detached {
		return len(p), nil
	}
	room := b.max - b.buf.Len()
	switch {
	case room >= len(p):
		b.buf.Write(p)
	case room > 0:
		b.buf.Write(p[:room])
		b.truncated = true
	case len(p) > 0:
		b.truncated = true
	}
	return len(p), nil
}

// guardedWriter forwards to a caller's writer until it fails once, then
// discards, for the same reason as capBuffer.
type guardedWriter struct {
	w        io.Writer
	mu       *sync.Mutex
	err      error
	detached bool
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil && !g.detached {
		if _, err := g.w.Write(p); err != nil {
			g.err = err
		}
	}
	return len(p), nil
}

// contextError turns a done context into the caller-facing error of a
// command on host. The context's error stays in the chain so callers can
// test errors.Is(err, context.DeadlineExceeded).
func contextError(ctx context.Context, host string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return app.WrapError(app.EUNAVAILABLE, err, "A command on %s timed out and was stopped.", host)
	}
	return app.WrapError(app.EUNAVAILABLE, err, "A command on %s was canceled and stopped.", host)
}

// signalNumbers maps the signal names SSH servers report (RFC 4254 §6.10)
// to their Linux numbers, for the 128+n exit code convention.
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8,
	"KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
}

// signalName is the inverse of signalNumbers; unknown numbers get "SIG<n>".
func signalName(n int) string {
	for name, num := range signalNumbers {
		if num == n {
			return name
		}
	}
	return fmt.Sprintf("SIG%d", n)
}
