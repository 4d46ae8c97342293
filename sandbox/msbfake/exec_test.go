package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("x1")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // exact text after the backend notice
	}{
		{"success", []string{"--", "sh", "-c", "echo out; echo err >&2"}, 0, "out\n", "err\n"},
		{"guest code", []string{"--", "sh", "-c", "echo partial; exit 3"}, 3, "partial\n", ""},
		{"stdout before stderr", []string{"--", "sh", "-c", "echo e1 >&2; echo o1; echo e2 >&2; echo o2"}, 0, "o1\no2\n", "e1\ne2\n"},
		{"missing binary", []string{"--", "no-such-binary-xyz", "arg"}, 127, "",
			"error: failed to exec \"no-such-binary-xyz\"\n  → not found: spawn \"no-such-binary-xyz\": No such file or directory (os error 2) (ENOENT)\n  → check that the command exists in the sandbox and is on PATH\n"},
		{"missing absolute path", []string{"--", "/nope/bin"}, 127, "", "error: failed to exec \"/nope/bin\""},
		{"not executable", []string{"--", "/etc/hostname"}, 126, "", "→ permission denied: spawn \"/etc/hostname\""},
		{"shell 127 is not a spawn failure", []string{"--", "sh", "-c", "exit 127"}, 127, "", ""},
		{"killed by signal", []string{"--", "sh", "-c", "kill -9 $$"}, 255, "", ""},
		{"bad cwd", []string{"-w", "/does/not/exist", "--", "true"}, 1, "", "→ bad cwd: chdir \"/does/not/exist\""},
		{"workdir", []string{"-w", "/tmp", "--", "pwd"}, 0, "/tmp\n", ""},
		{"options after name", []string{"-e", "A=1", "--", "printenv", "A"}, 0, "1\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"exec", "x1"}, tc.args...)
			if tc.args[0] == "-w" || tc.args[0] == "-e" {
				args = append([]string{"exec", tc.args[0], tc.args[1], "x1"}, tc.args[2:]...)
			}
			r := e.run(args...)
			if r.code != tc.code || r.stdout != tc.stdout || !strings.HasPrefix(r.stderr, backendLine) ||
				!strings.Contains(r.stderr[len(backendLine):], tc.stderr) || tc.stderr == "" && r.stderr != backendLine {
				t.Fatalf("%s\nwant exit %d stdout %q stderr %q", r, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestExecTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("t1")
	tok := uniqueSleep()
	r := e.run("exec", "--timeout", "1", "t1", "--", "sh", "-c", "echo dropped; sleep "+tok)
	wantCode(t, r, 1)
	if r.stdout != "" || r.stderr != backendLine+"error: exec timed out after 1s\n" {
		t.Fatalf("timeout: %s", r)
	}
	// The whole command tree is killed, not only the direct child.
	waitFor(t, "the timed-out command to die", 10*time.Second, func() bool { return len(findProcs("sleep "+tok)) == 0 })
	if r.elapsed > 20*time.Second {
		t.Fatalf("timeout took %s", r.elapsed)
	}
}

func TestExecStdinAndArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("s1", "-w", "/workspace", "--copy-dir", t.TempDir()+":/workspace")
	payload := "line1\nline2\x00binary\xff\xfe end"
	r := e.okOpts([]opt{withStdin(payload)}, "exec", "s1", "--", "cat")
	if r.stdout != payload {
		t.Fatalf("stdin round trip: %q", r.stdout)
	}
	r = e.okOpts([]opt{withStdin("")}, "exec", "s1", "--", "cat")
	if r.stdout != "" {
		t.Fatalf("empty stdin: %q", r.stdout)
	}
	// A closed stdin (ssh host msb … <&-) behaves like an empty one.
	cmd := exec.Command("sh", "-c", `exec "$0" exec s1 -- sh -c 'cat; echo done' <&-`, msbBin)
	cmd.Env = append(os.Environ(), "MSB_HOME="+e.home)
	out, err := cmd.Output()
	if err != nil || string(out) != "done\n" {
		t.Fatalf("closed stdin: %q %v", out, err)
	}

	canary := "/workspace/canary"
	args := []string{
		"plain", "with space", "'single'", `"double"`, "$(touch " + canary + "1)", "`touch " + canary + "2`",
		"a; touch " + canary + "3", "x && touch " + canary + "4", "| touch " + canary + "5", "multi\nline\n",
		"héllo wörld — 世界 🚀", "$HOME", "*", `back\slash`, "", "-n", "--", "tab\there", "> " + canary + "6",
	}
	script := `for a in "$@"; do printf '%s\0' "$a"; done`
	r = e.ok(append([]string{"exec", "s1", "--", "sh", "-c", script, "sh"}, args...)...)
	got := strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00")
	if strings.Join(got, "\x00") != strings.Join(args, "\x00") {
		t.Fatalf("arguments changed on the way:\ngot  %q\nwant %q", got, args)
	}
	// Direct argv (no shell): printf receives the metacharacters verbatim.
	r = e.ok("exec", "s1", "--", "printf", "%s|", "$(id)", "`id`", ";id")
	if r.stdout != "$(id)|`id`|;id|" {
		t.Fatalf("direct argv: %q", r.stdout)
	}
	r = e.ok("exec", "-e", "EVIL=$(touch "+canary+"7); `touch "+canary+"8`", "s1", "--", "printenv", "EVIL")
	if r.stdout != "$(touch "+canary+"7); `touch "+canary+"8`\n" {
		t.Fatalf("env value changed: %q", r.stdout)
	}
	matches, _ := filepath.Glob(filepath.Join(e.root("s1"), "workspace", "canary*"))
	if len(matches) > 0 {
		t.Fatalf("shell metacharacters were executed: %v", matches)
	}
}

func TestExecEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("v1", "-e", "BOX=box", "-e", "OVER=box")
	r := e.ok("exec", "-e", "OVER=exec", "-e", "NEW=1", "v1", "--", "sh", "-c", `echo "$BOX $OVER $NEW $HOME $PATH"`)
	if r.stdout != "box exec 1 /root "+guestPath+"\n" {
		t.Fatalf("env: %q", r.stdout)
	}
	r = e.ok("exec", "v1", "--", "env")
	for _, leak := range []string{"MSB_HOME=", "FAKE_MSB"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("host variable %s leaked into the guest", leak)
		}
	}
	// -t: one merged stream with CRLF line endings, like a guest PTY.
	r = e.ok("exec", "-t", "v1", "--", "sh", "-c", "echo a; echo b >&2")
	if r.stdout != "a\r\nb\r\n" {
		t.Errorf("exec -t: %q", r.stdout)
	}
	wantCode(t, e.run("exec", "-t", "--no-tty", "v1", "--", "true"), 2)
	r = e.okOpts([]opt{withStdin("streamed")}, "exec", "--stream", "v1", "--", "cat")
	if r.stdout != "streamed" {
		t.Errorf("exec --stream: %q", r.stdout)
	}
	// A background process holding the streamed stdout must not hold msb.
	r = e.ok("exec", "--stream", "v1", "--", "sh", "-c", "sleep "+uniqueSleep()+" & echo hi")
	if r.stdout != "hi\n" || r.elapsed > 10*time.Second {
		t.Errorf("exec --stream with a background child: %s after %s", r, r.elapsed)
	}
}

// TestDetachedProcessOutlivesExec is the agent-launch pattern: a process
// started in the background by one exec keeps running afterwards, and is
// killed (and reaped) when the box stops.
func TestDetachedProcessOutlivesExec(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("d1")
	tok1, tok2 := uniqueSleep(), uniqueSleep()
	// The second process keeps the exec's stdout open; exec must not wait for it.
	r := e.ok("exec", "d1", "--", "sh", "-c", "nohup sleep "+tok1+" >/dev/null 2>&1 & sleep "+tok2+" & echo launched")
	if r.stdout != "launched\n" {
		t.Fatalf("launch: %s", r)
	}
	if r.elapsed > 10*time.Second {
		t.Fatalf("exec waited for its background children (%s)", r.elapsed)
	}
	var pids []int
	waitFor(t, "the detached processes", 5*time.Second, func() bool {
		pids = append(findProcs("sleep "+tok1), findProcs("sleep "+tok2)...)
		return len(pids) == 2
	})
	// Still alive after further invocations.
	e.ok("exec", "d1", "--", "true")
	e.ok("ls")
	for _, p := range pids {
		if !procAlive(p, 0) {
			t.Fatalf("detached pid %d died", p)
		}
	}
	// The guest sees its own processes (private pid namespace, pid 1 = init).
	if got := e.ok("exec", "d1", "--", "cat", "/proc/1/cmdline").stdout; !strings.Contains(got, "bwrap") {
		t.Fatalf("unexpected guest pid 1: %q", got)
	}
	rt := *e.sandbox("d1").Runtime
	e.ok("stop", "d1")
	for _, p := range append(pids, rt.InitPid, rt.BwrapPid) {
		waitProcGone(t, p)
	}
	// Start again, launch again, and rm -f must clean up the same way.
	e.ok("start", "d1")
	e.ok("exec", "d1", "--", "sh", "-c", "nohup sleep "+tok1+" >/dev/null 2>&1 &")
	waitFor(t, "the relaunched process", 5*time.Second, func() bool { return len(findProcs("sleep "+tok1)) == 1 })
	again := findProcs("sleep " + tok1)
	rt = *e.sandbox("d1").Runtime
	e.ok("rm", "-f", "d1")
	for _, p := range append(again, rt.InitPid, rt.BwrapPid) {
		waitProcGone(t, p)
	}
	assertNoZombieChildren(t)
}

// assertNoZombieChildren checks that nothing re-parented to the test process
// stays a zombie (the reaper must have collected it).
func assertNoZombieChildren(t *testing.T) {
	t.Helper()
	waitFor(t, "zombie children to be reaped", 10*time.Second, func() bool {
		for _, pid := range allPids() {
			info, ok := readProcStat(pid)
			if ok && info.ppid == os.Getpid() && info.state == 'Z' {
				comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
				if !bytes.Equal(bytes.TrimSpace(comm), []byte("msb")) {
					return false
				}
			}
		}
		return true
	})
}

// TestExecOnStoppedBox: exec revives a stopped box for the call and stops it
// again (the CLI owns the lifecycle).
func TestExecOnStoppedBox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("o1")
	e.ok("exec", "o1", "--", "sh", "-c", "echo kept > /root/state")
	e.ok("stop", "o1")
	r := e.ok("exec", "o1", "--", "cat", "/root/state")
	if r.stdout != "kept\n" || e.status("o1") != "Stopped" {
		t.Fatalf("exec on stopped box: %s, status %s", r, e.status("o1"))
	}
	// 0.6.9 bug kept on purpose: a failed exec leaves the box running.
	wantCode(t, e.run("exec", "o1", "--", "no-such-binary-xyz"), 127)
	if e.status("o1") != "Running" {
		t.Fatalf("after a failed exec the box should stay Running (0.6.9), got %s", e.status("o1"))
	}
}

// TestExecInterrupted: when the caller gives up (SIGTERM, e.g. an SSH
// session torn down), the guest command is killed with it.
func TestExecInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("sig1")
	tok := uniqueSleep()
	cmd := exec.Command(msbBin, "exec", "sig1", "--", "sh", "-c", "sleep "+tok)
	cmd.Env = append(os.Environ(), "MSB_HOME="+e.home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the guest command", 10*time.Second, func() bool { return len(findProcs("sleep "+tok)) > 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("want exit 143 after SIGTERM, got %v", err)
	}
	waitFor(t, "the guest command to die", 10*time.Second, func() bool { return len(findProcs("sleep "+tok)) == 0 })
	if len(e.sandbox("sig1").Execs) != 0 {
		t.Error("the exec lease must be released")
	}
}
