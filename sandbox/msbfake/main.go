// Command msbfake is a faithful fake of the microsandbox `msb` CLI (v0.6.9)
// for hosts without KVM. It reproduces what an orchestrator can observe at
// its parsing boundary (argv grammar, stdout bytes, exit codes, the stderr
// texts that get classified, and the sandbox state machine) and it gives
// every sandbox real isolation with bubblewrap. The behaviour it imitates is
// specified in /work/shared/reference/msb.md (§8 is the contract).
//
// # Host requirements
//
// Debian packages `bubblewrap` (bwrap) and `util-linux` (nsenter), found on
// PATH, and Linux ≥5.6 (openat2). Normally run as root; as another user the
// fake adds --unshare-user to bwrap and --user --preserve-credentials to
// nsenter (needs unprivileged user namespaces). It needs no TTY and reads
// stdin only for exec/attached run, so `ssh host msb … </dev/null` (or a
// closed stdin) works.
//
// # State
//
// Everything lives under $MSB_HOME (default ~/.microsandbox):
//
//	fake-state.json          sandboxes, the image pull cache, snapshots
//	fake-state.lock          flock(2) guard: one invocation mutates state at a time
//	fake-knobs.env           optional KEY=VALUE lines, same names as the env knobs
//	sandboxes/<name>/root    the guest root, mounted as / inside the box
//	sandboxes/<name>/logs    startup.log (output of the box's startup command)
//	snapshots/<snap>/root    a copy of the source box's guest root
//	volumes/<name>/          named volumes (-v NAME:/dest)
//	tmp/                     unlinked buffers for exec stdin/stdout/stderr
//
// # Boxes
//
// A running box is one long-lived `bwrap --bind ROOT / --ro-bind /usr /usr
// --ro-bind /etc /etc --proc /proc --dev /dev --unshare-pid --unshare-uts
// --unshare-ipc --hostname NAME … CMD` in its own session. CMD is `sleep
// infinity` for an idle box (create, start, exec on a stopped box) or, for
// `run -d`, the startup command under a small supervisor that records its
// end: when it exits the box becomes Stopped, as in msb ≥0.6.7. /workspace,
// /root (HOME), /tmp and every other writable path are in the guest root
// (private to the box, kept across stop/start); /usr and /etc are the
// host's, read-only. `--no-net`/`--net none` add --unshare-net; other
// network policy is validated and stored, not enforced. `-v` binds are real.
//
// `exec` enters the box with `nsenter --target <ns init> --mount --pid --uts
// --ipc --root` and runs a helper (this same binary, passed as an inherited
// fd, so nothing is added to the guest) that chdirs, resolves the command on
// the guest PATH and execve(2)s it: no shell is involved unless argv[0] is
// one, and spawn failures are told apart from guest exit codes. Processes an
// exec leaves behind (`sh -c 'nohup agent &'`) keep running after it
// returns; `stop`/`rm` SIGKILL the namespace's init, which takes every box
// process with it. `--timeout` (or SIGINT/SIGTERM/SIGHUP to msb) kills the
// command's process group. `cp` and `--copy-dir` work on the guest
// filesystem from the host side through openat2 RESOLVE_IN_ROOT, so guest
// symlinks cannot reach host files.
//
// Killed box processes are re-parented to PID 1 (or the nearest child
// subreaper) and are reaped there; on a host whose PID 1 reaps late or never
// they linger as zombies. The tests in this package make themselves a child
// subreaper and reap them.
//
// # Pre-caching images
//
// `msb pull IMAGE` adds the image to the pull cache (as in the real msb), after
// which `--pull never IMAGE` works. `msb image ls|rm|inspect` manage the cache.
// Images are names only: every box sees the host's /usr and /etc.
//
// # Test knobs
//
// Read from the environment first, then from $MSB_HOME/fake-knobs.env (useful
// when the fake is reached over SSH, which drops the caller's environment):
//
//	FAKE_MSB_NOW=RFC3339            the fake clock's "now" (default: wall clock)
//	FAKE_MSB_CLOCK_OFFSET=DURATION  added to the clock (Go duration: 90s, 2h, -5m)
//	FAKE_MSB_BOOT_FAIL=GLOBS        boxes whose names match fail to boot
//	                                (`failed to start` block, exit 1; the box is
//	                                left Crashed, an ephemeral one is deleted)
//	FAKE_MSB_CRASH=GLOBS            running boxes whose names match are killed and
//	                                marked Crashed by the sweep of this invocation
//	FAKE_MSB_UNREACHABLE_IMAGES=GLOBS  pulls of matching images fail (matched
//	                                against the reference as given and normalised)
//	FAKE_MSB_EXEC_DELAY=DURATION    every guest command waits this long before it
//	                                starts (counts against --timeout)
//	FAKE_MSB_DOCTOR_FAIL=1          `msb doctor` reports a missing /dev/kvm, exit 1
//
// GLOBS is a comma-separated list of patterns where `*` matches any run of
// characters (including `/`) and `?` one character; `*` alone matches all.
//
// Every invocation first sweeps the running boxes: a box whose runtime died
// becomes Crashed (Stopped if its startup command finished), an idle box
// (now - last_activity_at >= idle timeout, no exec in flight) or an expired
// one (now - started_at >= max duration) is stopped; ephemeral boxes
// (unnamed `run`) are deleted when they stop.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// msbVersion is the version this fake imitates.
const msbVersion = "0.6.9"

// Hidden argv[1] values of the helpers this binary also serves as.
const (
	guestExecArg = "__msbfake-guest-exec" // in-guest exec helper (see runInBox)
	startupArg   = "__msbfake-startup"    // supervisor of a `run -d` startup command
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == guestExecArg {
		guestExecMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == startupArg {
		startupMain(os.Args[2:])
		return
	}
	ensureStdFDs()
	os.Exit(runMain(os.Args[1:]))
}

// ensureStdFDs points closed standard descriptors at /dev/null. Callers such
// as `ssh host msb … <&-` may start us with fd 0 closed; without this the
// first file we open would become "stdin" and exec would feed the state file
// to the guest.
func ensureStdFDs() {
	for fd := 0; fd <= 2; fd++ {
		if _, err := fcntlGetFD(fd); err == nil {
			continue
		}
		null, err := syscall.Open("/dev/null", syscall.O_RDWR, 0)
		if err != nil {
			return
		}
		if null != fd {
			_ = syscall.Dup2(null, fd)
			_ = syscall.Close(null)
		}
	}
}

func fcntlGetFD(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// runMain executes one msb invocation and returns its exit code.
func runMain(args []string) int {
	err := dispatch(args)
	return reportError(err)
}

// reportError renders err the way msb does (`error: <msg>` on stderr) and
// maps it to an exit code.
func reportError(err error) int {
	if err == nil {
		return 0
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return int(ec)
	}
	var ce *cliError
	if errors.As(err, &ce) {
		if ce.text != "" {
			fmt.Fprint(os.Stderr, ce.text)
		}
		return ce.code
	}
	fmt.Fprintf(os.Stderr, "error: %s\n", err.Error())
	return 1
}

// exitCode ends the invocation with a code and prints nothing more (the guest
// exit code of exec, or 1 after per-name errors were already printed).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// cliError carries pre-rendered stderr text and an exit code (clap usage
// errors exit 2, structured blocks exit 1/126/127).
type cliError struct {
	code int
	text string
}

func (e *cliError) Error() string { return e.text }

// usageErr builds a clap-style usage error (exit 2).
func usageErr(cmd, format string, a ...any) error {
	usage := "msb"
	if cmd != "" {
		usage = "msb " + cmd
	}
	msg := fmt.Sprintf(format, a...)
	return &cliError{code: 2, text: fmt.Sprintf("error: %s\n\nUsage: %s [OPTIONS]\n\nFor more information, try '--help'.\n", msg, usage)}
}

// msgErr is a plain `error: <msg>` failure with exit 1.
func msgErr(format string, a ...any) error {
	return errors.New(fmt.Sprintf(format, a...))
}

// notFound is the error every command reports for a missing sandbox.
func notFound(name string) error { return msgErr("sandbox not found: %s", name) }

// progressLine prints msb's completion line (`   ✓ Stopped      NAME`) to stderr.
func progressLine(mark, label, subject string) {
	fmt.Fprintf(os.Stderr, "   %s %-12s %s\n", mark, label, subject)
}

// backendNotice mimics 0.6.9–0.6.12, which announce the backend on stderr for
// create, remove, exec and ssh.
func backendNotice() {
	progressLine("•", "Backend", "local")
}

func warnf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "warn: %s\n", fmt.Sprintf(format, a...))
}
