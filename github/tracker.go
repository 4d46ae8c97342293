package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
)

// DefaultTrackInterval is the least time between two edits of one
// tracking comment that do not change the run's state.
const DefaultTrackInterval = 3 * time.Second

// TrackerOptions configure a Tracker.
type TrackerOptions struct {
	// Service is the core whose bus is followed. Required.
	Service *app.Service
	// API edits comments; when nil, Clients builds it (NewClientsAPI).
	API     GitHubAPI
	Clients ClientsFunc
	// Installation finds the App installation of a repository, for runs
	// whose installation this process has not seen (after a restart).
	// Optional: the Processor tells the Tracker the ones it sees.
	Installation func(ctx context.Context, repo string) (int64, error)
	// UserClient acts as a stored login, for runs started from that
	// login's events feed on repositories the App is not installed on.
	UserClient UserClientFunc
	// MinInterval throttles edits that do not change the run's state
	// (default DefaultTrackInterval).
	MinInterval time.Duration
	// PublicURL, WebURL and Trigger feed RenderTracking.
	PublicURL, WebURL, Trigger string
	Logger                     *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Tracker keeps each GitHub run's tracking comment up to date: it follows
// the Service's bus and edits the comment in place, throttled, never
// dropping the final edit.
type Tracker struct {
	opts TrackerOptions
	svc  *app.Service
	api  GitHubAPI
	log  *slog.Logger

	kick chan struct{}

	mu    sync.Mutex
	runs  map[app.RunID]*trackedRun
	insts map[string]int64
	// ignored are runs that are not GitHub runs.
	ignored map[app.RunID]bool
}

type trackedRun struct {
	session  app.SessionID
	last     string
	lastEdit time.Time
	// pending is set when an update was held back by the throttle or an
	// edit failed; the flush timer retries it.
	pending  bool
	retryAt  time.Time
	terminal bool
	// force renders at the next flush whatever the throttle says
	// (ShouldEdit still decides whether to edit).
	force bool
	// failures counts edits failed in a row, for the retry backoff.
	failures int
	// issue is what was done to a label run's issue (state label, PR
	// notice); see syncIssue.
	issue trackedIssue
}

// NewTracker checks the options and returns a Tracker; call Run.
func NewTracker(opts TrackerOptions) (*Tracker, error) {
	if opts.Service == nil {
		return nil, errors.New("github: tracker needs a Service")
	}
	api := opts.API
	if api == nil {
		if opts.Clients == nil && opts.UserClient == nil {
			return nil, errors.New("github: tracker needs API, Clients or UserClient")
		}
		api = NewClientsAPI(orNoApp(opts.Clients))
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultTrackInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tracker{
		opts: opts, svc: opts.Service, api: api, log: opts.Logger,
		kick:    make(chan struct{}, 1),
		runs:    map[app.RunID]*trackedRun{},
		insts:   map[string]int64{},
		ignored: map[app.RunID]bool{},
	}, nil
}

// RememberInstallation records the App installation of a repository.
func (t *Tracker) RememberInstallation(repo string, inst int64) {
	if repo == "" || inst == 0 {
		return
	}
	t.mu.Lock()
	t.insts[repo] = inst
	t.mu.Unlock()
}

// Tracked tells the Tracker that a run's tracking comment was just posted
// with body, so it renders again at once if the run moved on meanwhile.
func (t *Tracker) Tracked(sess app.SessionID, run app.RunID, inst int64, body string) {
	t.mu.Lock()
	tr := t.runs[run]
	if tr == nil {
		tr = &trackedRun{session: sess}
		t.runs[run] = tr
	}
	if tr.last == "" {
		tr.last, tr.lastEdit = body, t.opts.Now()
	}
	tr.pending, tr.force = true, true
	tr.retryAt = time.Time{}
	delete(t.ignored, run)
	t.mu.Unlock()
	t.wake()
}

func (t *Tracker) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

func (t *Tracker) flushEvery() time.Duration {
	d := t.opts.MinInterval / 4
	return min(max(d, 20*time.Millisecond), time.Second)
}

// Run follows the bus until ctx ends. It first re-renders every live
// GitHub run once, so a restarted controller catches up. It returns nil
// when ctx ends.
func (t *Tracker) Run(ctx context.Context) error {
	ctx = app.WithActor(ctx, app.OperatorActor)
	sub := t.subscribe()
	defer func() { sub.Close() }()
	t.catchUp(ctx)
	tick := time.NewTicker(t.flushEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-sub.C():
			if !ok {
				// Lagged: resubscribe and re-render everything live.
				sub = t.subscribe()
				t.catchUp(ctx)
				continue
			}
			t.onEvent(ctx, e)
		case <-t.kick:
			t.flush(ctx)
		case <-tick.C:
			t.flush(ctx)
		}
	}
}

func (t *Tracker) subscribe() *app.Subscription {
	return t.svc.Bus().Subscribe(func(e app.Event) bool { return e.RunID != "" })
}

// catchUp marks every live GitHub run (and each session's latest run,
// whose final edit may have been lost) for one render.
func (t *Tracker) catchUp(ctx context.Context) {
	views, err := t.svc.Fleet(ctx, app.FleetFilter{})
	if err != nil {
		if ctx.Err() == nil {
			t.log.Warn("tracker: list sessions", "err", err)
		}
		return
	}
	t.mu.Lock()
	for _, v := range views {
		for i, r := range v.Runs {
			if !githubOrigin(r.Origin) || r.Origin.TrackingCommentID == 0 {
				continue
			}
			if r.State.Terminal() && i != len(v.Runs)-1 {
				continue
			}
			tr := t.runs[r.ID]
			if tr == nil {
				tr = &trackedRun{session: v.Session.ID}
				t.runs[r.ID] = tr
			}
			tr.pending = true
		}
	}
	t.mu.Unlock()
	t.flush(ctx)
}

func githubOrigin(o app.Origin) bool {
	return o.Kind == app.OriginGitHubComment || o.Kind == app.OriginGitHubLabel
}

// stateEvent reports whether an event changes what people wait for.
func stateEvent(e app.Event) bool {
	switch e.Type {
	case app.EventRunState, app.EventRunQuestion, app.EventRunAnswered, app.EventRunQueued:
		return true
	}
	return false
}

func (t *Tracker) onEvent(ctx context.Context, e app.Event) {
	t.mu.Lock()
	if t.ignored[e.RunID] {
		t.mu.Unlock()
		return
	}
	tr := t.runs[e.RunID]
	if tr == nil {
		tr = &trackedRun{session: e.SessionID}
		t.runs[e.RunID] = tr
	}
	tr.pending = true
	now := t.opts.Now()
	due := stateEvent(e) || tr.lastEdit.IsZero() || now.Sub(tr.lastEdit) >= t.opts.MinInterval
	t.mu.Unlock()
	if due {
		t.render(ctx, e.RunID)
	}
}

// flush renders runs whose update is pending and due.
func (t *Tracker) flush(ctx context.Context) {
	now := t.opts.Now()
	var due []app.RunID
	t.mu.Lock()
	for id, tr := range t.runs {
		switch {
		case tr.pending && !tr.retryAt.After(now) && (tr.force || tr.lastEdit.IsZero() || now.Sub(tr.lastEdit) >= t.opts.MinInterval):
			tr.force = false
			due = append(due, id)
		case !tr.pending && tr.terminal && now.Sub(tr.lastEdit) > time.Hour:
			delete(t.runs, id)
		}
	}
	t.mu.Unlock()
	for _, id := range due {
		if ctx.Err() != nil {
			return
		}
		t.render(ctx, id)
	}
}

// render re-renders a run's comment and edits it when ShouldEdit says so;
// a change it holds back stays pending for the flush timer.
func (t *Tracker) render(ctx context.Context, id app.RunID) {
	t.mu.Lock()
	tr := t.runs[id]
	if tr == nil {
		t.mu.Unlock()
		return
	}
	sess, prev, lastEdit, issue := tr.session, tr.last, tr.lastEdit, tr.issue
	t.mu.Unlock()

	view, err := t.svc.Session(ctx, sess)
	if err != nil {
		t.fail(id, err, app.ErrorCode(err) == app.ENOTFOUND)
		return
	}
	var run *app.Run
	for i := range view.Runs {
		if view.Runs[i].ID == id {
			run = &view.Runs[i].Run
			break
		}
	}
	if run == nil || !githubOrigin(run.Origin) {
		t.mu.Lock()
		t.ignored[id] = true
		delete(t.runs, id)
		t.mu.Unlock()
		return
	}
	if run.Origin.TrackingCommentID == 0 {
		// Not posted yet; the Processor calls Tracked once it is.
		t.mu.Lock()
		if tr := t.runs[id]; tr != nil {
			tr.pending = false
		}
		t.mu.Unlock()
		return
	}
	// The issue's state label and PR notice do not wait for the
	// comment's throttle; a failure there is retried like a failed edit.
	issue, syncErr := t.syncIssue(ctx, issue, view, run)
	t.mu.Lock()
	if tr := t.runs[id]; tr != nil {
		tr.issue = issue
	}
	t.mu.Unlock()
	defer func() {
		if syncErr != nil {
			t.fail(id, fmt.Errorf("update issue: %w", syncErr), false)
		}
	}()
	events, err := t.runEvents(ctx, sess, id)
	if err != nil {
		t.fail(id, err, false)
		return
	}
	now := t.opts.Now()
	body := RenderTracking(TrackingData{
		View: view, RunID: id, Digest: Digest(events), PublicURL: t.opts.PublicURL,
		WebURL: t.opts.WebURL, Trigger: t.opts.Trigger, Now: now,
	})
	terminal := run.State.Terminal()
	if !ShouldEdit(prev, body, lastEdit, now, t.opts.MinInterval) {
		t.mu.Lock()
		if tr := t.runs[id]; tr != nil {
			tr.terminal = terminal
			// Identical text needs nothing; a throttled change waits.
			tr.pending = body != prev
		}
		t.mu.Unlock()
		return
	}
	api, inst, err := t.apiFor(ctx, run.Origin)
	if err == nil {
		err = api.EditComment(ctx, inst, run.Origin.Repo, run.Origin.TrackingCommentID, body)
	}
	if err != nil {
		t.fail(id, err, false)
		return
	}
	t.mu.Lock()
	if tr := t.runs[id]; tr != nil {
		tr.last, tr.lastEdit, tr.pending, tr.terminal, tr.retryAt, tr.failures = body, now, false, terminal, time.Time{}, 0
	}
	t.mu.Unlock()
}

// fail keeps the update pending and backs off; drop forgets the run.
func (t *Tracker) fail(id app.RunID, err error, drop bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if drop {
		delete(t.runs, id)
		return
	}
	if tr := t.runs[id]; tr != nil {
		// Retry after a backoff whatever the throttle says, so a final
		// edit that failed is not held back for another interval.
		tr.pending, tr.force = true, true
		tr.failures++
		tr.retryAt = t.opts.Now().Add(min(time.Second<<min(tr.failures-1, 6), time.Minute))
	}
	t.log.Warn("tracker: update tracking comment", "run", id, "err", err)
}

func (t *Tracker) installation(ctx context.Context, repo string) (int64, error) {
	t.mu.Lock()
	inst, ok := t.insts[repo]
	t.mu.Unlock()
	if ok {
		return inst, nil
	}
	if t.opts.Installation == nil {
		return 0, errors.New("no known App installation for " + repo)
	}
	inst, err := t.opts.Installation(ctx, repo)
	if err != nil {
		return 0, err
	}
	t.RememberInstallation(repo, inst)
	return inst, nil
}

// runEvents returns the stored events of one run.
func (t *Tracker) runEvents(ctx context.Context, sess app.SessionID, run app.RunID) ([]app.Event, error) {
	const page = 1000
	var out []app.Event
	var after int64
	for {
		list, err := t.svc.Events(ctx, sess, after, page)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			if e.RunID == run {
				out = append(out, e)
			}
		}
		if len(list) < page {
			return out, nil
		}
		after = list[len(list)-1].ID
	}
}
