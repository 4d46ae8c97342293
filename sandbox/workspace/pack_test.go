package workspace_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/sandbox/workspace"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// TestPackShipsWhatGitWouldCommit packs a repository with a committed
// file, an uncommitted change, an untracked file, ignored files and a
// deleted file, unpacks it with Extract, and checks the copy is a working
// repository on the same branch holding exactly what git would commit.
func TestPackShipsWhatGitWouldCommit(t *testing.T) {
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "feature")
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n", 0o644)
	writeFile(t, filepath.Join(repo, "run.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(repo, "gone.txt"), "bye\n", 0o644)
	writeFile(t, filepath.Join(repo, ".gitignore"), "secret.env\nbuild/\n", 0o644)
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	head := gitIn(t, repo, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(repo, "main.go"), "package main\n\n// edited, not committed\n", 0o644)
	writeFile(t, filepath.Join(repo, "notes/new.txt"), "untracked\n", 0o644)
	writeFile(t, filepath.Join(repo, "secret.env"), "TOKEN=x\n", 0o600)
	writeFile(t, filepath.Join(repo, "build/out.bin"), "binary\n", 0o644)
	os.Remove(filepath.Join(repo, "gone.txt"))

	// A subfolder of the repository ships the whole repository.
	tree, err := workspace.List(context.Background(), filepath.Join(repo, "notes"), workspace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Files < 4 || tree.Bytes <= 0 {
		t.Fatalf("files %d, bytes %d", tree.Files, tree.Bytes)
	}
	var buf bytes.Buffer
	if err := tree.Pack(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) > tree.Bytes {
		t.Fatalf("the stream is %d bytes, above the %d announced", buf.Len(), tree.Bytes)
	}
	dst := t.TempDir()
	if err := workspace.Extract(&buf, dst, workspace.Limits{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "main.go")); !strings.Contains(string(b), "edited, not committed") {
		t.Fatalf("main.go without the uncommitted change: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "notes/new.txt")); string(b) != "untracked\n" {
		t.Fatalf("untracked file: %q", b)
	}
	for _, absent := range []string{"secret.env", "build/out.bin", "gone.txt"} {
		if _, err := os.Lstat(filepath.Join(dst, absent)); !os.IsNotExist(err) {
			t.Fatalf("%s was shipped", absent)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh lost its exec bit: %v %v", fi, err)
	}
	if got := gitIn(t, dst, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD %s, want %s", got, head)
	}
	if got := gitIn(t, dst, "branch", "--show-current"); got != "feature" {
		t.Fatalf("branch %q", got)
	}
	status := gitIn(t, dst, "status", "--porcelain")
	for _, want := range []string{"M main.go", "D gone.txt", "?? notes/"} {
		if !strings.Contains(status, want) {
			t.Fatalf("status in the copy lacks %q:\n%s", want, status)
		}
	}
}

func TestListRefusesWhatItCannotShipSafely(t *testing.T) {
	plain := t.TempDir()
	writeFile(t, filepath.Join(plain, ".ssh/id_ed25519"), "key", 0o600)
	if _, err := workspace.List(context.Background(), plain, workspace.Limits{}); err == nil || !strings.Contains(err.Error(), "not inside a git repository") {
		t.Fatalf("a folder without git: %v", err)
	}
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	writeFile(t, filepath.Join(repo, "big.bin"), strings.Repeat("x", 64<<10), 0o644)
	_, err := workspace.List(context.Background(), repo, workspace.Limits{MaxBytes: 32 << 10})
	if err == nil || !strings.Contains(err.Error(), "WORKSPACE_MAX_BYTES") {
		t.Fatalf("a tree over the cap: %v", err)
	}
}
