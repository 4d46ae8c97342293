package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

const backendLine = "   • Backend      local\n"

func TestListStatusInspectExactOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Timers are evaluated against the fake clock, so every call shares it.
	e.env = []string{"FAKE_MSB_NOW=2026-08-15T02:22:00Z"}
	e.ok("pull", "-q", "alpine")
	e.ok("pull", "-q", "python:3.12")
	e.okOpts([]opt{withEnv("FAKE_MSB_NOW=2026-08-15T02:21:00.123456Z")},
		"create", "--name", "b1", "-c", "2", "-m", "1G", "-p", "8080:80", "--pull", "never", "alpine")
	e.okOpts([]opt{withEnv("FAKE_MSB_NOW=2026-08-15T02:21:01.5Z")},
		"run", "-d", "--name", "b2", "--idle-timeout", "15m", "--max-duration", "1h", "--pull", "never", "python:3.12", "--", "sleep", "infinity")

	wantLs := `[
  {
    "name": "b2",
    "status": "Running",
    "created_at": "2026-08-15T02:21:01.500+00:00",
    "image": "python:3.12"
  },
  {
    "name": "b1",
    "status": "Running",
    "created_at": "2026-08-15T02:21:00.123456+00:00",
    "image": "alpine"
  }
]
`
	if r := e.ok("ls", "--format", "json"); r.stdout != wantLs {
		t.Fatalf("ls --format json:\n%s\nwant:\n%s", r.stdout, wantLs)
	}
	e.ok("stop", "b1")
	wantPs := `{
  "name": "b1",
  "status": "Stopped",
  "image": "alpine",
  "command": "\"/bin/sh\"",
  "cpus": 2,
  "max_cpus": 2,
  "memory_mib": 1024,
  "max_memory_mib": 1024,
  "thp": "madvise",
  "ports": [
    "127.0.0.1:8080->80/tcp"
  ]
}
`
	if r := e.ok("ps", "b1", "--format", "json"); r.stdout != wantPs {
		t.Fatalf("ps b1 --format json:\n%s\nwant:\n%s", r.stdout, wantPs)
	}
	listings := []struct {
		args []string
		want string
	}{
		{[]string{"ls", "-q"}, "b2\nb1\n"},
		{[]string{"ls", "--running", "-q"}, "b2\n"},
		{[]string{"ls", "--stopped", "-q"}, "b1\n"},
		{[]string{"ps", "-q"}, "b2\n"},
		{[]string{"ps", "-a", "-q"}, "b1\nb2\n"},
	}
	for _, l := range listings {
		if r := e.ok(l.args...); r.stdout != l.want {
			t.Errorf("msb %q = %q, want %q", l.args, r.stdout, l.want)
		}
	}
	var ps []map[string]any
	if err := json.Unmarshal([]byte(e.ok("ps", "--format", "json").stdout), &ps); err != nil || len(ps) != 1 || ps[0]["name"] != "b2" {
		t.Fatalf("ps --format json should list only running b2: %v %v", ps, err)
	}
	table := e.ok("ls").stdout
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^NAME {4,}IMAGE {4,}STATUS {4,}CREATED$`).MatchString(lines[0]) ||
		!strings.Contains(lines[1], "running") || !strings.Contains(lines[2], "stopped") {
		t.Fatalf("ls table:\n%s", table)
	}
	checkInspect(t, e)
}

func checkInspect(t *testing.T, e *fakeEnv) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(e.ok("inspect", "b2", "--format", "json").stdout), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "status", "config", "created_at", "updated_at", "active_config", "pending_changes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("inspect lacks %q", k)
		}
	}
	var cfg struct {
		Spec struct {
			Name      string `json:"name"`
			Image     string `json:"image"`
			Lifecycle struct {
				MaxDuration *uint64 `json:"max_duration_secs"`
				Idle        *uint64 `json:"idle_timeout_secs"`
			} `json:"lifecycle"`
			Runtime struct {
				Cmd []string `json:"cmd"`
			} `json:"runtime"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(doc["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	s := cfg.Spec
	if s.Name != "b2" || s.Image != "python:3.12" || s.Lifecycle.MaxDuration == nil || *s.Lifecycle.MaxDuration != 3600 ||
		s.Lifecycle.Idle == nil || *s.Lifecycle.Idle != 900 || strings.Join(s.Runtime.Cmd, " ") != "sleep infinity" {
		t.Errorf("inspect spec = %+v", s)
	}
	if string(doc["pending_changes"]) != "[]" || string(doc["active_config"]) == "null" {
		t.Errorf("running box: pending_changes=%s active_config null=%v", doc["pending_changes"], string(doc["active_config"]) == "null")
	}
	if !strings.Contains(e.ok("inspect", "b1", "--format", "json").stdout, `"active_config": null`) {
		t.Error("a stopped box has no active_config")
	}
	wantCode(t, e.run("inspect", "nope", "--format", "json"), 1)
}

func TestLifecycleRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("pull", "-q", "alpine")
	r := e.ok("create", "--name", "c1", "--pull", "never", "alpine")
	if r.stdout != "" || r.stderr != backendLine {
		t.Fatalf("named create: %s", r)
	}
	r = e.ok("create", "--pull", "never", "alpine")
	if !regexp.MustCompile(`^msb-[0-9a-f]{8}\n$`).MatchString(r.stdout) {
		t.Fatalf("unnamed create must print the generated name: %s", r)
	}
	gen := strings.TrimSpace(r.stdout)
	if e.sandbox(gen).Ephemeral {
		t.Fatal("an unnamed create is not ephemeral")
	}

	exists := "error: sandbox already exists: sandbox 'c1' already exists; remove it, start the stopped sandbox, or recreate with .replace()\n"
	for _, args := range [][]string{
		{"create", "--name", "c1", "alpine"},
		{"create", "--name", "c1", "--pull", "never", "node"}, // the name is checked before the image
	} {
		r = e.run(args...)
		wantCode(t, r, 1)
		if r.stderr != backendLine+exists {
			t.Errorf("msb %q stderr = %q, want %q", args, r.stderr, exists)
		}
	}
	r = e.run("create", "--name", "c9", "--pull", "never", "node")
	wantCode(t, r, 1)
	if r.stderr != backendLine+"error: image error: image not cached: docker.io/library/node:latest\n" {
		t.Errorf("uncached image: %q", r.stderr)
	}
	if e.status("c9") != "" {
		t.Error("a failed create must not leave a sandbox")
	}

	old := *e.sandbox("c1").Runtime
	r = e.ok("stop", "c1")
	if r.stderr != "   ✓ Stopped      c1\n" || e.status("c1") != "Stopped" {
		t.Fatalf("stop: %s, status %s", r, e.status("c1"))
	}
	waitProcGone(t, old.InitPid)
	waitProcGone(t, old.BwrapPid)
	if r = e.ok("stop", "c1"); r.stderr != "   ✓ Stopped      c1\n" {
		t.Errorf("stop is idempotent: %s", r)
	}
	if r = e.ok("stop", "-q", "c1"); r.stderr != "" {
		t.Errorf("stop -q printed %q", r.stderr)
	}
	if r = e.ok("start", "c1"); r.stderr != "   ✓ Started      c1\n" || e.status("c1") != "Running" {
		t.Fatalf("start: %s", r)
	}
	r = e.run("start", "c1")
	wantCode(t, r, 1)
	if r.stderr != "error: sandbox still running: cannot start sandbox 'c1': already running\n" {
		t.Errorf("start running: %q", r.stderr)
	}
	before := e.sandbox("c1").Runtime.InitPid
	e.ok("restart", "c1")
	if after := e.sandbox("c1").Runtime; after == nil || after.InitPid == before {
		t.Fatal("restart must boot a new runtime")
	}
	waitProcGone(t, before)

	e.ok("touch", "c1")
	e.ok("ping", "c1")
	e.ok("stop", "c1")
	wantCode(t, e.run("touch", "c1"), 1)
	wantCode(t, e.run("ping", "c1"), 1)
	e.ok("start", "c1")

	checkRemove(t, e)
}

func checkRemove(t *testing.T, e *fakeEnv) {
	t.Helper()
	r := e.run("rm", "c1")
	wantCode(t, r, 1)
	if r.stderr != backendLine+"error: sandbox still running: cannot remove sandbox 'c1': still running\n" {
		t.Errorf("rm running: %q", r.stderr)
	}
	rt := *e.sandbox("c1").Runtime
	r = e.ok("rm", "-f", "c1")
	if r.stderr != backendLine+"   ✓ Removed      c1\n" {
		t.Errorf("rm -f: %q", r.stderr)
	}
	if _, err := os.Stat(e.root("c1")); !os.IsNotExist(err) {
		t.Errorf("rm must delete the guest root: %v", err)
	}
	waitProcGone(t, rt.InitPid)
	waitProcGone(t, rt.BwrapPid)

	notFound := []struct {
		args   []string
		stderr string
	}{
		{[]string{"rm", "c1"}, backendLine + "error: sandbox not found: c1\n"},
		{[]string{"rm", "-q", "c1"}, backendLine},
		{[]string{"rm", "-f", "-q", "c1"}, backendLine},
		{[]string{"stop", "c1"}, "error: sandbox not found: c1\n"},
		{[]string{"stop", "-q", "c1"}, "error: sandbox not found: c1\n"},
		{[]string{"start", "c1"}, "error: sandbox not found: c1\n"},
		{[]string{"ps", "c1"}, "error: sandbox not found: c1\n"},
		{[]string{"exec", "c1", "--", "true"}, backendLine + "error: sandbox not found: c1\n"},
		{[]string{"cp", "./x", "c1:/x"}, "error: sandbox not found: c1\n"},
	}
	for _, tc := range notFound {
		r := e.run(tc.args...)
		if r.code != 1 || r.stderr != tc.stderr {
			t.Errorf("msb %q: %s; want exit 1 and stderr %q", tc.args, r, tc.stderr)
		}
	}
}

func TestBulkAndLabels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("l1", "--label", "team=a")
	e.box("l2", "--label", "team=a", "--label", "tier=x")
	e.box("l3", "--label", "team=b")
	if got := e.ok("ls", "-q", "--label", "team=a").stdout; got != "l2\nl1\n" {
		t.Errorf("ls --label team=a = %q", got)
	}
	if got := e.ok("ls", "-q", "--label", "team=a", "--label", "tier").stdout; got != "l2\n" {
		t.Errorf("labels are AND-matched: %q", got)
	}
	// Any failure makes the bulk command exit 1, but the others are processed.
	r := e.run("stop", "ghost", "l3")
	wantCode(t, r, 1)
	if r.stderr != "error: sandbox not found: ghost\n   ✓ Stopped      l3\n" || e.status("l3") != "Stopped" {
		t.Errorf("bulk stop: %s status %s", r, e.status("l3"))
	}
	e.ok("stop", "--label", "team=a")
	if e.status("l1") != "Stopped" || e.status("l2") != "Stopped" {
		t.Error("stop --label must stop every match")
	}
	e.ok("rm", "--label", "team=a")
	if got := e.ok("ls", "-q").stdout; got != "l3\n" {
		t.Errorf("after rm --label: %q", got)
	}
	e.ok("create", "--name", "l3", "--replace", "alpine")
	if e.status("l3") != "Running" {
		t.Error("--replace must recreate the sandbox")
	}
}

func TestRunSemantics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("pull", "-q", "alpine")
	if r := e.ok("run", "-d", "--name", "r1", "--pull", "never", "alpine", "--", "sleep", "infinity"); r.stdout != "r1\n" {
		t.Fatalf("run -d: %s", r)
	}
	// Reuse: no error, warnings on stderr, no command run.
	r := e.ok("run", "-d", "--name", "r1", "-m", "1G", "alpine", "--", "touch", "/reused")
	if r.stdout != "r1\n" {
		t.Errorf("reuse stdout %q", r.stdout)
	}
	wantStderr(t, r, "warn: sandbox 'r1' already exists; creation flags ignored (use --replace to recreate)\n")
	wantStderr(t, r, "warn: command after -- is not applied when reusing existing sandbox 'r1' in --detach mode (use `msb exec r1 -- ...`)\n")
	if _, err := os.Stat(e.root("r1") + "/reused"); err == nil {
		t.Error("the command after -- must not run when reusing")
	}
	if e.sandbox("r1").Config.MemoryMiB != 512 {
		t.Error("creation flags must be ignored on reuse")
	}
	e.ok("stop", "r1")
	e.ok("run", "-d", "--name", "r1", "alpine")
	if e.status("r1") != "Running" {
		t.Error("run reusing a stopped sandbox must start it")
	}

	// A startup command that exits stops the VM (msb >= 0.6.7).
	e.ok("run", "-d", "--name", "r2", "alpine")
	e.ok("run", "-d", "--name", "r3", "alpine", "--", "sh", "-c", "echo started > /proof")
	for _, n := range []string{"r2", "r3"} {
		// The bound only guards against a hang on a loaded machine; the
		// last status is reported to tell a slow stop from a wrong one.
		var last string
		deadline := time.Now().Add(30 * time.Second)
		for {
			last = e.ok("ps", n, "--format", "json").stdout
			if strings.Contains(last, `"status": "Stopped"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not stop after its startup command; last ps:\n%s", n, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if data, _ := os.ReadFile(e.root("r3") + "/proof"); string(data) != "started\n" {
		t.Errorf("startup command did not run: %q", data)
	}

	// Unnamed runs are ephemeral.
	name := strings.TrimSpace(e.ok("run", "-d", "alpine", "--", "sleep", "infinity").stdout)
	if !e.sandbox(name).Ephemeral {
		t.Fatal("unnamed run must be ephemeral")
	}
	e.ok("stop", name)
	if strings.Contains(e.ok("ls", "-q").stdout, name) {
		t.Error("a stopped ephemeral sandbox must vanish from ls")
	}
	if _, err := os.Stat(e.root(name)); !os.IsNotExist(err) {
		t.Error("a stopped ephemeral sandbox must lose its guest root")
	}
	checkAttachedRun(t, e)
}

func checkAttachedRun(t *testing.T, e *fakeEnv) {
	t.Helper()
	r := e.run("run", "--name", "r4", "alpine", "--", "sh", "-c", "echo out; echo err >&2; exit 5")
	if r.code != 5 || r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("attached run: %s", r)
	}
	if e.status("r4") != "Stopped" {
		t.Error("attached run stops its named sandbox afterwards")
	}
	count := len(e.state().Sandboxes)
	r = e.okOpts([]opt{withStdin("piped input")}, "run", "alpine", "--", "cat")
	if r.stdout != "piped input" {
		t.Errorf("attached run stdin: %s", r)
	}
	if len(e.state().Sandboxes) != count {
		t.Error("an unnamed attached run leaves nothing behind")
	}
	wantCode(t, e.run("run", "--from-snapshot", "s", "alpine"), 2)
	wantStderr(t, e.run("run", "--from-snapshot", "s", "--copy-dir", e.home+":/w"), "patches cannot be combined with from_snapshot")
	wantCode(t, e.run("run", "-d", "--name", "r5", "alpine", "sleep"), 2) // a command needs `--`
}
