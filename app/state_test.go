package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// TestStateMachine tries every pair of states: allowed transitions are
// persisted and published; all others are refused with an *app.Error and
// change nothing.
func TestStateMachine(t *testing.T) {
	allowed := map[[2]app.RunState]bool{
		{app.StateQueued, app.StateStarting}:    true,
		{app.StateQueued, app.StateCancelled}:   true,
		{app.StateStarting, app.StateRunning}:   true,
		{app.StateStarting, app.StateFailed}:    true,
		{app.StateStarting, app.StateCancelled}: true,
		{app.StateRunning, app.StateWaiting}:    true,
		{app.StateRunning, app.StateDone}:       true,
		{app.StateRunning, app.StateFailed}:     true,
		{app.StateRunning, app.StateCancelled}:  true,
		{app.StateWaiting, app.StateRunning}:    true,
		{app.StateWaiting, app.StateFailed}:     true,
		{app.StateWaiting, app.StateCancelled}:  true,
	}
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	for _, from := range app.AllStates {
		for _, to := range app.AllStates {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				store := apptest.NewMemStore()
				// No scheduler runs: the test drives the state machine alone.
				svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox()}, app.Config{})
				d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "t"})
				if err != nil {
					t.Fatal(err)
				}
				setState(t, store, d.Run.ID, from)
				before := snapshot(t, store, d.Run.ID)
				sub := svc.Bus().Subscribe(nil)
				defer sub.Close()

				got, err := svc.Transition(ctx, d.Run.ID, from, to, "test")
				if app.CanTransition(from, to) != allowed[[2]app.RunState{from, to}] {
					t.Fatalf("CanTransition(%s, %s) disagrees with the table", from, to)
				}
				if allowed[[2]app.RunState{from, to}] {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if got.State != to {
						t.Fatalf("returned state %s", got.State)
					}
					after := snapshot(t, store, d.Run.ID)
					if after.run.State != to || len(after.events) != len(before.events)+1 {
						t.Fatalf("not persisted: state %s, %d→%d events", after.run.State, len(before.events), len(after.events))
					}
					stored := after.events[len(after.events)-1]
					var sc app.StateChange
					if stored.Type != app.EventRunState || stored.Decode(&sc) != nil || sc.From != from || sc.To != to {
						t.Fatalf("stored event = %+v", stored)
					}
					select {
					case e := <-sub.C():
						if e.ID != stored.ID {
							t.Fatalf("published event %d, stored %d", e.ID, stored.ID)
						}
					case <-time.After(5 * time.Second):
						t.Fatal("transition was not published")
					}
					if to.Terminal() && after.run.FinishedAt.IsZero() {
						t.Fatal("terminal run has no finish time")
					}
					return
				}
				var ae *app.Error
				if err == nil || !asAppError(err, &ae) || ae.Code != app.ECONFLICT {
					t.Fatalf("error = %v, want an *app.Error with code conflict", err)
				}
				after := snapshot(t, store, d.Run.ID)
				if after.run.State != from || len(after.events) != len(before.events) || after.run.UpdatedAt != before.run.UpdatedAt {
					t.Fatalf("refused transition changed something: %+v", after.run)
				}
				select {
				case e := <-sub.C():
					t.Fatalf("refused transition published %+v", e)
				default:
				}
			})
		}
	}
}

func TestTransitionFromWrongStateIsRefused(t *testing.T) {
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	store := apptest.NewMemStore()
	svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox()}, app.Config{})
	d, _ := svc.Delegate(ctx, app.DelegateRequest{Task: "t"})
	// The caller believes the run is running; it is queued.
	if _, err := svc.Transition(ctx, d.Run.ID, app.StateRunning, app.StateDone, ""); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("stale transition: %v", err)
	}
	if _, err := svc.Transition(ctx, "run_missing", app.StateQueued, app.StateStarting, ""); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("missing run: %v", err)
	}
}

type snap struct {
	run    app.Run
	events []app.Event
}

func snapshot(t *testing.T, s app.Store, id app.RunID) snap {
	t.Helper()
	var out snap
	err := s.View(context.Background(), func(tx app.Tx) error {
		var err error
		if out.run, err = tx.GetRun(id); err != nil {
			return err
		}
		out.events, err = tx.ListEvents(app.EventFilter{SessionID: out.run.SessionID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setState(t *testing.T, s app.Store, id app.RunID, st app.RunState) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		r.State = st
		return tx.UpdateRun(&r)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func asAppError(err error, target **app.Error) bool {
	return errors.As(err, target)
}
