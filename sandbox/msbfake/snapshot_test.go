package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("base")
	e.ok("exec", "base", "--", "sh", "-c", "mkdir -p /opt/tool && echo baked > /opt/tool/v && touch /.claimed-not")
	r := e.run("snapshot", "create", "snap1", "--from", "base")
	wantCode(t, r, 1)
	if r.stderr != "error: snapshot source sandbox 'base' is not stopped\n" {
		t.Errorf("snapshot of running box: %q", r.stderr)
	}
	e.ok("stop", "base")
	r = e.ok("snapshot", "create", "--from", "base", "snap1")
	dir := filepath.Join(e.home, "snapshots", "snap1")
	lines := strings.Split(r.stdout, "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(lines[0]) || lines[1] != dir || lines[2] != "" {
		t.Fatalf("snapshot create stdout: %q", r.stdout)
	}
	digest := lines[0]
	wantStderr(t, e.run("snapshot", "create", "--from", "base", "snap1"), "snapshot already exists: snap1")
	e.ok("snapshot", "create", "--force", "--from", "base", "snap1")
	if got := e.ok("snapshot", "create", "-q", "--from", "base", "snap2").stdout; got != "" {
		t.Errorf("snapshot create -q printed %q", got)
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(e.ok("snapshot", "ls", "--format", "json").stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("snapshot ls: %v %v", list, err)
	}
	wantKeys := "artifact_path availability checkpoint_manifest_digest created_at digest format fstype image_ref locality migration_error_code migration_state name parent_digest scope size_bytes state_kind"
	if got := sortedKeys(list[0]); got != wantKeys {
		t.Errorf("snapshot fields:\n%s\nwant\n%s", got, wantKeys)
	}
	if list[1]["image_ref"] != "alpine" {
		t.Errorf("image_ref = %v", list[1]["image_ref"])
	}
	if got := e.ok("snapshot", "ls", "-q").stdout; strings.Count(got, "sha256:") != 2 || strings.Contains(got, digest) {
		t.Errorf("snapshot ls -q = %q (the forced re-create has a new digest)", got)
	}

	// Boot from the snapshot like the orchestrator's warm pool.
	r = e.ok("run", "-d", "--name", "pool-1", "-m", "1G", "--net", "public", "--pull", "never", "--from-snapshot", "snap1", "--", "sleep", "infinity")
	if r.stdout != "pool-1\n" {
		t.Fatalf("run --from-snapshot: %s", r)
	}
	if got := e.ok("exec", "pool-1", "--", "cat", "/opt/tool/v").stdout; got != "baked\n" {
		t.Errorf("snapshot contents: %q", got)
	}
	if b := e.sandbox("pool-1"); b.Image != "alpine" || b.FromSnapshot != "snap1" {
		t.Errorf("restored sandbox: image %q from %q", b.Image, b.FromSnapshot)
	}
	// The snapshot is a copy: writes in the clone do not change it.
	e.ok("exec", "pool-1", "--", "sh", "-c", "echo changed > /opt/tool/v")
	if readFile(t, filepath.Join(dir, "root", "opt", "tool", "v")) != "baked\n" {
		t.Error("the snapshot changed")
	}
	// -w of a directory that is not in the snapshot fails the boot (quirk 2).
	r = e.run("run", "-d", "--name", "pool-2", "-w", "/workspace", "--pull", "never", "--from-snapshot", "snap1", "--", "sleep", "infinity")
	wantCode(t, r, 1)
	wantStderr(t, r, `error: failed to start "pool-2"`)
	// With --pull never and the base image gone, restore fails.
	e.ok("image", "rm", "alpine")
	r = e.run("run", "-d", "--name", "pool-3", "--pull", "never", "--from-snapshot", "snap1", "--", "sleep", "infinity")
	wantCode(t, r, 1)
	wantStderr(t, r, "error: snapshot integrity check failed: snapshot base image sha256:")
	wantStderr(t, r, "is not cached locally and pull policy is `never`")

	e.ok("snapshot", "rm", "snap1", "snap2")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("snapshot rm must delete the artifact")
	}
	wantCode(t, e.run("snapshot", "rm", "snap1"), 1)
	wantStderr(t, e.run("run", "-d", "--name", "pool-4", "--from-snapshot", "snap1"), "snapshot not found: snap1")
}

func sortedKeys(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}
