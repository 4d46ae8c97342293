package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// execRequest is one guest command.
type execRequest struct {
	argv    []string
	env     []string
	workdir string
	user    string
	stdin   []byte
	tty     bool // merge stdout+stderr with CRLF line endings (guest PTY)
	stream  bool // forward our stdio incrementally (--stream)
	timeout time.Duration
	delay   time.Duration
}

// execResult is what the guest command produced.
type execResult struct {
	code        int
	stdout      []byte
	stderr      []byte
	spawn       *spawnError // the command never started
	timedOut    bool
	interrupted bool // we got a signal and killed the command
}

// spawnError is a failure of the in-guest helper before execve succeeded.
type spawnError struct {
	kind string // notfound | perm | cwd | other
	msg  string
}

// exitCode maps spawn failures like exec_error_render.rs::exit_code_for.
func (s *spawnError) exitCode() int {
	switch s.kind {
	case "notfound":
		return 127
	case "perm":
		return 126
	}
	return 1
}

func (s *spawnError) render(cmd string) error {
	hint := "check that the command exists in the sandbox and is on PATH"
	switch s.kind {
	case "perm":
		hint = "check that the file is executable"
	case "cwd":
		hint = "check that the working directory exists in the sandbox"
	}
	return &cliError{code: s.exitCode(), text: fmt.Sprintf("error: failed to exec %q\n  → %s\n  → %s\n", cmd, s.msg, hint)}
}

// runInBox runs req inside the box whose namespace init is rt.InitPid, by
// nsenter-ing the namespaces and executing this binary (handed over as fd 3)
// as a helper that chdirs, resolves argv[0] on the guest PATH and execve(2)s
// it. The helper reports spawn failures on fd 4, which is close-on-exec, so
// an empty read after exit means the command really ran.
func runInBox(home string, rt *Runtime, req execRequest) (execResult, error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return execResult{}, fmt.Errorf("nsenter not found on PATH: install the Debian package util-linux")
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return execResult{}, fmt.Errorf("open own executable: %w", err)
	}
	defer self.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return execResult{}, fmt.Errorf("status pipe: %w", err)
	}
	defer statusR.Close()
	xio, err := newExecIO(home, req)
	if err != nil {
		statusW.Close()
		return execResult{}, err
	}
	defer xio.close()

	cmd := exec.Command(nsenter, nsenterArgs(rt, req)...)
	cmd.Env = req.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = xio.stdin, xio.stdout, xio.stderr
	if req.stream {
		streamStdio(cmd)
	}
	cmd.ExtraFiles = []*os.File{self, statusW}
	// Catch signals before the command exists, so none slips through.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		statusW.Close()
		return execResult{}, fmt.Errorf("start nsenter: %w", err)
	}
	statusW.Close()
	timedOut, sig := waitGuest(cmd, req.timeout, sigs)
	status, _ := io.ReadAll(statusR)
	res := execResult{code: exitStatus(cmd.ProcessState), timedOut: timedOut}
	if sig != 0 {
		// We were interrupted and killed the guest command: exit like a
		// process killed by that signal would (128+n), without output.
		res.code, res.interrupted = 128+int(sig), true
		return res, nil
	}
	if res.timedOut {
		return res, nil
	}
	if len(status) > 0 {
		kind, msg, _ := strings.Cut(string(status), "\n")
		res.spawn = &spawnError{kind: kind, msg: msg}
		return res, nil
	}
	res.stdout, res.stderr, err = xio.collect(req.tty)
	return res, err
}

func nsenterArgs(rt *Runtime, req execRequest) []string {
	args := []string{"--target", strconv.Itoa(rt.InitPid)}
	if os.Geteuid() != 0 {
		args = append(args, "--user", "--preserve-credentials")
	}
	args = append(args, "--mount", "--pid", "--uts", "--ipc")
	if rt.OwnNet {
		// Only a namespace the box owns can be joined without privileges.
		args = append(args, "--net")
	}
	args = append(args, "--root", "--",
		"/proc/self/fd/3", guestExecArg, req.workdir, req.user, strconv.FormatInt(int64(req.delay), 10), "--")
	return append(args, req.argv...)
}

// waitGuest waits for nsenter. When the timeout expires, or we receive
// SIGINT/SIGTERM/SIGHUP (an SSH client giving up), it kills the guest
// command's process group (the helper made itself a group leader) and
// nsenter, and reports which of the two happened.
func waitGuest(cmd *exec.Cmd, timeout time.Duration, sigs <-chan os.Signal) (timedOut bool, sig syscall.Signal) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return false, 0
	case <-expired:
		timedOut = true
	case s := <-sigs:
		sig, _ = s.(syscall.Signal)
		if sig == 0 {
			sig = syscall.SIGTERM
		}
	}
	for _, child := range procChildren(cmd.Process.Pid) {
		_ = syscall.Kill(-child, syscall.SIGKILL)
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	_ = cmd.Process.Kill()
	<-done
	return timedOut, sig
}

// streamStdio forwards our stdio through pipes rather than handing the
// descriptors to the guest: like msb's agent relay, a process the command
// leaves in the background must not keep an SSH channel open. Copying stops
// shortly after the command exits.
func streamStdio(cmd *exec.Cmd) {
	cmd.Stdin = struct{ io.Reader }{os.Stdin}
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	cmd.WaitDelay = 200 * time.Millisecond
}

// exitStatus maps a wait status to msb's exit code: the guest code, or 255
// for a signal (agentd reports -1).
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 255
	}
	code := ps.ExitCode()
	if code < 0 {
		return 255
	}
	return code
}

// execIO holds the guest command's stdio. Output goes to unlinked temp files,
// not pipes, so that a process the command leaves running in the background
// (holding the descriptors) cannot keep the exec from returning.
type execIO struct {
	stdin, stdout, stderr *os.File
	owned                 []*os.File
}

func newExecIO(home string, req execRequest) (*execIO, error) {
	if req.stream {
		return &execIO{}, nil
	}
	x := &execIO{}
	var err error
	if x.stdin, err = x.temp(home, req.stdin); err != nil {
		return nil, err
	}
	if x.stdout, err = x.temp(home, nil); err != nil {
		x.close()
		return nil, err
	}
	x.stderr = x.stdout
	if !req.tty {
		if x.stderr, err = x.temp(home, nil); err != nil {
			x.close()
			return nil, err
		}
	}
	return x, nil
}

func (x *execIO) temp(home string, content []byte) (*os.File, error) {
	dir := filepath.Join(home, "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "exec-*")
	if err != nil {
		return nil, fmt.Errorf("create temp file: %w", err)
	}
	_ = os.Remove(f.Name())
	x.owned = append(x.owned, f)
	if len(content) > 0 {
		if _, err := f.Write(content); err != nil {
			return nil, fmt.Errorf("buffer stdin: %w", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("buffer stdin: %w", err)
		}
	}
	return f, nil
}

func (x *execIO) collect(tty bool) ([]byte, []byte, error) {
	if len(x.owned) == 0 {
		return nil, nil, nil
	}
	out, err := readFrom(x.stdout)
	if err != nil {
		return nil, nil, err
	}
	if tty {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
		return out, nil, nil
	}
	errOut, err := readFrom(x.stderr)
	return out, errOut, err
}

func readFrom(f *os.File) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read guest output: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read guest output: %w", err)
	}
	return data, nil
}

func (x *execIO) close() {
	for _, f := range x.owned {
		f.Close()
	}
}

// guestExecMain is the in-guest helper: argv is WORKDIR USER DELAY_NS -- CMD…
// It runs inside the box's namespaces with the guest environment.
func guestExecMain(args []string) {
	status := os.NewFile(4, "status")
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	fail := func(kind, msg string) {
		fmt.Fprintf(status, "%s\n%s", kind, msg)
		os.Exit(127)
	}
	if len(args) < 5 || args[3] != "--" {
		fail("other", "internal error: bad helper arguments")
	}
	workdir, user, argv := args[0], args[1], args[4:]
	// Own process group, so a timeout can kill the command and its children;
	// die with nsenter, so killing nsenter never leaves the command behind.
	_ = syscall.Setpgid(0, 0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if d, _ := strconv.ParseInt(args[2], 10, 64); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if user != "" {
		if err := switchUser(user); err != nil {
			fail("other", err.Error())
		}
	}
	if err := syscall.Chdir(workdir); err != nil {
		fail("cwd", fmt.Sprintf("bad cwd: chdir %q: %s", workdir, rustErrno(err)))
	}
	path, err := lookPathGuest(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fail(spawnKind(err), fmt.Sprintf("%s: spawn %q: %s", spawnLabel(err), argv[0], rustErrno(err)))
}

// startupMain supervises a `run -d` startup command as the box's pid 2:
// argv is `-- CMD…`. It records on fd 4 (a host file) that the command ended,
// then exits with its code, which shuts the box down (bwrap exits with it).
func startupMain(args []string) {
	status := os.NewFile(4, "status")
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(status, "spawn-failed: bad helper arguments")
		os.Exit(127)
	}
	argv := args[1:]
	path, err := lookPathGuest(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to exec %q: %s\n", argv[0], rustErrno(err))
		fmt.Fprintf(status, "spawn-failed: %s\n", rustErrno(err))
		os.Exit(127)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "failed to exec %q: %s\n", argv[0], rustErrno(err))
		fmt.Fprintf(status, "spawn-failed: %s\n", rustErrno(err))
		os.Exit(127)
	}
	_ = cmd.Wait()
	code := exitStatus(cmd.ProcessState)
	fmt.Fprintf(status, "exited %d\n", code)
	os.Exit(code)
}

// lookPathGuest resolves argv[0] on the guest PATH like execvp would.
func lookPathGuest(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	if name == "" {
		return "", syscall.ENOENT
	}
	var firstErr error = syscall.ENOENT
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		if fi.Mode().Perm()&0o111 == 0 {
			firstErr = syscall.EACCES
			continue
		}
		return p, nil
	}
	return "", firstErr
}

func spawnKind(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return "notfound"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EPERM):
		return "perm"
	}
	return "other"
}

func spawnLabel(err error) string {
	switch spawnKind(err) {
	case "notfound":
		return "not found"
	case "perm":
		return "permission denied"
	}
	return "spawn failed"
}

// rustIOError renders an errno like Rust's io::Error Display:
// `No such file or directory (os error 2)`.
func rustIOError(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	text := errno.Error()
	if text != "" {
		text = strings.ToUpper(text[:1]) + text[1:]
	}
	return fmt.Sprintf("%s (os error %d)", text, int(errno))
}

// rustErrno adds the symbolic name msb's exec error blocks show:
// `No such file or directory (os error 2) (ENOENT)`.
func rustErrno(err error) string {
	s := rustIOError(err)
	var errno syscall.Errno
	if errors.As(err, &errno) {
		names := map[syscall.Errno]string{syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.ENOEXEC: "ENOEXEC",
			syscall.EPERM: "EPERM", syscall.ENOTDIR: "ENOTDIR", syscall.E2BIG: "E2BIG", syscall.ELOOP: "ELOOP"}
		if n, ok := names[errno]; ok {
			s += " (" + n + ")"
		}
	}
	return s
}

// passwdEntry is a line of the guest's /etc/passwd.
type passwdEntry struct {
	uid, gid int
	home     string
}

// lookupPasswd resolves USER or a numeric uid (no cgo: the binary also runs
// inside boxes).
func lookupPasswd(user string) (passwdEntry, bool) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return passwdEntry{}, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 7 || (f[0] != user && f[2] != user) {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil {
			return passwdEntry{uid: uid, gid: gid, home: f[5]}, true
		}
	}
	return passwdEntry{}, false
}

// switchUser implements -u USER[:GROUP] inside the guest.
func switchUser(spec string) error {
	name, group, hasGroup := strings.Cut(spec, ":")
	var uid, gid int
	if e, ok := lookupPasswd(name); ok {
		uid, gid = e.uid, e.gid
	} else if n, err := strconv.Atoi(name); err == nil {
		uid, gid = n, n
	} else {
		return fmt.Errorf("unknown user %q", name)
	}
	if hasGroup {
		n, err := strconv.Atoi(group)
		if err != nil {
			return fmt.Errorf("unknown group %q", group)
		}
		gid = n
	}
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	return nil
}
