package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsolation boots two boxes the way the orchestrator does (repo baked
// in with --copy-dir, -w /workspace) and checks what each can see.
func TestIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "README.md"), "repo\n", 0o644)
	for _, n := range []string{"ia", "ib"} {
		e.box(n, "-m", "1G", "--idle-timeout", "15m", "--max-duration", "1h",
			"--net-default-egress", "deny", "--net-rule", "allow@dns", "--net-rule", "allow@github.com:tcp:443",
			"-w", "/workspace", "--copy-dir", src+":/workspace")
	}
	// /workspace is the cwd, holds the copied tree and writes land in the guest root.
	r := e.ok("exec", "ia", "--", "sh", "-c", "pwd; cat README.md; echo from-a > note.txt")
	if r.stdout != "/workspace\nrepo\n" {
		t.Fatalf("workspace: %s", r)
	}
	if readFile(t, filepath.Join(e.root("ia"), "workspace", "note.txt")) != "from-a\n" {
		t.Fatal("a write to /workspace must land in the box's guest root")
	}
	if _, err := os.Stat(filepath.Join(src, "note.txt")); err == nil {
		t.Fatal("--copy-dir must copy, not bind, the host directory")
	}
	wantCode(t, e.run("exec", "ib", "--", "test", "-e", "/workspace/note.txt"), 1)

	// HOME is the box's own /root; /tmp is private; the host's / is not visible.
	tmpName := "msbfake-iso-" + filepath.Base(e.home)
	e.ok("exec", "ia", "--", "sh", "-c", `echo $HOME > ~/home.txt; touch /tmp/`+tmpName)
	if readFile(t, filepath.Join(e.root("ia"), "root", "home.txt")) != "/root\n" {
		t.Fatal("HOME must be the box's own /root")
	}
	wantCode(t, e.run("exec", "ib", "--", "test", "-e", "/tmp/"+tmpName), 1)
	if _, err := os.Stat("/tmp/" + tmpName); err == nil {
		t.Fatal("the box's /tmp must not be the host's")
	}
	wantCode(t, e.run("exec", "ia", "--", "test", "-e", e.home), 1)
	wantCode(t, e.run("exec", "ia", "--", "test", "-e", "/work"), 1)

	// /usr and /etc are the host's, read-only; tools work.
	r = e.run("exec", "ia", "--", "sh", "-c", "touch /usr/x 2>&1; touch /etc/x 2>&1; true")
	if strings.Count(r.stdout, "Read-only file system") != 2 {
		t.Fatalf("/usr and /etc must be read-only: %s", r)
	}
	r = e.ok("exec", "ia", "--", "sh", "-c", "git init -q . && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m init && git log --format=%s")
	if r.stdout != "init\n" {
		t.Fatalf("git inside the box: %s", r)
	}
	// Each box has its own hostname and pid namespace.
	if got := e.ok("exec", "ib", "--", "hostname").stdout; got != "ib\n" {
		t.Errorf("hostname = %q", got)
	}
	r = e.ok("exec", "ia", "--", "sh", "-c", "ls /proc | grep -c '^[0-9]'")
	if n := strings.TrimSpace(r.stdout); n == "" || len(n) > 1 {
		t.Errorf("the box should see only a handful of its own processes, saw %q", n)
	}
	// State survives stop/start (the guest root is the disk).
	e.ok("stop", "ia")
	e.ok("start", "ia")
	if got := e.ok("exec", "ia", "--", "cat", "/workspace/note.txt").stdout; got != "from-a\n" {
		t.Errorf("after restart: %q", got)
	}
}

func TestVolumesAndNoNet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	shared := t.TempDir()
	writeFile(t, filepath.Join(shared, "in.txt"), "shared\n", 0o644)
	e.box("vn", "-v", shared+":/data", "-v", shared+":/ro:ro", "-v", "cache:/cache", "--no-net")
	r := e.ok("exec", "vn", "--", "sh", "-c", "cat /data/in.txt; echo out > /data/out.txt; echo c > /cache/c; touch /ro/x 2>/dev/null || echo ro")
	if r.stdout != "shared\nro\n" {
		t.Fatalf("volumes: %s", r)
	}
	if readFile(t, filepath.Join(shared, "out.txt")) != "out\n" || readFile(t, filepath.Join(e.home, "volumes", "cache", "c")) != "c\n" {
		t.Fatal("bind and named volumes must be shared with the host")
	}
	// --no-net gives the box an empty network namespace (loopback only).
	r = e.ok("exec", "vn", "--", "cat", "/proc/net/dev")
	var ifaces []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if strings.Join(ifaces, ",") != "lo" {
		t.Errorf("--no-net box sees interfaces %v, want only lo", ifaces)
	}
}
