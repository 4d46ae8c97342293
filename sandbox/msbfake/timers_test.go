package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// at runs msb with the fake clock moved forward by offset.
func (e *fakeEnv) at(offset string, args ...string) result {
	e.t.Helper()
	return e.runOpts([]opt{withEnv("FAKE_MSB_CLOCK_OFFSET=" + offset)}, args...)
}

func TestIdleTimeoutAndMaxDuration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.env = []string{"FAKE_MSB_NOW=2026-08-15T00:00:00Z"}
	e.box("i1", "--idle-timeout", "60s")
	e.box("i2", "--idle-timeout", "1m")
	e.box("i3", "--max-duration", "2m")
	i1 := *e.sandbox("i1").Runtime

	e.at("59s", "ls")
	if e.status("i1") != "Running" || e.status("i2") != "Running" {
		t.Fatal("nothing may expire before the timeout")
	}
	e.at("30s", "touch", "i2") // refreshes i2's idle timer
	e.at("60s", "ls")
	if e.status("i1") != "Stopped" || e.status("i2") != "Running" || e.status("i3") != "Running" {
		t.Fatalf("at +60s: i1=%s i2=%s i3=%s", e.status("i1"), e.status("i2"), e.status("i3"))
	}
	waitProcGone(t, i1.InitPid)
	waitProcGone(t, i1.BwrapPid)
	e.at("80s", "ping", "i2") // ping without --touch is not activity
	e.at("90s", "ls")
	if e.status("i2") != "Stopped" {
		t.Fatalf("i2 should idle out at +90s, is %s", e.status("i2"))
	}
	if r := e.at("119s", "ps", "i3", "--format", "json"); !strings.Contains(r.stdout, `"status": "Running"`) {
		t.Fatalf("i3 before max duration: %s", r)
	}
	if r := e.at("120s", "ls", "--format", "json"); !strings.Contains(r.stdout, `"name": "i3",
    "status": "Stopped"`) {
		t.Fatalf("i3 after max duration: %s", r.stdout)
	}
	// metrics shows expired boxes as exited.
	if r := e.at("121s", "metrics", "i3", "--format", "json"); !strings.Contains(r.stdout, `"state": "exited"`) {
		t.Fatalf("metrics of an expired box: %s", r)
	}
	// exec silently revives an expired box for the call, then stops it again.
	if r := e.at("200s", "exec", "i1", "--", "echo", "revived"); r.code != 0 || r.stdout != "revived\n" || e.status("i1") != "Stopped" {
		t.Fatalf("exec on expired box: %s, status %s", r, e.status("i1"))
	}
}

func TestEphemeralExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.env = []string{"FAKE_MSB_NOW=2026-08-15T00:00:00Z"}
	e.ok("pull", "-q", "alpine")
	name := strings.TrimSpace(e.ok("run", "-d", "--max-duration", "10s", "alpine", "--", "sleep", "infinity").stdout)
	rt := *e.sandbox(name).Runtime
	if r := e.at("10s", "ls", "--format", "json"); r.stdout != "[]\n" {
		t.Fatalf("an expired ephemeral sandbox must disappear: %s", r.stdout)
	}
	waitProcGone(t, rt.InitPid)
	if _, err := os.Stat(e.root(name)); !os.IsNotExist(err) {
		t.Error("its guest root must be deleted")
	}
}

// TestExecInFlightIsNotIdle: a running exec holds off the idle timer.
func TestExecInFlightIsNotIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.env = []string{"FAKE_MSB_NOW=2026-08-15T00:00:00Z"}
	e.box("i4", "--idle-timeout", "10s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, msbBin, "exec", "i4", "--", "sh", "-c", "while [ ! -e /go ]; do sleep 0.01; done; echo finished")
	cmd.Env = append(os.Environ(), "MSB_HOME="+e.home, "FAKE_MSB_NOW=2026-08-15T00:00:00Z")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exec lease", 10*time.Second, func() bool { return len(e.sandbox("i4").Execs) == 1 })
	e.at("100s", "ls")
	if e.status("i4") != "Running" {
		t.Fatal("a box with an exec in flight must not idle out")
	}
	writeFile(t, e.root("i4")+"/go", "", 0o644)
	if err := cmd.Wait(); err != nil || out.String() != "finished\n" {
		t.Fatalf("exec: %v %q", err, out.String())
	}
	e.at("9s", "ls")
	if e.status("i4") != "Running" {
		t.Fatal("the exec's end is activity")
	}
	e.at("10s", "ls")
	if e.status("i4") != "Stopped" {
		t.Fatal("idle timeout after the exec finished")
	}
}
