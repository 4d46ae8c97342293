package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// msbBin is the fake built once by TestMain.
var msbBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	for _, tool := range []string{"bwrap", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "msbfake tests need %s on PATH (Debian packages bubblewrap and util-linux)\n", tool)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "msbfake-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	msbBin = filepath.Join(dir, "msb")
	build := exec.Command("go", "build", "-o", msbBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fake msb:", err)
		return 1
	}
	stop := becomeReaper()
	defer stop()
	return m.Run()
}

// becomeReaper makes the test process the child subreaper: box processes
// outlive the msb invocation that started them, so when a box is stopped
// they are re-parented to us and must be reaped here (PID 1 of some CI
// machines reaps lazily or never). Only processes that are not our own msb
// children are reaped, so os/exec keeps its exit statuses.
func becomeReaper() func() {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0); e != 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				reapOrphans()
			}
		}
	}()
	return func() { close(done) }
}

func reapOrphans() {
	self := os.Getpid()
	for _, pid := range allPids() {
		info, ok := readProcStat(pid)
		if !ok || info.ppid != self || info.state != 'Z' {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == "msb" {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// fakeEnv is one isolated $MSB_HOME.
type fakeEnv struct {
	t    *testing.T
	home string
	env  []string // extra KEY=VALUE for every invocation
}

func newEnv(t *testing.T) *fakeEnv {
	t.Helper()
	e := &fakeEnv{t: t, home: t.TempDir()}
	t.Cleanup(e.teardown)
	return e
}

// teardown removes every box left behind and checks that none of its
// processes survive.
func (e *fakeEnv) teardown() {
	st := e.state()
	var names []string
	var pids []int
	for n, b := range st.Sandboxes {
		names = append(names, n)
		if b.Runtime != nil {
			pids = append(pids, b.Runtime.BwrapPid, b.Runtime.InitPid)
		}
	}
	if len(names) > 0 {
		e.run(append([]string{"rm", "-f", "-q"}, names...)...)
	}
	for _, p := range pids {
		waitProcGone(e.t, p)
	}
}

// result is one finished invocation.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
}

// invocation options.
type opt func(*exec.Cmd)

func withStdin(s string) opt                 { return func(c *exec.Cmd) { c.Stdin = strings.NewReader(s) } }
func withEnv(kv ...string) opt               { return func(c *exec.Cmd) { c.Env = append(c.Env, kv...) } }
func withDir(dir string) opt                 { return func(c *exec.Cmd) { c.Dir = dir } }
func (e *fakeEnv) run(args ...string) result { return e.runOpts(nil, args...) }

func (e *fakeEnv) runOpts(opts []opt, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, msbBin, args...)
	cmd.Env = append(append(os.Environ(), "MSB_HOME="+e.home), e.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	for _, o := range opts {
		o(cmd)
	}
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("msb %q: %v", args, err)
	}
	return r
}

// ok runs msb and fails the test unless it exits 0.
func (e *fakeEnv) ok(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("msb %q: %s", args, r)
	}
	return r
}

func (e *fakeEnv) okOpts(opts []opt, args ...string) result {
	e.t.Helper()
	r := e.runOpts(opts, args...)
	if r.code != 0 {
		e.t.Fatalf("msb %q: %s", args, r)
	}
	return r
}

// box starts a long-lived named box (the orchestrator's shape).
func (e *fakeEnv) box(name string, extra ...string) {
	e.t.Helper()
	e.ok("pull", "-q", "alpine")
	args := append([]string{"run", "-d", "--name", name, "--pull", "never"}, extra...)
	e.ok(append(args, "alpine", "--", "sleep", "infinity")...)
}

func (e *fakeEnv) state() *State {
	e.t.Helper()
	st := &State{Sandboxes: map[string]*Sandbox{}}
	data, err := os.ReadFile(filepath.Join(e.home, stateFileName))
	if os.IsNotExist(err) {
		return st
	}
	if err != nil {
		e.t.Fatalf("read state: %v", err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		e.t.Fatalf("state is not valid JSON: %v\n%s", err, data)
	}
	return st
}

func (e *fakeEnv) sandbox(name string) *Sandbox {
	e.t.Helper()
	b := e.state().Sandboxes[name]
	if b == nil {
		e.t.Fatalf("sandbox %s not in state", name)
	}
	return b
}

func (e *fakeEnv) root(name string) string { return filepath.Join(e.home, "sandboxes", name, "root") }

func (e *fakeEnv) status(name string) string {
	e.t.Helper()
	b := e.state().Sandboxes[name]
	if b == nil {
		return ""
	}
	return b.Status
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procExists reports whether pid exists at all (a zombie counts: it must be reaped).
func procExists(pid int) bool {
	_, ok := readProcStat(pid)
	return ok
}

func waitProcGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		return
	}
	waitFor(t, fmt.Sprintf("pid %d to disappear (no zombie left)", pid), 10*time.Second, func() bool { return !procExists(pid) })
}

// findProcs returns the live pids whose whole command line is cmdline (so
// the msb, nsenter and sh processes that merely mention it do not count).
func findProcs(cmdline string) []int {
	var out []int
	for _, pid := range allPids() {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || !procAlive(pid, 0) {
			continue
		}
		if strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " ")) == cmdline {
			out = append(out, pid)
		}
	}
	return out
}

var sleepSeq atomic.Int64

// uniqueSleep is a `sleep` argument no other test uses, to find the process
// on the host by its command line.
func uniqueSleep() string {
	return fmt.Sprintf("%d.%06d", 7000+os.Getpid()%1000, sleepSeq.Add(1))
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}

func wantStderr(t *testing.T, r result, sub string) {
	t.Helper()
	if !strings.Contains(r.stderr, sub) {
		t.Fatalf("stderr does not contain %q: %s", sub, r)
	}
}
