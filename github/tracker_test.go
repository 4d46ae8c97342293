package github

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

// trackAPI records comment edits; the rest of GitHubAPI is unused here.
type trackAPI struct {
	mu    sync.Mutex
	edits map[int64][]string
	fail  bool
}

func (a *trackAPI) Permission(ctx context.Context, inst int64, repo, login string) (string, error) {
	return "write", nil
}
func (a *trackAPI) React(ctx context.Context, inst int64, repo string, id int64, c string) error {
	return nil
}
func (a *trackAPI) IssueReact(ctx context.Context, inst int64, repo string, n int, c string) error {
	return nil
}
func (a *trackAPI) CreateComment(ctx context.Context, inst int64, repo string, n int, body string) (int64, error) {
	return 0, fmt.Errorf("unexpected comment")
}
func (a *trackAPI) EditComment(ctx context.Context, inst int64, repo string, id int64, body string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail {
		return fmt.Errorf("github is down")
	}
	if a.edits == nil {
		a.edits = map[int64][]string{}
	}
	a.edits[id] = append(a.edits[id], body)
	return nil
}

func (a *trackAPI) AddLabels(ctx context.Context, inst int64, repo string, n int, labels []string) error {
	return nil
}
func (a *trackAPI) RemoveLabel(ctx context.Context, inst int64, repo string, n int, label string) error {
	return nil
}
func (a *trackAPI) ListComments(ctx context.Context, inst int64, repo string, n int) ([]ThreadComment, error) {
	return nil, nil
}
func (a *trackAPI) Thread(ctx context.Context, inst int64, repo string, n int, pr bool) (ThreadInfo, error) {
	return ThreadInfo{}, nil
}

func (a *trackAPI) list(id int64) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.edits[id]...)
}

func (a *trackAPI) setFail(f bool) {
	a.mu.Lock()
	a.fail = f
	a.mu.Unlock()
}

func lastState(t *testing.T, edits []string) app.RunState {
	t.Helper()
	if len(edits) == 0 {
		return ""
	}
	m, ok := ParseTrackingMarker(edits[len(edits)-1])
	if !ok {
		t.Fatalf("edit without marker: %q", edits[len(edits)-1])
	}
	return m.State
}

// startService runs a Service over fakes until the test ends.
func startService(t *testing.T, sb *apptest.FakeSandbox, store *apptest.MemStore) (*app.Service, context.Context) {
	t.Helper()
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return svc, ctx
}

func startTracker(t *testing.T, ctx context.Context, opts TrackerOptions) (*Tracker, func()) {
	t.Helper()
	tr, err := NewTracker(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := tr.Run(ctx); err != nil {
			t.Errorf("tracker Run: %v", err)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return tr, stop
}

func TestTrackerThrottlesButNeverDropsTheFinalEdit(t *testing.T) {
	const records = 40
	sb := apptest.NewFakeSandbox()
	hold := make(chan struct{})
	sb.ScriptFor = func(turn app.Turn) apptest.Script {
		s := apptest.Script{Hold: hold}
		for i := range records {
			s.Records = append(s.Records, fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"text","text":"step %d"}]}}`, i))
		}
		s.Records = append(s.Records, `{"type":"result","subtype":"success","result":"all steps done"}`)
		return s
	}
	store := apptest.NewMemStore()
	svc, ctx := startService(t, sb, store)
	api := &trackAPI{}
	// A long interval: only state changes get through at once.
	tr, _ := startTracker(t, ctx, TrackerOptions{Service: svc, API: api, MinInterval: time.Hour})
	tr.RememberInstallation("acme/widgets", 7)

	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/widgets", Number: 3, PullRequest: true, CommentID: 11}
	d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "do it", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetTrackingComment(ctx, d.Run.ID, 99); err != nil {
		t.Fatal(err)
	}
	tr.Tracked(d.Session.ID, d.Run.ID, 7, RenderTracking(TrackingData{View: app.SessionView{Session: d.Session, Runs: []app.RunView{{Run: d.Run}}}, RunID: d.Run.ID}))
	procWaitFor(t, "running edit", func() bool { return lastState(t, api.list(99)) == app.StateRunning })
	api.setFail(true) // the final edit fails at first…
	close(hold)
	procWaitFor(t, "run done", func() bool {
		v, err := svc.Session(ctx, d.Session.ID)
		return err == nil && v.Current != nil && v.Current.State == app.StateDone
	})
	time.Sleep(50 * time.Millisecond)
	api.setFail(false) // …and is retried.
	procWaitFor(t, "final edit", func() bool { return lastState(t, api.list(99)) == app.StateDone })
	edits := api.list(99)
	if len(edits) > 4 {
		t.Fatalf("%d edits for %d agent records: not throttled", len(edits), records)
	}
	if !strings.Contains(edits[len(edits)-1], "all steps done") {
		t.Fatalf("final edit:\n%s", edits[len(edits)-1])
	}
}

func TestTrackerCatchesUpOnStart(t *testing.T) {
	sb := apptest.NewFakeSandbox()
	sb.ScriptFor = func(turn app.Turn) apptest.Script { return apptest.Script{Question: "Which branch?"} }
	store := apptest.NewMemStore()
	svc, ctx := startService(t, sb, store)
	origin := app.Origin{Kind: app.OriginGitHubLabel, Repo: "acme/widgets", Number: 5}
	d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "fix it", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetTrackingComment(ctx, d.Run.ID, 42); err != nil {
		t.Fatal(err)
	}
	procWaitFor(t, "run waiting", func() bool {
		v, err := svc.Session(ctx, d.Session.ID)
		return err == nil && v.Current != nil && v.Current.State == app.StateWaiting
	})
	// A Tracker started afterwards (a restarted controller) edits it once.
	api := &trackAPI{}
	startTracker(t, ctx, TrackerOptions{Service: svc, API: api, MinInterval: 10 * time.Millisecond,
		Installation: func(ctx context.Context, repo string) (int64, error) { return 7, nil }})
	procWaitFor(t, "catch-up edit", func() bool { return lastState(t, api.list(42)) == app.StateWaiting })
	if !strings.Contains(api.list(42)[0], "Which branch?") {
		t.Fatalf("catch-up edit lacks the question:\n%s", api.list(42)[0])
	}
	// Non-GitHub runs are left alone.
	other, err := svc.Delegate(ctx, app.DelegateRequest{Task: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	_ = other
	time.Sleep(100 * time.Millisecond)
	if n := len(api.list(0)); n != 0 {
		t.Fatalf("edited a non-GitHub run %d times", n)
	}
}
