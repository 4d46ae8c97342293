package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// harness is a Service over in-memory fakes with its scheduler running.
type harness struct {
	svc     *app.Service
	store   *apptest.MemStore
	sandbox *apptest.FakeSandbox
	forge   *apptest.FakeForge
	ctx     context.Context
	stop    func()
}

func newHarness(t *testing.T, configure func(*apptest.FakeSandbox)) *harness {
	t.Helper()
	h := &harness{store: apptest.NewMemStore(), sandbox: apptest.NewFakeSandbox(), forge: &apptest.FakeForge{}}
	if configure != nil {
		configure(h.sandbox)
	}
	h.svc = app.NewService(app.Deps{Store: h.store, Sandbox: h.sandbox, Forge: h.forge},
		app.Config{PollInterval: time.Millisecond, MaxActiveRuns: 8})
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx) }()
	h.ctx = ctx
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			h.stop()
		}
	})
	return h
}

// waitFor polls cond until it holds; the deadline only guards against a
// hung test and is not a performance assertion.
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

func (h *harness) run(t *testing.T, id app.RunID) app.Run {
	t.Helper()
	var r app.Run
	if err := h.store.View(context.Background(), func(tx app.Tx) error {
		var err error
		r, err = tx.GetRun(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (h *harness) waitState(t *testing.T, id app.RunID, want app.RunState) app.Run {
	t.Helper()
	var r app.Run
	waitFor(t, fmt.Sprintf("run %s to be %s", id, want), func() bool {
		r = h.run(t, id)
		return r.State == want
	})
	return r
}

func (h *harness) events(t *testing.T, id app.SessionID) []app.Event {
	t.Helper()
	evs, err := h.svc.Events(h.ctx, id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func stateChanges(t *testing.T, evs []app.Event, run app.RunID) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Type != app.EventRunState || e.RunID != run {
			continue
		}
		var sc app.StateChange
		if err := e.Decode(&sc); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(sc.To))
	}
	return out
}

func TestRunLifecycleWithQuestionAndFollowUp(t *testing.T) {
	var mu sync.Mutex
	var turns []app.Turn
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			mu.Lock()
			turns = append(turns, turn)
			n := len(turns)
			mu.Unlock()
			switch n {
			case 1:
				return apptest.Script{
					Records:        []string{`{"type":"system","subtype":"init","session_id":"cc-1"}`, `{"type":"assistant","n":1}`},
					AgentSessionID: "cc-1",
					Question:       "Postgres or SQLite?",
				}
			default:
				return apptest.Script{
					Records:        []string{`{"type":"assistant","n":2}`, `{"type":"result","subtype":"success"}`},
					AgentSessionID: "cc-1",
					Result:         &app.AgentResult{Summary: "Used SQLite.", Usage: app.Usage{InputTokens: 100, OutputTokens: 50, CostUSD: 0.5, Turns: 2}},
				}
			}
		}
		sb.Bundles = func(box app.BoxRef, sources []app.Source) []app.Bundle {
			return []app.Bundle{{Source: sources[0], Path: "/tmp/x.bundle", Commits: []string{"c0ffee"}}}
		}
	})
	d, err := h.svc.Delegate(h.ctx, app.DelegateRequest{
		Task:    "add a cache\nwith details",
		Sources: []app.Source{{Repo: "acme/api"}},
		Origin:  app.Origin{Kind: app.OriginDashboard},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Position != 0 || d.Continued || d.Session.Title != "add a cache" || d.Session.Sources[0].Dir != "api" {
		t.Fatalf("delegation = %+v", d)
	}
	r := h.waitState(t, d.Run.ID, app.StateWaiting)
	if r.Question != "Postgres or SQLite?" {
		t.Fatalf("question = %q", r.Question)
	}
	v, err := h.svc.Session(h.ctx, d.Session.ID)
	if err != nil || v.Question != "Postgres or SQLite?" || v.State() != "waiting" || v.Session.AgentSessionID != "cc-1" {
		t.Fatalf("view = %+v, %v", v, err)
	}

	// The answer carries a one-step secret: it reaches the launch and is
	// stored nowhere.
	const secret = "s3cr3t-value-do-not-store"
	if _, err := h.svc.Answer(h.ctx, d.Session.ID, "SQLite", map[string]string{"DB_PASSWORD": secret}); err != nil {
		t.Fatal(err)
	}
	r = h.waitState(t, d.Run.ID, app.StateDone)
	if r.Turn != 2 || r.Summary != "Used SQLite." || r.Usage.CostUSD != 0.5 || r.Result.Branch == "" {
		t.Fatalf("done run = %+v", r)
	}
	mu.Lock()
	second := turns[1]
	mu.Unlock()
	if second.Prompt != "SQLite" || second.Secrets["DB_PASSWORD"] != secret || second.ResumeAgentSession != "cc-1" || second.Workdir != "/workspace/api" {
		t.Fatalf("second turn = %+v", second)
	}
	for _, e := range h.events(t, d.Session.ID) {
		if strings.Contains(string(e.Data), secret) {
			t.Fatalf("secret stored in event %+v", e)
		}
	}
	if calls := h.forge.Calls(); len(calls) != 1 || calls[0].Bundles[0].Commits[0] != "c0ffee" {
		t.Fatalf("publish calls = %+v", calls)
	}
	want := []string{"starting", "running", "waiting", "running", "done"}
	if got := stateChanges(t, h.events(t, d.Session.ID), d.Run.ID); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("state changes = %v, want %v", got, want)
	}

	// A follow-up continues the same agent conversation from the same folder.
	f, err := h.svc.FollowUp(h.ctx, d.Session.ID, "now add tests", app.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitState(t, f.Run.ID, app.StateDone)
	mu.Lock()
	third := turns[2]
	mu.Unlock()
	if third.ResumeAgentSession != "cc-1" || third.Workdir != "/workspace/api" || third.Prompt != "now add tests" || third.Secrets != nil {
		t.Fatalf("follow-up turn = %+v", third)
	}
	if h.sandbox.BoxesBooted() != 1 {
		t.Fatalf("booted %d boxes for one session", h.sandbox.BoxesBooted())
	}
}

func TestQueueRunsOneAtATimeInOrder(t *testing.T) {
	holds := map[string]chan struct{}{}
	var mu sync.Mutex
	hold := func(prompt string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if holds[prompt] == nil {
			holds[prompt] = make(chan struct{})
		}
		return holds[prompt]
	}
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			return apptest.Script{Records: []string{`{"type":"assistant"}`}, Hold: hold(turn.Prompt)}
		}
	})
	first, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "first"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "other session"})
	if err != nil {
		t.Fatal(err)
	}
	// Different sessions proceed in parallel: both are running at once.
	h.waitState(t, first.Run.ID, app.StateRunning)
	h.waitState(t, other.Run.ID, app.StateRunning)

	const n = 10
	results := make([]app.Delegation, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d, err := h.svc.FollowUp(h.ctx, first.Session.ID, fmt.Sprintf("follow-up %d", i), app.Origin{})
			if err != nil {
				t.Error(err)
			}
			results[i] = d
		}(i)
	}
	wg.Wait()
	// Positions are distinct and match the sequence numbers: 1..n ahead.
	seen := map[int]bool{}
	for _, d := range results {
		if d.Position != int(d.Run.Seq-1) || seen[d.Position] {
			t.Fatalf("follow-up seq %d reported position %d", d.Run.Seq, d.Position)
		}
		seen[d.Position] = true
	}
	v, _ := h.svc.Session(h.ctx, first.Session.ID)
	if v.Queued != n {
		t.Fatalf("queued = %d", v.Queued)
	}
	for _, rv := range v.Runs {
		if rv.Position != int(rv.Seq-1) {
			t.Fatalf("view position of seq %d = %d", rv.Seq, rv.Position)
		}
	}
	// Release the runs one by one, in sequence order; at each step only
	// the head is active.
	for seq := int64(1); seq <= n+1; seq++ {
		v, _ := h.svc.Session(h.ctx, first.Session.ID)
		cur := v.Runs[seq-1]
		h.waitState(t, cur.ID, app.StateRunning)
		v, _ = h.svc.Session(h.ctx, first.Session.ID)
		active := 0
		for _, rv := range v.Runs {
			if rv.State.Active() {
				active++
			}
		}
		if active != 1 {
			t.Fatalf("%d runs active in one session", active)
		}
		close(hold(cur.Prompt))
		h.waitState(t, cur.ID, app.StateDone)
	}
	close(hold("other session"))
	h.waitState(t, other.Run.ID, app.StateDone)

	// The stored history shows each run started only after the one before ended.
	evs := h.events(t, first.Session.ID)
	var order []string
	for _, e := range evs {
		if e.Type != app.EventRunState {
			continue
		}
		var sc app.StateChange
		_ = e.Decode(&sc)
		if sc.To == app.StateStarting || sc.To == app.StateDone {
			order = append(order, fmt.Sprintf("%s:%s", e.RunID, sc.To))
		}
	}
	v, _ = h.svc.Session(h.ctx, first.Session.ID)
	var want []string
	for _, rv := range v.Runs {
		want = append(want, fmt.Sprintf("%s:starting", rv.ID), fmt.Sprintf("%s:done", rv.ID))
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("order:\n got %v\nwant %v", order, want)
	}
}

func TestThreadContinuesSessionUnlessNew(t *testing.T) {
	h := newHarness(t, nil)
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/api", Number: 7, PullRequest: true, Login: "octo"}
	a, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "one", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "two", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Continued || b.Session.ID != a.Session.ID || b.Run.Kind != app.RunFollowUp {
		t.Fatalf("second trigger on the PR did not continue the session: %+v", b)
	}
	h.waitState(t, b.Run.ID, app.StateDone)
	c, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "three", Origin: origin, NewSession: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Session.ID == a.Session.ID || c.Continued {
		t.Fatalf("/agent new continued the old session")
	}
	old, _ := h.svc.Session(h.ctx, a.Session.ID)
	if old.Session.State != app.SessionClosed {
		t.Fatalf("old session state %s", old.Session.State)
	}
	waitFor(t, "old box removed", func() bool { return len(h.sandbox.Removed()) == 1 })
}

func TestCancelAndTeardown(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			return apptest.Script{Records: []string{`{}`}, Hold: hold}
		}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "long job"})
	q, _ := h.svc.FollowUp(h.ctx, d.Session.ID, "later", app.Origin{})
	h.waitState(t, d.Run.ID, app.StateRunning)
	cancelled, err := h.svc.Cancel(h.ctx, d.Session.ID)
	if err != nil || len(cancelled) != 1 || cancelled[0].ID != d.Run.ID {
		t.Fatalf("cancel = %+v, %v", cancelled, err)
	}
	if k := h.sandbox.Killed(); len(k) != 1 || k[0].RunID != d.Run.ID {
		t.Fatalf("killed = %+v", k)
	}
	// The queued follow-up starts once the cancelled run is out of the way.
	h.waitState(t, q.Run.ID, app.StateRunning)
	if _, err := h.svc.Teardown(h.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	if r := h.run(t, q.Run.ID); r.State != app.StateCancelled {
		t.Fatalf("follow-up after teardown: %s", r.State)
	}
	if len(h.sandbox.Removed()) != 1 {
		t.Fatalf("box not removed")
	}
	// Teardown is idempotent, and a closed session refuses follow-ups.
	if _, err := h.svc.Teardown(h.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.FollowUp(h.ctx, d.Session.ID, "more", app.Origin{}); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("follow-up on closed session: %v", err)
	}
	// Events outlive the box.
	if evs := h.events(t, d.Session.ID); len(evs) == 0 || evs[len(evs)-1].Type != app.EventSessionClosed {
		t.Fatalf("events after teardown: %+v", evs)
	}
	audit, _ := h.svc.Audit(h.ctx, 10)
	if len(audit) < 2 || audit[0].Action != "session.teardown" {
		t.Fatalf("audit = %+v", audit)
	}
}

func TestAgentFailureAndBoxErrors(t *testing.T) {
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(t app.Turn) apptest.Script { return apptest.Script{Records: []string{`{}`}, ExitCode: 2} }
		sb.EnsureBoxErr = func(spec app.BoxSpec) error {
			if len(spec.AllowDomains) > 0 {
				return app.Errorf(app.EINVALID, "image not cached")
			}
			return nil
		}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "crashes"})
	r := h.waitState(t, d.Run.ID, app.StateFailed)
	if r.ExitCode != 2 || !strings.Contains(r.Error, "code 2") {
		t.Fatalf("failed run = %+v", r)
	}
	d2, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "no box", AllowDomains: []string{"pypi.org"}})
	r = h.waitState(t, d2.Run.ID, app.StateFailed)
	if r.Error != "image not cached" {
		t.Fatalf("error = %q", r.Error)
	}
}

func TestOwnershipHidesOthersSessions(t *testing.T) {
	h := newHarness(t, nil)
	alice := app.WithActor(context.Background(), app.Actor{Account: "alice", Name: "alice"})
	bob := app.WithActor(context.Background(), app.Actor{Account: "bob", Name: "bob"})
	d, err := h.svc.Delegate(alice, app.DelegateRequest{Task: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]func() error{
		"Session":  func() error { _, err := h.svc.Session(bob, d.Session.ID); return err },
		"Events":   func() error { _, err := h.svc.Events(bob, d.Session.ID, 0, 10); return err },
		"FollowUp": func() error { _, err := h.svc.FollowUp(bob, d.Session.ID, "x", app.Origin{}); return err },
		"Answer":   func() error { _, err := h.svc.Answer(bob, d.Session.ID, "x", nil); return err },
		"Cancel":   func() error { _, err := h.svc.Cancel(bob, d.Session.ID); return err },
		"Teardown": func() error { _, err := h.svc.Teardown(bob, d.Session.ID); return err },
		"Pin":      func() error { _, err := h.svc.Pin(bob, d.Session.ID, true); return err },
		"Subscribe": func() error {
			_, _, err := h.svc.Subscribe(bob, d.Session.ID, 0)
			return err
		},
	}
	for name, fn := range checks {
		if err := fn(); app.ErrorCode(err) != app.ENOTFOUND {
			t.Errorf("%s as another user: %v, want not found", name, err)
		}
	}
	fleet, _ := h.svc.Fleet(bob, app.FleetFilter{})
	if len(fleet) != 0 {
		t.Fatalf("bob's fleet shows %d sessions", len(fleet))
	}
	if fleet, _ := h.svc.Fleet(h.ctx, app.FleetFilter{}); len(fleet) != 1 {
		t.Fatalf("operator sees %d sessions", len(fleet))
	}
	if _, err := h.svc.Session(context.Background(), d.Session.ID); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("no actor: %v", err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	h := newHarness(t, nil)
	cases := map[string]app.DelegateRequest{
		"empty task":      {Task: "  "},
		"huge task":       {Task: strings.Repeat("x", 70<<10)},
		"bad repo":        {Task: "x", Sources: []app.Source{{Repo: "../etc"}}},
		"option ref":      {Task: "x", Sources: []app.Source{{Repo: "a/b", Ref: "--upload-pack=evil"}}},
		"dup dirs":        {Task: "x", Sources: []app.Source{{Repo: "a/b"}, {Repo: "c/b"}}},
		"bad domain":      {Task: "x", AllowDomains: []string{"evil.com;rm -rf /"}},
		"bad origin":      {Task: "x", Origin: app.Origin{Kind: "carrier-pigeon"}},
		"nul":             {Task: "a\x00b"},
		"hidden dir name": {Task: "x", Sources: []app.Source{{Repo: "a/b", Dir: ".agent.question"}}},
	}
	for name, req := range cases {
		if _, err := h.svc.Delegate(h.ctx, req); app.ErrorCode(err) != app.EINVALID && app.ErrorCode(err) != app.ETOOLARGE {
			t.Errorf("%s: %v", name, err)
		}
	}
	if fleet, _ := h.svc.Fleet(h.ctx, app.FleetFilter{IncludeClosed: true}); len(fleet) != 0 {
		t.Fatalf("bad requests created %d sessions", len(fleet))
	}
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "ok"})
	h.waitState(t, d.Run.ID, app.StateDone)
	for _, name := range []string{"PATH", "LD_PRELOAD", "lower", "1X", "GIT_SSH_COMMAND"} {
		if _, err := h.svc.Answer(h.ctx, d.Session.ID, "x", map[string]string{name: "v"}); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("secret %s: %v", name, err)
		}
	}
	if _, err := h.svc.Answer(h.ctx, d.Session.ID, "x", nil); app.ErrorCode(err) != app.ECONFLICT {
		t.Errorf("answer with no question: %v", err)
	}
}

func TestSubscribeReplaysThenStreamsWithoutGaps(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			recs := make([]string, 50)
			for i := range recs {
				recs[i] = fmt.Sprintf(`{"n":%d}`, i)
			}
			return apptest.Script{Records: recs, Hold: hold}
		}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "stream"})
	waitFor(t, "some records", func() bool { return len(h.events(t, d.Session.ID)) > 10 })
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	ch, errf, err := h.svc.Subscribe(ctx, d.Session.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	close(hold)
	var got []int64
	for e := range ch {
		got = append(got, e.ID)
		var sc app.StateChange
		if e.Type == app.EventRunState && e.Decode(&sc) == nil && sc.To == app.StateDone {
			cancel()
		}
	}
	if err := errf(); err != nil {
		t.Fatal(err)
	}
	all := h.events(t, d.Session.ID)
	var want []int64
	for _, e := range all {
		if e.ID > 2 {
			want = append(want, e.ID)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("streamed ids\n got %v\nwant %v", got, want)
	}
}

func TestWaitReturnsAtBoundaryOrTimeout(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			return apptest.Script{Records: []string{`{}`}, Hold: hold, Question: "which one?"}
		}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "ask"})
	h.waitState(t, d.Run.ID, app.StateRunning)
	res, err := h.svc.Wait(h.ctx, d.Session.ID, 20*time.Millisecond)
	if err != nil || res.Reached {
		t.Fatalf("wait before boundary = %+v, %v", res.Reached, err)
	}
	close(hold)
	res, err = h.svc.Wait(h.ctx, d.Session.ID, time.Minute)
	if err != nil || !res.Reached || res.View.Question != "which one?" {
		t.Fatalf("wait = %+v, %v", res, err)
	}
}

func TestSlowSubscriberIsDroppedNotBlocking(t *testing.T) {
	bus := app.NewBus(4)
	slow := bus.Subscribe(nil)
	fast := bus.Subscribe(nil)
	got := make(chan int, 100)
	go func() {
		for e := range fast.C() {
			got <- int(e.ID)
		}
	}()
	for i := 1; i <= 10; i++ {
		bus.Publish(app.Event{ID: int64(i)}) // must never block
		time.Sleep(time.Millisecond)
	}
	n := 0
	for range slow.C() { // ends only because the bus closed the channel
		n++
	}
	if n != 4 {
		t.Fatalf("slow subscriber got %d buffered events, want 4", n)
	}
	if slow.Err() != app.ErrLagged {
		t.Fatalf("slow subscriber err = %v", slow.Err())
	}
	fast.Close()
	if bus.Subscribers() != 0 {
		t.Fatalf("subscribers left: %d", bus.Subscribers())
	}
}
