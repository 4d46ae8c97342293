package main

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(data)
}

func TestCopyIntoBox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("k1")
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "tree", "a.txt"), "A", 0o644)
	writeFile(t, filepath.Join(src, "tree", "bin", "run.sh"), "#!/bin/sh\necho ran\n", 0o755)
	writeFile(t, filepath.Join(src, "single.txt"), "single", 0o600)
	if err := os.Symlink("a.txt", filepath.Join(src, "tree", "link")); err != nil {
		t.Fatal(err)
	}
	root := e.root("k1")
	steps := []struct {
		src, dst string
		check    func()
	}{
		{filepath.Join(src, "single.txt"), "k1:/root/exact.txt", func() {
			if readFile(t, root+"/root/exact.txt") != "single" {
				t.Error("file to exact path")
			}
		}},
		{filepath.Join(src, "single.txt"), "k1:/root/", func() { readFile(t, root+"/root/single.txt") }},
		{filepath.Join(src, "single.txt"), "k1:/root", func() { readFile(t, root+"/root/single.txt") }}, // existing dir
		{filepath.Join(src, "tree"), "k1:/.wt", func() { // a new path receives the tree itself
			if readFile(t, root+"/.wt/a.txt") != "A" || readFile(t, root+"/.wt/bin/run.sh") == "" {
				t.Error("tree copy to new path")
			}
		}},
		{filepath.Join(src, "tree") + "/.", "k1:/.wt", func() { readFile(t, root+"/.wt/tree/a.txt") }}, // existing dir: nested
		{filepath.Join(src, "tree"), "k1:/deep/er/path", func() { readFile(t, root+"/deep/er/path/a.txt") }},
	}
	for _, s := range steps {
		r := e.run("cp", s.src, s.dst)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("cp %s %s: %s", s.src, s.dst, r)
		}
		s.check()
	}
	fi, err := os.Stat(root + "/root/exact.txt")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode not kept: %v %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(root + "/.wt/link"); err != nil || target != "a.txt" {
		t.Errorf("symlink not copied as a symlink: %q %v", target, err)
	}
	if out := e.ok("exec", "k1", "--", "/.wt/bin/run.sh").stdout; out != "ran\n" {
		t.Errorf("executable bit lost: %q", out)
	}
	r := e.run("cp", filepath.Join(src, "single.txt"), "k1:/no/such/parent/f")
	wantCode(t, r, 1)
	if r.stderr != "error: sandbox fs error: open: No such file or directory (os error 2)\n" {
		t.Errorf("missing parent: %q", r.stderr)
	}
	r = e.run("cp", "/no/such/src", "k1:/root/")
	if r.code != 1 || r.stderr != "error: stat /no/such/src\n" {
		t.Errorf("missing source: %s", r)
	}
	wantStderr(t, e.run("cp", "./a", "./b"), "error: msb copy requires at least one sandbox endpoint (SANDBOX:/path)\n")
	wantStderr(t, e.run("cp", "k1:relative", "./b"), "error: ambiguous copy endpoint `k1:relative`; use SANDBOX:/absolute/path")
}

func TestCopyOutAndBetweenBoxes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("k2")
	e.box("k3")
	e.ok("exec", "k2", "--", "sh", "-c", "mkdir -p /workspace/sub && echo one > /workspace/sub/f && echo two > /workspace/g && chmod 640 /workspace/g")
	out := t.TempDir()
	e.ok("cp", "k2:/workspace/g", out+"/g-copy")
	if readFile(t, out+"/g-copy") != "two\n" {
		t.Error("file copy-out")
	}
	if fi, _ := os.Stat(out + "/g-copy"); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	e.ok("cp", "k2:/workspace", out+"/new/parents") // directories create host parents
	if readFile(t, out+"/new/parents/sub/f") != "one\n" {
		t.Error("dir copy-out")
	}
	wantCode(t, e.run("cp", "k2:/workspace/g", out+"/missing/parent/g"), 1) // files do not
	wantCode(t, e.run("cp", "k2:/nope", out+"/x"), 1)

	e.ok("cp", "k2:/workspace/g", "k3:/root/")
	e.ok("cp", "k2:/workspace/sub", "k2:/workspace/sub2")
	if readFile(t, e.root("k3")+"/root/g") != "two\n" || readFile(t, e.root("k2")+"/workspace/sub2/f") != "one\n" {
		t.Error("box to box copies")
	}
	// A stopped box is started for the copy and stopped again.
	e.ok("stop", "k3")
	e.ok("cp", out+"/g-copy", "k3:/root/while-stopped")
	if e.status("k3") != "Stopped" || readFile(t, e.root("k3")+"/root/while-stopped") != "two\n" {
		t.Errorf("copy into stopped box: status %s", e.status("k3"))
	}
}

// TestCopyConfinedToGuest: guest symlinks resolve inside the guest root, so
// a box cannot make cp read or write host files through them.
func TestCopyConfinedToGuest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("k4")
	hostDir := t.TempDir()
	writeFile(t, hostDir+"/host-secret", "host", 0o644)
	e.ok("exec", "k4", "--", "sh", "-c",
		"mkdir -p "+hostDir+" && echo guest > "+hostDir+"/host-secret && ln -s "+hostDir+" /root/esc && ln -s "+hostDir+"/host-secret /root/secret-link && ln -s /etc/hostname /root/abs")
	out := t.TempDir()
	e.ok("cp", "k4:/root/secret-link", out+"/got")
	if readFile(t, out+"/got") != "guest\n" {
		t.Error("a guest absolute symlink must resolve inside the guest")
	}
	e.ok("cp", hostDir+"/host-secret", "k4:/root/esc/written")
	if _, err := os.Stat(hostDir + "/written"); err == nil {
		t.Fatal("a copy into the box escaped to the host through a guest symlink")
	}
	if readFile(t, e.root("k4")+hostDir+"/written") != "host" {
		t.Error("the write should land in the guest's own directory")
	}
	// Copy-out of a tree skips symlinks that would point outside the destination.
	e.ok("cp", "k4:/root", out+"/rootcopy")
	if _, err := os.Lstat(out + "/rootcopy/abs"); err == nil {
		t.Error("an absolute guest symlink was recreated on the host")
	}
}
