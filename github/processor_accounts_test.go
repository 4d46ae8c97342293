package github

import (
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// A /agent comment runs as the account whose GitHub login matches the
// commenter (multi-user mode), so the session is theirs; with no such
// account it is the operator's.
func TestProcessorRunsAsTheCommentersAccount(t *testing.T) {
	w := newProcWorld(t, func(app.Turn) apptest.Script { return procDoneScript("done") })
	ann, err := w.svc.CreateAccount(w.ctx, app.NewAccount{Username: "ann", GitHubLogin: "Alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, d := w.comment(w.pr, "alice", "/agent add a test")
	if e := w.waitProcessed(d); e != "" {
		t.Fatalf("delivery failed: %s", e)
	}
	v, ok := w.thread(w.pr)
	if !ok || v.Session.Owner != ann.ID {
		t.Fatalf("session owner = %q (found %v), want %s", v.Session.Owner, ok, ann.ID)
	}
	// Without the account, the same login's run is the operator's.
	w2 := newProcWorld(t, func(app.Turn) apptest.Script { return procDoneScript("done") })
	_, d = w2.comment(w2.pr, "alice", "/agent add a test")
	w2.waitProcessed(d)
	if v, ok := w2.thread(w2.pr); !ok || v.Session.Owner != app.OperatorAccount {
		t.Fatalf("unmapped session owner = %q", v.Session.Owner)
	}
}
