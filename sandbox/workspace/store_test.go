package workspace_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/workspace"
)

// testClock is a settable clock for the TTL.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newStore(t *testing.T, o workspace.Options) (*workspace.Store, string, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Now()}
	if o.Now == nil {
		o.Now = clock.Now
	}
	root := filepath.Join(t.TempDir(), "workspaces")
	s, err := workspace.NewStore(root, o)
	if err != nil {
		t.Fatal(err)
	}
	return s, root, clock
}

func TestStoreStageTakeRelease(t *testing.T) {
	s, root, _ := newStore(t, workspace.Options{})
	ctx := context.Background()
	id, err := s.Stage(ctx, "alice", bytes.NewReader(archive(t, file("main.go", "package main\n"))))
	if err != nil {
		t.Fatal(err)
	}
	if app.CheckWorkspaceID(id) != nil {
		t.Fatalf("id %q", id)
	}
	// Another owner cannot use it, and learns nothing from trying.
	_, errOther := s.Take(ctx, "mallory", id)
	missing := app.NewWorkspaceID()
	_, errMissing := s.Take(ctx, "mallory", missing)
	if app.ErrorCode(errOther) != app.ENOTFOUND ||
		strings.ReplaceAll(app.ErrorMessage(errOther), id, "X") != strings.ReplaceAll(app.ErrorMessage(errMissing), missing, "X") {
		t.Fatalf("another owner's take: %v / %v", errOther, errMissing)
	}
	path, err := s.Take(ctx, "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(path, "main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("taken tree: %q %v", b, err)
	}
	// Used once.
	if _, err := s.Take(ctx, "alice", id); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("second take: %v", err)
	}
	if err := s.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("released tree still there: %v", err)
	}
	if err := s.Release(ctx, id); err != nil {
		t.Fatalf("releasing twice: %v", err)
	}
	if err := s.Release(ctx, "../etc"); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("release of a path: %v", err)
	}
	if _, err := s.Take(ctx, "alice", "ws_../../etc"); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("take of a path: %v", err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestStoreRefusedUploadLeavesNothing(t *testing.T) {
	s, root, _ := newStore(t, workspace.Options{Limits: workspace.Limits{MaxBytes: 8 << 10}})
	for _, raw := range [][]byte{
		archive(t, file("ok", "fine"), file("../escape", "x")),
		archive(t, file("big", strings.Repeat("x", 16<<10))),
	} {
		if _, err := s.Stage(context.Background(), "alice", bytes.NewReader(raw)); err == nil {
			t.Fatal("accepted")
		}
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("a refused upload left %v", left)
	}
}

func TestStoreSweepsExpiredWorkspaces(t *testing.T) {
	s, root, clock := newStore(t, workspace.Options{TTL: time.Hour})
	ctx := context.Background()
	stage := func() string {
		id, err := s.Stage(ctx, "alice", bytes.NewReader(archive(t, file("a", "a"))))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	old, taken := stage(), stage()
	if _, err := s.Take(ctx, "alice", taken); err != nil {
		t.Fatal(err)
	}
	if n := s.Sweep(); n != 0 {
		t.Fatalf("swept %d fresh workspaces", n)
	}
	clock.add(61 * time.Minute)
	fresh := stage()
	if n := s.Sweep(); n != 2 {
		t.Fatalf("swept %d, want the staged and the taken one", n)
	}
	left, _ := os.ReadDir(root)
	if len(left) != 1 || left[0].Name() != fresh {
		t.Fatalf("left %v, want only %s", left, fresh)
	}
	if _, err := s.Take(ctx, "alice", old); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("take after expiry: %v", err)
	}
	// An expired workspace is refused even before a sweep runs.
	clock.add(2 * time.Hour)
	if _, err := s.Take(ctx, "alice", fresh); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("take of an expired, unswept workspace: %v", err)
	}
}

func TestStoreCapsWaitingWorkspacesPerOwner(t *testing.T) {
	s, _, _ := newStore(t, workspace.Options{MaxPerOwner: 2})
	ctx := context.Background()
	for i := range 2 {
		if _, err := s.Stage(ctx, "alice", bytes.NewReader(archive(t, file("a", "a")))); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	if _, err := s.Stage(ctx, "alice", bytes.NewReader(archive(t, file("a", "a")))); app.ErrorCode(err) != app.ERATELIMIT {
		t.Fatalf("third upload: %v", err)
	}
	if _, err := s.Stage(ctx, "bob", bytes.NewReader(archive(t, file("a", "a")))); err != nil {
		t.Fatalf("another owner is not capped by alice: %v", err)
	}
}

func TestStoreRunStopsWithItsContext(t *testing.T) {
	s, _, _ := newStore(t, workspace.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
}
