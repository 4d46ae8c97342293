package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/sqlite"
)

// TestServiceSurvivesCrash runs a Service over a database file, stops it
// with no clean shutdown, and builds a new Service over the files exactly
// as the crash left them: sessions, runs, queue order and events are all
// there, running work is re-attached, and nothing is lost or duplicated.
func TestServiceSurvivesCrash(t *testing.T) {
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	dir := t.TempDir()
	sb := apptest.NewFakeSandbox() // boxes outlive the controller, like real ones
	release := make(chan struct{})
	records := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`{"type":"assistant","id":"%s-%d"}`, prefix, i)
		}
		return out
	}
	var mu sync.Mutex
	sb.ScriptFor = func(turn app.Turn) apptest.Script {
		mu.Lock()
		defer mu.Unlock()
		switch turn.Prompt {
		case "long":
			return apptest.Script{Records: records("long", 6), Hold: release, AgentSessionID: "cc-long"}
		case "ask":
			return apptest.Script{Records: records("ask", 2), Question: "which?"}
		default:
			return apptest.Script{Records: records(turn.Prompt, 2)}
		}
	}

	store1, err := sqlite.Open(ctx, filepath.Join(dir, "a", "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	// store1 is never closed cleanly: that is the point.
	svc1 := app.NewService(app.Deps{Store: store1, Sandbox: sb}, app.Config{PollInterval: time.Millisecond})
	run1, stop1 := context.WithCancel(ctx)
	done1 := make(chan error, 1)
	go func() { done1 <- svc1.Run(run1) }()

	long, err := svc1.Delegate(ctx, app.DelegateRequest{Task: "long"})
	if err != nil {
		t.Fatal(err)
	}
	var queued []app.Delegation
	for i := 0; i < 3; i++ {
		d, err := svc1.FollowUp(ctx, long.Session.ID, fmt.Sprintf("f%d", i), app.Origin{})
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, d)
	}
	ask, err := svc1.Delegate(ctx, app.DelegateRequest{Task: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, store1, ask.Run.ID, app.StateWaiting)
	waitFor(t, "the long run to be mid-stream", func() bool {
		r := getRun(t, store1, long.Run.ID)
		return r.State == app.StateRunning && r.AgentOffset > 0
	})

	// Crash: the scheduler stops where it is and nothing is written on the
	// way out; the database files are taken as they are on disk.
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	before := dump(t, store1)
	crashDir := filepath.Join(dir, "b")
	copyFiles(t, filepath.Join(dir, "a"), crashDir)

	store2, err := sqlite.Open(ctx, filepath.Join(crashDir, "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	if after := dump(t, store2); after != before {
		t.Fatalf("state after crash differs:\nbefore %s\nafter  %s", before, after)
	}

	svc2 := app.NewService(app.Deps{Store: store2, Sandbox: sb}, app.Config{PollInterval: time.Millisecond})
	run2, stop2 := context.WithCancel(ctx)
	defer stop2()
	go svc2.Run(run2)
	close(release)

	waitRun(t, store2, long.Run.ID, app.StateDone)
	for _, d := range queued {
		waitRun(t, store2, d.Run.ID, app.StateDone)
	}
	if r := getRun(t, store2, ask.Run.ID); r.State != app.StateWaiting || r.Question != "which?" {
		t.Fatalf("waiting run after restart = %s %q", r.State, r.Question)
	}
	if _, err := svc2.Answer(ctx, ask.Session.ID, "that one", nil); err != nil {
		t.Fatal(err)
	}
	waitRun(t, store2, ask.Run.ID, app.StateDone)

	// Every agent record of the long run is stored once, in order.
	evs, err := svc2.Events(ctx, long.Session.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Type == app.EventAgent && e.RunID == long.Run.ID {
			got = append(got, string(e.Data))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(records("long", 6)) {
		t.Fatalf("agent records after restart:\n got %v\nwant %v", got, records("long", 6))
	}
	// The queue kept its order across the crash.
	var order []app.RunID
	for _, e := range evs {
		var sc app.StateChange
		if e.Type == app.EventRunState && e.Decode(&sc) == nil && sc.To == app.StateStarting {
			order = append(order, e.RunID)
		}
	}
	want := []app.RunID{long.Run.ID, queued[0].Run.ID, queued[1].Run.ID, queued[2].Run.ID}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("start order %v, want %v", order, want)
	}
	// Each turn was launched once: the re-attached run was not started again.
	seen := map[app.TurnRef]int{}
	for _, l := range sb.Launches() {
		seen[l.TurnRef]++
	}
	if seen[app.TurnRef{RunID: long.Run.ID, Turn: 1}] != 1 || sb.BoxesBooted() != 2 {
		t.Fatalf("launches %v, boxes %d", seen, sb.BoxesBooted())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func getRun(t *testing.T, s app.Store, id app.RunID) app.Run {
	t.Helper()
	var r app.Run
	if err := s.View(context.Background(), func(tx app.Tx) error {
		var err error
		r, err = tx.GetRun(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func waitRun(t *testing.T, s app.Store, id app.RunID, st app.RunState) {
	t.Helper()
	waitFor(t, fmt.Sprintf("run %s to be %s", id, st), func() bool { return getRun(t, s, id).State == st })
}

// dump renders everything the core stores, for comparison.
func dump(t *testing.T, s app.Store) string {
	t.Helper()
	var out struct {
		Sessions []app.Session
		Runs     map[app.SessionID][]app.Run
		Events   []app.Event
	}
	out.Runs = map[app.SessionID][]app.Run{}
	err := s.View(context.Background(), func(tx app.Tx) error {
		var err error
		if out.Sessions, err = tx.ListSessions(app.SessionFilter{}); err != nil {
			return err
		}
		for _, sess := range out.Sessions {
			if out.Runs[sess.ID], err = tx.ListRuns(sess.ID); err != nil {
				return err
			}
		}
		out.Events, err = tx.ListEvents(app.EventFilter{Limit: 100000})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func copyFiles(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
}
