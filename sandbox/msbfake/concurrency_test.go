package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentCreates runs 50 creates at once against one MSB_HOME: the
// file lock must serialise them into 50 distinct, intact sandboxes.
func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("pull", "-q", "alpine")
	const n = 50
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = e.run("create", "--pull", "never", "-e", "IDX="+strconv.Itoa(i), "alpine")
		}(i)
	}
	wg.Wait()
	nameRE := regexp.MustCompile(`^msb-[0-9a-f]{8}\n$`)
	seen := map[string]bool{}
	for i, r := range results {
		if r.code != 0 || !nameRE.MatchString(r.stdout) {
			t.Fatalf("create %d: %s", i, r)
		}
		seen[strings.TrimSpace(r.stdout)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct names from %d creates", len(seen), n)
	}
	var ls []lsEntry
	if err := json.Unmarshal([]byte(e.ok("ls", "--format", "json").stdout), &ls); err != nil {
		t.Fatalf("ls output is not JSON: %v", err)
	}
	st := e.state()
	ids := map[int64]bool{}
	for _, b := range st.Sandboxes {
		ids[b.ID] = true
		if b.Status != "Running" || b.Runtime == nil || !procAlive(b.Runtime.InitPid, b.Runtime.InitStart) {
			t.Errorf("%s is not running: %+v", b.Name, b)
		}
	}
	if len(ls) != n || len(st.Sandboxes) != n || len(ids) != n {
		t.Fatalf("ls=%d state=%d ids=%d, want %d each", len(ls), len(st.Sandboxes), len(ids), n)
	}
	for _, entry := range ls {
		if !seen[entry.Name] {
			t.Errorf("unexpected sandbox %s", entry.Name)
		}
	}
	// Each box kept its own environment.
	names := make([]string, 0, n)
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	idx := e.ok("exec", names[0], "--", "printenv", "IDX").stdout
	if idx == "" {
		t.Error("env lost")
	}
	// Concurrent removal is just as safe.
	var rmWG sync.WaitGroup
	for _, name := range names {
		rmWG.Add(1)
		go func(name string) {
			defer rmWG.Done()
			if r := e.run("rm", "-f", name); r.code != 0 {
				t.Errorf("rm %s: %s", name, r)
			}
		}(name)
	}
	rmWG.Wait()
	if got := e.ok("ls", "--format", "json").stdout; got != "[]\n" {
		t.Fatalf("after rm: %s", got)
	}
	for _, b := range st.Sandboxes {
		waitProcGone(t, b.Runtime.InitPid)
		waitProcGone(t, b.Runtime.BwrapPid)
	}
	if entries, _ := os.ReadDir(e.home + "/sandboxes"); len(entries) != 0 {
		t.Errorf("guest roots left: %d", len(entries))
	}
	assertNoZombieChildren(t)
}
