package github

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/github/githubtest"
)

const pollRepo = "acme/widgets"

type pollClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *pollClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *pollClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// pollSink records deliveries and classifies each as the processor would.
type pollSink struct {
	t        *testing.T
	mu       sync.Mutex
	got      []Delivery
	triggers []Trigger
	slug     string
}

func (s *pollSink) Accept(ctx context.Context, d Delivery) {
	tr, ok, err := Classify(d.Event, d.Payload, TriggerConfig{AppSlug: s.slug})
	if err != nil {
		s.t.Errorf("Classify(%s): %v\n%s", d.ID, err, d.Payload)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.got {
		if old.ID == d.ID {
			s.t.Errorf("delivery %s handed to the sink twice", d.ID)
		}
	}
	s.got = append(s.got, d)
	if ok {
		s.triggers = append(s.triggers, tr)
	}
}

func (s *pollSink) counts() (deliveries, triggers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got), len(s.triggers)
}

func (s *pollSink) last() (Delivery, Trigger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tr Trigger
	if len(s.triggers) > 0 {
		tr = s.triggers[len(s.triggers)-1]
	}
	return s.got[len(s.got)-1], tr
}

type memCursors struct {
	mu sync.Mutex
	m  map[string][2]string
}

func (m *memCursors) Cursor(ctx context.Context, key string) (string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.m[key]
	return v[0], v[1], nil
}

func (m *memCursors) PutCursor(ctx context.Context, key, value, etag string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string][2]string{}
	}
	m.m[key] = [2]string{value, etag}
	return nil
}

type pollWorld struct {
	t     *testing.T
	srv   *githubtest.Server
	clock *pollClock
	inst  int64
	pr    int
	issue int

	mu      sync.Mutex
	clients map[int64]*gh.Client
}

func newPollWorld(t *testing.T) *pollWorld {
	t.Helper()
	clock := &pollClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	w := &pollWorld{t: t, clock: clock, clients: map[int64]*gh.Client{}}
	w.srv = githubtest.New(t, githubtest.Options{Now: clock.Now})
	w.srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n"})
	w.srv.AddUser("alice")
	w.srv.SetPermission(pollRepo, "alice", "write")
	w.inst = w.srv.AddInstallation("acme").ID
	w.srv.Commit(pollRepo, "feature", "feature work", map[string]string{"w.go": "package w\n"})
	w.pr = w.srv.AddPull(pollRepo, githubtest.PullSpec{Author: "alice", Title: "Add widgets", Head: "feature"}).Number
	w.issue = w.srv.AddIssue(pollRepo, githubtest.IssueSpec{Author: "alice", Title: "Widgets crash", Body: "Steps."}).Number
	return w
}

// clients caches one client per installation, as App does, so go-github's
// rate-limit memory behaves as in production.
func (w *pollWorld) clientsFunc(ctx context.Context, id int64) (*gh.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.clients[id]; ok {
		return c, nil
	}
	c, err := gh.NewClient(nil).WithAuthToken(w.srv.InstallationToken(id)).WithEnterpriseURLs(w.srv.APIURL(), w.srv.UploadURL())
	if err == nil {
		w.clients[id] = c
	}
	return c, err
}

func (w *pollWorld) poller(cursors CursorStore, deliveries DeliveryStore) (*Poller, *pollSink) {
	w.t.Helper()
	sink := &pollSink{t: w.t, slug: w.srv.AppSlug()}
	p, err := NewPoller(PollerOptions{
		Clients: w.clientsFunc,
		Installations: func(ctx context.Context) ([]InstalledRepo, error) {
			return []InstalledRepo{{Repo: pollRepo, InstallationID: w.inst}}, nil
		},
		Cursors: cursors, Sink: sink, Deliveries: deliveries,
		Interval: 10 * time.Millisecond, Now: w.clock.Now,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return p, sink
}

func (w *pollWorld) pollOK(p *Poller) {
	w.t.Helper()
	if err := p.PollOnce(context.Background()); err != nil {
		w.t.Fatalf("PollOnce: %v", err)
	}
}

// assertOnly304 checks every repository request since the last reset was
// answered 304 and that some were made.
func (w *pollWorld) assertOnly304() {
	w.t.Helper()
	reqs := w.srv.Requests(githubtest.Match("GET", "/api/v3/repos/*/*/issues/*"))
	if len(reqs) == 0 {
		w.t.Fatal("no poll requests recorded")
	}
	for _, q := range reqs {
		if q.Status != http.StatusNotModified {
			w.t.Errorf("%s: want 304", q)
		}
	}
	all := w.srv.Requests(func(q githubtest.Request) bool { return strings.HasPrefix(q.Path, "/api/v3/repos/") })
	if len(all) != len(reqs) {
		w.t.Errorf("unexpected requests: %v", all)
	}
}

func TestPollerPRCommentDeliveredOnceThen304(t *testing.T) {
	w := newPollWorld(t)
	p, sink := w.poller(&memCursors{}, nil)
	c := w.srv.AddComment(pollRepo, w.pr, "alice", "/agent make the tests pass")

	w.pollOK(p)
	if n, tr := sink.counts(); n != 1 || tr != 1 {
		t.Fatalf("deliveries=%d triggers=%d, want 1/1", n, tr)
	}
	d, tr := sink.last()
	if d.Event != "issue_comment" || d.Action != "created" {
		t.Errorf("delivery %s %s/%s", d.ID, d.Event, d.Action)
	}
	if tr.Kind != TriggerComment || tr.Repo != pollRepo || tr.Number != w.pr || !tr.PullRequest ||
		tr.CommentID != c.ID || tr.Sender != "alice" || tr.InstallationID != w.inst || tr.Command.Kind != CommandAsk {
		t.Errorf("trigger = %+v", tr)
	}

	w.srv.ResetRequests()
	w.pollOK(p)
	w.assertOnly304()
	if n, _ := sink.counts(); n != 1 {
		t.Fatalf("second round delivered: %d", n)
	}
}

func TestPollerEditIsNotATrigger(t *testing.T) {
	w := newPollWorld(t)
	p, sink := w.poller(&memCursors{}, nil)
	c := w.srv.AddComment(pollRepo, w.issue, "alice", "/agent fix it")
	w.pollOK(p)

	w.clock.Advance(5 * time.Second)
	w.srv.EditComment(c.ID, "/agent fix it properly")
	w.pollOK(p)
	n, trig := sink.counts()
	if n != 2 || trig != 1 {
		t.Fatalf("deliveries=%d triggers=%d, want 2/1", n, trig)
	}
	if d, _ := sink.last(); d.Action != "edited" {
		t.Errorf("edit delivered as %q", d.Action)
	}
	// A second comment in the same second as the edit is still new.
	c2 := w.srv.AddComment(pollRepo, w.issue, "alice", "/agent status")
	w.pollOK(p)
	if n, trig := sink.counts(); n != 3 || trig != 2 {
		t.Fatalf("deliveries=%d triggers=%d, want 3/2", n, trig)
	}
	if _, tr := sink.last(); tr.CommentID != c2.ID || tr.PullRequest || tr.Command.Kind != CommandStatus {
		t.Errorf("trigger = %+v", tr)
	}
	w.pollOK(p)
	if n, _ := sink.counts(); n != 3 {
		t.Fatalf("re-delivered: %d", n)
	}
}

func TestPollerCursorsSurviveRestart(t *testing.T) {
	w := newPollWorld(t)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent go")
	w.srv.AddLabels(pollRepo, w.issue, "alice", "agent")

	p1, sink1 := w.poller(st, st)
	w.pollOK(p1)
	if n, tr := sink1.counts(); n != 2 || tr != 2 {
		t.Fatalf("deliveries=%d triggers=%d, want 2/2", n, tr)
	}

	p2, sink2 := w.poller(st, st)
	w.srv.ResetRequests()
	w.pollOK(p2)
	w.assertOnly304()
	if n, _ := sink2.counts(); n != 0 {
		t.Fatalf("restarted poller re-delivered %d", n)
	}

	// And it still sees new activity.
	w.clock.Advance(time.Second)
	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent again")
	w.pollOK(p2)
	if n, tr := sink2.counts(); n != 1 || tr != 1 {
		t.Fatalf("deliveries=%d triggers=%d, want 1/1", n, tr)
	}
}

func TestPollerLabelDeliveredOnce(t *testing.T) {
	w := newPollWorld(t)
	p, sink := w.poller(&memCursors{}, nil)
	w.srv.AddLabels(pollRepo, w.issue, "alice", "bug", "agent")
	w.pollOK(p)
	if n, tr := sink.counts(); n != 1 || tr != 1 {
		t.Fatalf("deliveries=%d triggers=%d, want 1/1", n, tr)
	}
	d, tr := sink.last()
	if d.Event != "issues" || d.Action != "labeled" || tr.Kind != TriggerLabel || tr.Repo != pollRepo ||
		tr.Number != w.issue || tr.PullRequest || tr.Label != "agent" || tr.Sender != "alice" || tr.InstallationID != w.inst {
		t.Errorf("delivery %s, trigger %+v", d.ID, tr)
	}
	w.srv.ResetRequests()
	w.pollOK(p)
	w.assertOnly304()
	// Another event (the label removed) changes the list but adds nothing.
	w.srv.RemoveLabel(pollRepo, w.issue, "alice", "bug")
	w.pollOK(p)
	if n, _ := sink.counts(); n != 1 {
		t.Fatalf("deliveries=%d, want 1", n)
	}
}

func TestPollerSurvivesFaults(t *testing.T) {
	w := newPollWorld(t)
	p, sink := w.poller(&memCursors{}, nil)
	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent one")
	w.pollOK(p)

	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent two")
	w.srv.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Path: "/api/v3/repos/*/*/issues/comments"})
	err := p.PollOnce(context.Background())
	if err == nil {
		t.Fatal("PollOnce after a 5xx: no error")
	}
	if _, limited := rateLimitWait(err, time.Now()); limited {
		t.Errorf("5xx taken for a rate limit: %v", err)
	}
	if d := p.retryDelay(err, 1); d <= 0 {
		t.Errorf("no back-off after a 5xx")
	}
	w.pollOK(p)
	if n, tr := sink.counts(); n != 2 || tr != 2 {
		t.Fatalf("after 5xx: deliveries=%d triggers=%d, want 2/2", n, tr)
	}

	w.clock.Advance(time.Second)
	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent three")
	w.srv.Inject(githubtest.Fault{Kind: githubtest.FaultSecondaryRateLimit, Path: "/api/v3/repos/*/*/issues/comments", RetryAfter: time.Second})
	err = p.PollOnce(context.Background())
	var abuse *gh.AbuseRateLimitError
	if !errors.As(err, &abuse) {
		t.Fatalf("secondary limit: %v", err)
	}
	wait, limited := rateLimitWait(err, time.Now())
	if !limited || wait < time.Second {
		t.Fatalf("rateLimitWait = %v, %v", wait, limited)
	}
	time.Sleep(wait + 100*time.Millisecond) // go-github refuses to send until Retry-After has passed
	w.pollOK(p)

	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent four")
	w.srv.Inject(githubtest.Fault{Kind: githubtest.FaultTooManyRequests, Path: "/api/v3/repos/*/*/issues/comments", RetryAfter: 2 * time.Second})
	err = p.PollOnce(context.Background())
	if wait, limited := rateLimitWait(err, time.Now()); !limited || wait != 2*time.Second {
		t.Fatalf("429: %v, %v (%v)", wait, limited, err)
	}
	w.pollOK(p)
	if n, tr := sink.counts(); n != 4 || tr != 4 {
		t.Fatalf("deliveries=%d triggers=%d, want 4/4", n, tr)
	}
}

func TestPollerRunStopsWithContext(t *testing.T) {
	w := newPollWorld(t)
	p, sink := w.poller(&memCursors{}, nil)
	w.srv.AddComment(pollRepo, w.pr, "alice", "/agent run")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := sink.counts(); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run delivered nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if n, _ := sink.counts(); n != 1 {
		t.Fatalf("deliveries=%d", n)
	}
}

func TestAppInstallationsListsRepos(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	srv.CreateRepo("acme", "widgets", nil)
	srv.CreateRepo("acme", "gadgets", nil)
	srv.CreateRepo("bob", "tools", nil)
	in1 := srv.AddInstallation("acme")
	in2 := srv.AddInstallation("bob", "bob/tools")
	a, err := NewApp(AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.AppPrivateKeyPEM(), APIURL: srv.APIURL(), WebURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppInstallations(a)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"acme/widgets": in1.ID, "acme/gadgets": in1.ID, "bob/tools": in2.ID}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, r := range got {
		if want[r.Repo] != r.InstallationID {
			t.Errorf("got %+v", r)
		}
	}
}

func TestNewPollerValidates(t *testing.T) {
	if _, err := NewPoller(PollerOptions{}); err == nil {
		t.Fatal("empty options accepted")
	}
}
