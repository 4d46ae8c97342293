// Package storetest is the contract every app.Store must meet. Each store
// implementation runs it against itself, so the in-memory fake used by
// core tests behaves like the real SQLite store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
)

// Run runs the contract against stores made by open. Each subtest gets a
// fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) app.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s app.Store)
	}{
		{"Sessions", testSessions},
		{"ThreadUniqueness", testThreadUniqueness},
		{"Runs", testRuns},
		{"Questions", testQuestions},
		{"Events", testEvents},
		{"Rollback", testRollback},
		{"Secrets", testSecrets},
		{"Audit", testAudit},
		{"Boxes", testBoxes},
		{"GitHubAccounts", testGitHubAccounts},
		{"MCPServers", testMCPServers},
		{"Users", testUsers},
		{"APIKeysAndDevices", testKeysAndDevices},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)

func tx(t *testing.T, s app.Store, fn func(tx app.Tx) error) {
	t.Helper()
	if err := s.Tx(context.Background(), fn); err != nil {
		t.Fatalf("tx: %v", err)
	}
}

func view(t *testing.T, s app.Store, fn func(tx app.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("view: %v", err)
	}
}

// NewSession returns a valid session for tests.
func NewSession(n int, thread string) app.Session {
	return app.Session{
		ID: app.SessionID(fmt.Sprintf("ses_test%d", n)), Owner: app.OperatorAccount, State: app.SessionActive,
		Title: fmt.Sprintf("task %d", n), Origin: app.Origin{Kind: app.OriginAPI, Login: "octo"},
		Sources:   []app.Source{{Repo: "acme/api", Ref: "main", Dir: "api"}},
		ThreadKey: thread, AllowDomains: []string{"pypi.org"},
		CreatedAt: t0.Add(time.Duration(n) * time.Second), UpdatedAt: t0.Add(time.Duration(n) * time.Second),
	}
}

// NewRun returns a valid queued run for tests.
func NewRun(sess app.SessionID, seq int64) app.Run {
	return app.Run{
		ID: app.RunID(fmt.Sprintf("run_%s%d", sess[4:], seq)), SessionID: sess, Seq: seq, Kind: app.RunTask,
		Prompt: "do it", State: app.StateQueued, Origin: app.Origin{Kind: app.OriginAPI},
		CreatedAt: t0.Add(time.Duration(seq) * time.Millisecond), UpdatedAt: t0,
	}
}

func equalJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if app.ErrorCode(err) != code {
		t.Fatalf("error = %v (code %q), want code %q", err, app.ErrorCode(err), code)
	}
}

func testSessions(t *testing.T, s app.Store) {
	sess := NewSession(1, "")
	sess.Box = app.BoxRef{Host: "local", Name: "asb-x"}
	tx(t, s, func(tx app.Tx) error { return tx.InsertSession(&sess) })
	view(t, s, func(tx app.Tx) error {
		got, err := tx.GetSession(sess.ID)
		if err != nil {
			return err
		}
		equalJSON(t, "session round trip", got, sess)
		_, err = tx.GetSession("ses_missing")
		wantCode(t, err, app.ENOTFOUND)
		return nil
	})
	tx(t, s, func(tx app.Tx) error {
		wantCode(t, tx.InsertSession(&sess), app.ECONFLICT)
		sess.Pinned = true
		sess.AgentSessionID = "abc"
		sess.AskSessionID = "ask-1"
		sess.State = app.SessionClosed
		sess.ClosedAt = t0.Add(time.Hour)
		if err := tx.UpdateSession(&sess); err != nil {
			return err
		}
		missing := NewSession(99, "")
		wantCode(t, tx.UpdateSession(&missing), app.ENOTFOUND)
		return nil
	})
	second := NewSession(2, "")
	tx(t, s, func(tx app.Tx) error { return tx.InsertSession(&second) })
	view(t, s, func(tx app.Tx) error {
		got, _ := tx.GetSession(sess.ID)
		equalJSON(t, "updated session", got, sess)
		all, err := tx.ListSessions(app.SessionFilter{})
		if err != nil {
			return err
		}
		if len(all) != 2 || all[0].ID != second.ID {
			t.Fatalf("ListSessions newest first: got %v", ids(all))
		}
		active, _ := tx.ListSessions(app.SessionFilter{State: app.SessionActive})
		if len(active) != 1 || active[0].ID != second.ID {
			t.Fatalf("ListSessions active: got %v", ids(active))
		}
		one, _ := tx.ListSessions(app.SessionFilter{Limit: 1})
		if len(one) != 1 {
			t.Fatalf("limit 1 gave %d", len(one))
		}
		mine, _ := tx.ListSessions(app.SessionFilter{Owner: "someone-else"})
		if len(mine) != 0 {
			t.Fatalf("owner filter leaked %v", ids(mine))
		}
		return nil
	})
}

func ids(ss []app.Session) []app.SessionID {
	var out []app.SessionID
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func testThreadUniqueness(t *testing.T, s app.Store) {
	a := NewSession(1, "github:acme/api#7")
	tx(t, s, func(tx app.Tx) error { return tx.InsertSession(&a) })
	b := NewSession(2, "github:acme/api#7")
	err := s.Tx(context.Background(), func(tx app.Tx) error { return tx.InsertSession(&b) })
	wantCode(t, err, app.ECONFLICT)
	view(t, s, func(tx app.Tx) error {
		got, ok, err := tx.ActiveSessionByThread("github:acme/api#7")
		if err != nil || !ok || got.ID != a.ID {
			t.Fatalf("ActiveSessionByThread = %v %v %v", got.ID, ok, err)
		}
		_, ok, _ = tx.ActiveSessionByThread("github:acme/api#8")
		if ok {
			t.Fatal("found a session for an unknown thread")
		}
		return nil
	})
	// Once the first is closed, the thread may get a new session.
	tx(t, s, func(tx app.Tx) error {
		a.State = app.SessionClosed
		if err := tx.UpdateSession(&a); err != nil {
			return err
		}
		return tx.InsertSession(&b)
	})
	view(t, s, func(tx app.Tx) error {
		got, ok, _ := tx.ActiveSessionByThread("github:acme/api#7")
		if !ok || got.ID != b.ID {
			t.Fatalf("after close: %v %v", got.ID, ok)
		}
		return nil
	})
}

func testRuns(t *testing.T, s app.Store) {
	a, b := NewSession(1, ""), NewSession(2, "")
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertSession(&a); err != nil {
			return err
		}
		return tx.InsertSession(&b)
	})
	var runs []app.Run
	tx(t, s, func(tx app.Tx) error {
		for i := 0; i < 3; i++ {
			seq, err := tx.NextSeq(a.ID)
			if err != nil {
				return err
			}
			if seq != int64(i+1) {
				t.Fatalf("NextSeq = %d, want %d", seq, i+1)
			}
			r := NewRun(a.ID, seq)
			if err := tx.InsertRun(&r); err != nil {
				return err
			}
			runs = append(runs, r)
		}
		rb := NewRun(b.ID, 1)
		rb.CreatedAt = t0.Add(-time.Hour)
		if err := tx.InsertRun(&rb); err != nil {
			return err
		}
		dup := NewRun(a.ID, 2)
		dup.ID = "run_dup"
		wantCode(t, tx.InsertRun(&dup), app.ECONFLICT)
		orphan := NewRun("ses_nope", 1)
		wantCode(t, tx.InsertRun(&orphan), app.ENOTFOUND)
		return nil
	})
	r := runs[1]
	r.State = app.StateRunning
	r.Turn = 2
	r.AgentOffset = 4096
	r.Publishing = true
	r.Usage = app.Usage{InputTokens: 10, OutputTokens: 20, CostUSD: 0.25, Turns: 3}
	r.Result = app.PublishResult{Branch: "b", Commits: []string{"abc"}}
	r.StartedAt = t0.Add(time.Minute)
	r.Question = "which?"
	tx(t, s, func(tx app.Tx) error { return tx.UpdateRun(&r) })
	view(t, s, func(tx app.Tx) error {
		got, err := tx.GetRun(r.ID)
		if err != nil {
			return err
		}
		equalJSON(t, "run round trip", got, r)
		_, err = tx.GetRun("run_missing")
		wantCode(t, err, app.ENOTFOUND)
		list, _ := tx.ListRuns(a.ID)
		if len(list) != 3 || list[0].Seq != 1 || list[2].Seq != 3 {
			t.Fatalf("ListRuns order wrong: %+v", list)
		}
		queued, _ := tx.ListRunsByState(app.StateQueued)
		if len(queued) != 3 || queued[0].SessionID != b.ID || queued[1].ID != runs[0].ID || queued[2].ID != runs[2].ID {
			t.Fatalf("ListRunsByState oldest first: %+v", queued)
		}
		both, _ := tx.ListRunsByState(app.StateQueued, app.StateRunning)
		if len(both) != 4 {
			t.Fatalf("two states: %d runs", len(both))
		}
		counts, _ := tx.CountRunsByState()
		if counts[app.StateQueued] != 3 || counts[app.StateRunning] != 1 {
			t.Fatalf("counts = %v", counts)
		}
		return nil
	})
}

func testQuestions(t *testing.T, s app.Store) {
	sess := NewSession(1, "")
	r := NewRun(sess.ID, 1)
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertSession(&sess); err != nil {
			return err
		}
		return tx.InsertRun(&r)
	})
	q1 := app.Question{RunID: r.ID, Text: "first?", AskedAt: t0}
	q2 := app.Question{RunID: r.ID, Text: "second?", AskedAt: t0.Add(time.Second)}
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertQuestion(&q1); err != nil {
			return err
		}
		q1.Answer, q1.AnsweredBy, q1.AnsweredAt = "yes", "octo", t0.Add(time.Millisecond)
		q1.AnswerDelivery, q1.AnswerComment = "delivery-1", 77
		if err := tx.UpdateQuestion(&q1); err != nil {
			return err
		}
		return tx.InsertQuestion(&q2)
	})
	if q1.ID == 0 || q2.ID <= q1.ID {
		t.Fatalf("question ids %d, %d", q1.ID, q2.ID)
	}
	view(t, s, func(tx app.Tx) error {
		p, ok, err := tx.PendingQuestion(r.ID)
		if err != nil || !ok || p.ID != q2.ID {
			t.Fatalf("PendingQuestion = %+v %v %v", p, ok, err)
		}
		all, _ := tx.ListQuestions(r.ID)
		equalJSON(t, "questions", all, []app.Question{q1, q2})
		_, ok, _ = tx.PendingQuestion("run_other")
		if ok {
			t.Fatal("pending question for an unknown run")
		}
		return nil
	})
}

func testEvents(t *testing.T, s app.Store) {
	a, b := NewSession(1, ""), NewSession(2, "")
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertSession(&a); err != nil {
			return err
		}
		return tx.InsertSession(&b)
	})
	var stored []app.Event
	tx(t, s, func(tx app.Tx) error {
		var evs []app.Event
		for i := 0; i < 5; i++ {
			sess := a.ID
			if i%2 == 1 {
				sess = b.ID
			}
			evs = append(evs, app.Event{SessionID: sess, RunID: "run_x", Type: app.EventAgent,
				Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), At: t0.Add(time.Duration(i))})
		}
		var err error
		stored, err = tx.AppendEvents(evs)
		return err
	})
	for i := 1; i < len(stored); i++ {
		if stored[i].ID <= stored[i-1].ID {
			t.Fatalf("event ids not increasing: %d then %d", stored[i-1].ID, stored[i].ID)
		}
	}
	view(t, s, func(tx app.Tx) error {
		all, _ := tx.ListEvents(app.EventFilter{})
		equalJSON(t, "all events", all, stored)
		onlyA, _ := tx.ListEvents(app.EventFilter{SessionID: a.ID})
		if len(onlyA) != 3 {
			t.Fatalf("session filter: %d events", len(onlyA))
		}
		after, _ := tx.ListEvents(app.EventFilter{SessionID: a.ID, AfterID: onlyA[0].ID})
		if len(after) != 2 || after[0].ID != onlyA[1].ID {
			t.Fatalf("after filter: %+v", after)
		}
		lim, _ := tx.ListEvents(app.EventFilter{Limit: 2})
		if len(lim) != 2 || lim[0].ID != stored[0].ID {
			t.Fatalf("limit: %+v", lim)
		}
		return nil
	})
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		_, err := tx.AppendEvents([]app.Event{{SessionID: "ses_nope", Type: app.EventAgent, At: t0}})
		return err
	})
	wantCode(t, err, app.ENOTFOUND)
}

func testRollback(t *testing.T, s app.Store) {
	sess := NewSession(1, "")
	boom := errors.New("boom")
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		if err := tx.InsertSession(&sess); err != nil {
			return err
		}
		r := NewRun(sess.ID, 1)
		if err := tx.InsertRun(&r); err != nil {
			return err
		}
		if _, err := tx.AppendEvents([]app.Event{{SessionID: sess.ID, Type: app.EventRunQueued, At: t0}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want the fn's error", err)
	}
	view(t, s, func(tx app.Tx) error {
		_, err := tx.GetSession(sess.ID)
		wantCode(t, err, app.ENOTFOUND)
		evs, _ := tx.ListEvents(app.EventFilter{})
		if len(evs) != 0 {
			t.Fatalf("rolled back events remain: %d", len(evs))
		}
		return nil
	})
}

func testSecrets(t *testing.T, s app.Store) {
	tx(t, s, func(tx app.Tx) error {
		if err := tx.PutSecret("github/app-key", []byte{1, 2, 3}); err != nil {
			return err
		}
		return tx.PutSecret("github/app-key", []byte{4, 5})
	})
	view(t, s, func(tx app.Tx) error {
		v, ok, err := tx.GetSecret("github/app-key")
		if err != nil || !ok || string(v) != "\x04\x05" {
			t.Fatalf("GetSecret = %v %v %v", v, ok, err)
		}
		_, ok, _ = tx.GetSecret("nope")
		if ok {
			t.Fatal("found a missing secret")
		}
		return nil
	})
	tx(t, s, func(tx app.Tx) error { return tx.DeleteSecret("github/app-key") })
	view(t, s, func(tx app.Tx) error {
		if _, ok, _ := tx.GetSecret("github/app-key"); ok {
			t.Fatal("secret survived delete")
		}
		return nil
	})
}

func testAudit(t *testing.T, s app.Store) {
	tx(t, s, func(tx app.Tx) error {
		for i := 0; i < 3; i++ {
			if err := tx.AppendAudit(app.AuditEntry{At: t0, Actor: "operator", Action: fmt.Sprintf("a%d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx app.Tx) error {
		got, err := tx.ListAudit(2)
		if err != nil || len(got) != 2 || got[0].Action != "a2" || got[1].Action != "a1" {
			t.Fatalf("ListAudit newest first = %+v %v", got, err)
		}
		return nil
	})
}

func testBoxes(t *testing.T, s app.Store) {
	b := app.Box{BoxRef: app.BoxRef{Host: "local", Name: "asb-1"}, Role: app.BoxPoolFree, Status: "running",
		Image: "image:node", Egress: "deny+api.anthropic.com", CreatedAt: t0}
	tx(t, s, func(tx app.Tx) error {
		if err := tx.UpsertBox(b); err != nil {
			return err
		}
		b.Role, b.SessionID, b.Pinned = app.BoxSession, "ses_a", true
		if err := tx.UpsertBox(b); err != nil {
			return err
		}
		return tx.UpsertBox(app.Box{BoxRef: app.BoxRef{Host: "ssh://h", Name: "asb-2"}, Role: app.BoxPoolFree, CreatedAt: t0})
	})
	view(t, s, func(tx app.Tx) error {
		all, _ := tx.ListBoxes("")
		if len(all) != 2 {
			t.Fatalf("ListBoxes = %+v", all)
		}
		local, _ := tx.ListBoxes("local")
		equalJSON(t, "box", local, []app.Box{b})
		return nil
	})
	tx(t, s, func(tx app.Tx) error { return tx.DeleteBox(b.BoxRef) })
	view(t, s, func(tx app.Tx) error {
		if all, _ := tx.ListBoxes(""); len(all) != 1 {
			t.Fatalf("after delete: %+v", all)
		}
		return nil
	})
}
