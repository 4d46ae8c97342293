package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBootFailureKnob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("pull", "-q", "alpine")
	fail := withEnv("FAKE_MSB_BOOT_FAIL=f*")
	block := "error: failed to start \"f1\"\n  → boot: simulated VM boot failure (FAKE_MSB_BOOT_FAIL)\n  → run `msb logs --source system f1` for full diagnostics\n"
	r := e.runOpts([]opt{fail}, "create", "--name", "f1", "alpine")
	if r.code != 1 || r.stderr != backendLine+block {
		t.Fatalf("create with boot failure: %s", r)
	}
	if e.status("f1") != "Crashed" {
		t.Fatalf("a failed boot leaves the sandbox Crashed, got %q", e.status("f1"))
	}
	if r = e.runOpts([]opt{fail}, "start", "f1"); r.code != 1 || r.stderr != block {
		t.Fatalf("start with boot failure: %s", r)
	}
	wantCode(t, e.runOpts([]opt{fail}, "exec", "f1", "--", "true"), 1)
	e.ok("start", "f1")
	if e.status("f1") != "Running" {
		t.Fatal("start without the knob recovers")
	}
	// Other names are unaffected; an ephemeral run that fails leaves nothing.
	e.okOpts([]opt{fail}, "create", "--name", "g1", "alpine")
	wantCode(t, e.runOpts([]opt{withEnv("FAKE_MSB_BOOT_FAIL=*")}, "run", "-d", "alpine", "--", "sleep", "infinity"), 1)
	if got := e.ok("ls", "-q").stdout; got != "g1\nf1\n" {
		t.Fatalf("ls after failed ephemeral run: %q", got)
	}
}

func TestCrashKnobAndDeadRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("c1")
	e.box("c2")
	rt := *e.sandbox("c1").Runtime
	r := e.okOpts([]opt{withEnv("FAKE_MSB_CRASH=c1")}, "ls", "--format", "json")
	if !strings.Contains(r.stdout, `"name": "c1",
    "status": "Crashed"`) || e.status("c2") != "Running" {
		t.Fatalf("crash knob: %s", r.stdout)
	}
	waitProcGone(t, rt.InitPid)
	waitProcGone(t, rt.BwrapPid)
	// A crashed box can be started and removed.
	e.ok("start", "c1")
	if e.status("c1") != "Running" {
		t.Fatal("start after crash")
	}
	// A runtime that dies behind msb's back is reconciled to Crashed.
	rt2 := *e.sandbox("c2").Runtime
	if err := syscall.Kill(rt2.InitPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitProcGone(t, rt2.InitPid)
	if got := e.ok("ps", "c2", "--format", "json").stdout; !strings.Contains(got, `"status": "Crashed"`) {
		t.Fatalf("dead runtime: %s", got)
	}
	e.ok("rm", "c2")
}

func TestUnreachableImageKnob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	down := withEnv("FAKE_MSB_UNREACHABLE_IMAGES=alpine,ghcr.io/*")
	msg := "error: image error: failed to pull docker.io/library/alpine:latest"
	r := e.runOpts([]opt{down}, "pull", "alpine")
	wantCode(t, r, 1)
	wantStderr(t, r, msg)
	r = e.runOpts([]opt{down}, "create", "--name", "u1", "alpine") // default policy if-missing
	wantCode(t, r, 1)
	wantStderr(t, r, msg)
	wantStderr(t, e.runOpts([]opt{down}, "pull", "ghcr.io/org/img:1"), "failed to pull ghcr.io/org/img:1")
	e.ok("pull", "alpine")
	wantCode(t, e.runOpts([]opt{down}, "create", "--name", "u1", "--pull", "always", "alpine"), 1)
	e.okOpts([]opt{down}, "create", "--name", "u1", "--pull", "never", "alpine")
	e.okOpts([]opt{down}, "create", "--name", "u2", "alpine:latest") // cached: if-missing does not pull
	if got := e.ok("image", "ls", "-q").stdout; got != "docker.io/library/alpine:latest\n" {
		t.Fatalf("image cache: %q", got)
	}
	e.ok("image", "rm", "alpine")
	wantStderr(t, e.run("create", "--name", "u3", "--pull", "never", "alpine"), "image not cached: docker.io/library/alpine:latest")
}

func TestExecDelayKnob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("w1")
	r := e.okOpts([]opt{withEnv("FAKE_MSB_EXEC_DELAY=300ms")}, "exec", "w1", "--", "echo", "slow")
	if r.stdout != "slow\n" || r.elapsed < 300*time.Millisecond {
		t.Fatalf("slow exec: %s after %s", r, r.elapsed)
	}
	r = e.runOpts([]opt{withEnv("FAKE_MSB_EXEC_DELAY=30s")}, "exec", "--timeout", "1s", "w1", "--", "echo", "never")
	if r.code != 1 || r.stdout != "" || !strings.HasSuffix(r.stderr, "error: exec timed out after 1s\n") || r.elapsed > 20*time.Second {
		t.Fatalf("slow exec with timeout: %s after %s", r, r.elapsed)
	}
}
