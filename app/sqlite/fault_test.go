package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/sqlite"
)

// The fault suite's database cases (docs/reliability.md): a second
// connection to the same file holds a read transaction or the write lock
// while the Service works.

// lockWorld is a Service over a database file, running, plus a second
// connection to the same file, as another process (a backup, `sqlite3`
// in a shell) would hold it.
type lockWorld struct {
	t     *testing.T
	ctx   context.Context
	svc   *app.Service
	store *sqlite.Store
	other *sql.Conn
	hold  chan struct{}
}

func newLockWorld(t *testing.T) *lockWorld {
	t.Helper()
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	path := filepath.Join(t.TempDir(), "asb.sqlite")
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	w := &lockWorld{t: t, ctx: ctx, store: store, hold: make(chan struct{})}
	sb := apptest.NewFakeSandbox()
	sb.ScriptFor = func(turn app.Turn) apptest.Script {
		s := apptest.Script{Records: lockRecords(turn.Prompt, 8)}
		if strings.HasPrefix(turn.Prompt, "held") {
			s.Hold = w.hold
		}
		return s
	}
	w.svc = app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: 5 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.svc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	db, err := sql.Open("sqlite3", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w.other, err = db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.other.Close() })
	return w
}

func lockRecords(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"type":"assistant","id":"%s-%d"}`, prefix, i)
	}
	return out
}

func (w *lockWorld) exec(q string) {
	w.t.Helper()
	if _, err := w.other.ExecContext(w.ctx, q); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// waitState waits until the session's current run is in state.
func (w *lockWorld) waitState(id app.SessionID, state app.RunState) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 60*time.Second)
	defer cancel()
	for {
		v, err := w.svc.Session(ctx, id)
		if err == nil && v.Current != nil && v.Current.State == state {
			return
		}
		if ctx.Err() != nil {
			w.t.Fatalf("session %s never reached %s (last error %v)", id, state, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkRecords checks the session's stored agent records are the
// script's, each once, in order.
func (w *lockWorld) checkRecords(id app.SessionID, prompt string) {
	w.t.Helper()
	evs, err := w.svc.Events(w.ctx, id, 0, 1000)
	if err != nil {
		w.t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Type == app.EventAgent {
			got = append(got, string(e.Data))
		}
	}
	want := lockRecords(prompt, 8)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		w.t.Fatalf("stored agent records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFaultDatabaseLongReader: a connection holding a read transaction
// for the whole run neither blocks nor loses the Service's writes (WAL),
// and keeps its own consistent snapshot.
func TestFaultDatabaseLongReader(t *testing.T) {
	t.Parallel()
	w := newLockWorld(t)
	w.exec("BEGIN")
	var before int
	if err := w.other.QueryRowContext(w.ctx, "SELECT count(*) FROM events").Scan(&before); err != nil {
		t.Fatal(err)
	}
	d, err := w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "read"})
	if err != nil {
		t.Fatalf("delegate beside a reader: %v", err)
	}
	w.waitState(d.Session.ID, app.StateDone)
	w.checkRecords(d.Session.ID, "read")
	var during int
	if err := w.other.QueryRowContext(w.ctx, "SELECT count(*) FROM events").Scan(&during); err != nil {
		t.Fatal(err)
	}
	if during != before {
		t.Fatalf("the reader's snapshot moved: %d → %d events", before, during)
	}
	w.exec("COMMIT")
}

// TestFaultDatabaseWriteLock: another connection holding the write lock
// makes writes wait within busy_timeout, then they go through with
// nothing lost; held past busy_timeout, a write fails with a clear,
// retryable "database is busy" error, a running run retries its writes,
// and everything lands once the lock is gone.
func TestFaultDatabaseWriteLock(t *testing.T) {
	t.Run("within busy_timeout", func(t *testing.T) {
		t.Parallel()
		w := newLockWorld(t)
		w.exec("BEGIN IMMEDIATE")
		done := make(chan error, 1)
		var d app.Delegation
		go func() {
			var err error
			d, err = w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "wait"})
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("a write went through the held lock: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		w.exec("COMMIT")
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("delegate after the lock: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("delegate never returned")
		}
		w.waitState(d.Session.ID, app.StateDone)
		w.checkRecords(d.Session.ID, "wait")
	})
	t.Run("past busy_timeout", func(t *testing.T) {
		if testing.Short() {
			t.Skip("holds the lock past the 10s busy_timeout")
		}
		t.Parallel()
		w := newLockWorld(t)
		// A run is going when the lock is taken: its records must wait,
		// not vanish.
		d, err := w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "held"})
		if err != nil {
			t.Fatal(err)
		}
		w.waitState(d.Session.ID, app.StateRunning)
		w.exec("BEGIN IMMEDIATE")
		close(w.hold)
		_, err = w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "refused"})
		if err == nil {
			t.Fatal("a write went through a lock held past busy_timeout")
		}
		if app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(app.ErrorMessage(err), "database is busy") {
			t.Fatalf("error for a locked database: %v (%s: %q)", err, app.ErrorCode(err), app.ErrorMessage(err))
		}
		w.exec("COMMIT")
		w.waitState(d.Session.ID, app.StateDone)
		w.checkRecords(d.Session.ID, "held")
		// The refused delegation left nothing half-made; asked again, it works.
		fleet, err := w.svc.Fleet(w.ctx, app.FleetFilter{IncludeClosed: true})
		if err != nil || len(fleet) != 1 {
			t.Fatalf("sessions after the refused write: %d (%v)", len(fleet), err)
		}
		again, err := w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "again"})
		if err != nil {
			t.Fatalf("delegate once the lock is gone: %v", err)
		}
		w.waitState(again.Session.ID, app.StateDone)
		w.checkRecords(again.Session.ID, "again")
	})
}
