package sandbox

import (
	"context"
	"errors"
	"strings"

	"github.com/asb-dev/asb/app"
)

// ReconcileReport says what one reconcile pass did.
type ReconcileReport struct {
	// Attached are recorded boxes msb still has.
	Attached int
	// Missing are session boxes msb no longer has (reported, kept).
	Missing []app.BoxRef
	// Removed are boxes asb created that nothing needs any more: orphans,
	// boxes of closed sessions, dead or outdated warm boxes.
	Removed []app.BoxRef
	// Skipped names the hosts that did not answer.
	Skipped []string
}

// Reconcile compares the recorded boxes with `msb ls` on every healthy
// host. It re-attaches running boxes, marks vanished session boxes
// missing, and removes boxes asb created that nothing needs — never a
// pinned box, and never a box whose name asb did not give it.
func (f *Fleet) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	var errs []error
	for _, h := range f.hosts {
		if !h.isHealthy() {
			rep.Skipped = append(rep.Skipped, h.name)
			continue
		}
		if err := f.reconcileHost(ctx, h, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func (f *Fleet) reconcileHost(ctx context.Context, h *host, rep *ReconcileReport) error {
	// List before reading the rows: every box in this listing had its row
	// written before msb created it, so a listed box without a row really
	// is an orphan.
	listed, err := h.msb.List(ctx)
	if err != nil {
		rep.Skipped = append(rep.Skipped, h.name)
		return nil // the next probe marks the host down
	}
	byName := make(map[string]ListEntry, len(listed))
	for _, e := range listed {
		byName[e.Name] = e
	}
	type action struct {
		ref    app.BoxRef
		remove bool
	}
	var actions []action
	now := f.clock.Now()
	image, key := f.cfg.Defaults.imageKey(), f.cfg.Defaults.Egress.Key()
	err = f.store.Tx(ctx, func(tx app.Tx) error {
		actions = actions[:0]
		rows, err := tx.ListBoxes(h.name)
		if err != nil {
			return err
		}
		recorded := map[string]bool{}
		for _, b := range rows {
			recorded[b.Name] = true
			e, ok := byName[b.Name]
			if !ok {
				if b.Status == statusBooting && now.Sub(b.CreatedAt) < f.cfg.BootingGrace {
					continue // msb run may still be on its way
				}
				if b.Role == app.BoxPoolFree {
					if err := tx.DeleteBox(b.BoxRef); err != nil {
						return err
					}
					continue
				}
				if b.Status != statusMissing {
					b.Status = statusMissing
					if err := tx.UpsertBox(b); err != nil {
						return err
					}
					rep.Missing = append(rep.Missing, b.BoxRef)
					f.log.Warn("a session's box is gone from its host; the session gets a new box when it runs again",
						"box", b.Name, "host", b.Host, "session", b.SessionID)
				}
				continue
			}
			rep.Attached++
			if b.Status != e.Status && !(b.Status == statusBooting && !e.Running()) {
				b.Status = e.Status
				if err := tx.UpsertBox(b); err != nil {
					return err
				}
			}
			switch b.Role {
			case app.BoxPoolFree:
				// A free warm box that stopped, or no longer fits the
				// defaults, is of no use: replace it.
				if b.Status != statusBooting && (!e.Running() || b.Image != image || b.Egress != key) {
					actions = append(actions, action{b.BoxRef, true})
				}
			default:
				if b.Pinned || b.SessionID == "" {
					continue
				}
				sess, err := tx.GetSession(b.SessionID)
				if app.ErrorCode(err) == app.ENOTFOUND {
					actions = append(actions, action{b.BoxRef, true})
					continue
				}
				if err != nil {
					return err
				}
				if sess.State == app.SessionClosed && !sess.Pinned {
					actions = append(actions, action{b.BoxRef, true})
				}
			}
		}
		for _, e := range listed {
			if !recorded[e.Name] && strings.HasPrefix(e.Name, boxPrefix) {
				actions = append(actions, action{app.BoxRef{Host: h.name, Name: e.Name}, true})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range actions {
		if !a.remove {
			continue
		}
		if err := h.msb.Remove(ctx, a.ref.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.deleteRow(ctx, a.ref); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Removed = append(rep.Removed, a.ref)
		f.log.Info("removed a box nothing needs", "box", a.ref.Name, "host", a.ref.Host)
	}
	return errors.Join(errs...)
}
