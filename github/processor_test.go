package github

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/github/githubtest"
)

// procDeliveries is an in-memory DeliveryStore that can list pending ones.
type procDeliveries struct {
	mu        sync.Mutex
	all       map[string]Delivery
	order     []string
	processed map[string]string
}

func newProcDeliveries() *procDeliveries {
	return &procDeliveries{all: map[string]Delivery{}, processed: map[string]string{}}
}

func (m *procDeliveries) RecordDelivery(ctx context.Context, id, event, action string, payload []byte, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.all[id]; ok {
		return false, nil
	}
	m.all[id] = Delivery{ID: id, Event: event, Action: action, Payload: payload, ReceivedAt: at}
	m.order = append(m.order, id)
	return true, nil
}

func (m *procDeliveries) MarkDeliveryProcessed(ctx context.Context, id string, at time.Time, errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.processed[id] = errText
	return nil
}

func (m *procDeliveries) Pending(ctx context.Context) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Delivery
	for _, id := range m.order {
		if _, ok := m.processed[id]; !ok {
			out = append(out, m.all[id])
		}
	}
	return out, nil
}

func (m *procDeliveries) isProcessed(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.processed[id]
	return e, ok
}

const procRepo = "acme/widgets"

// procWorld is a fake GitHub, a real Service over in-memory fakes, and a
// Processor and Tracker wired between them, all running.
type procWorld struct {
	t       *testing.T
	srv     *githubtest.Server
	svc     *app.Service
	store   *apptest.MemStore
	sandbox *apptest.FakeSandbox
	dels    *procDeliveries
	proc    *Processor
	tracker *Tracker
	ctx     context.Context
	pr      int
	issue   int
	inst    int64
	nextID  int
}

func newProcWorld(t *testing.T, script func(app.Turn) apptest.Script, deps ...func(*app.Deps)) *procWorld {
	t.Helper()
	w := &procWorld{t: t, store: apptest.NewMemStore(), sandbox: apptest.NewFakeSandbox(), dels: newProcDeliveries()}
	w.srv = githubtest.New(t, githubtest.Options{})
	w.srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n"})
	w.srv.AddUser("alice")
	w.srv.AddUser("mallory")
	w.srv.SetPermission(procRepo, "alice", "write")
	w.inst = w.srv.AddInstallation("acme").ID
	w.srv.Commit(procRepo, "feature", "feature work", map[string]string{"w.go": "package w\n"})
	w.pr = w.srv.AddPull(procRepo, githubtest.PullSpec{Author: "alice", Title: "Add widgets", Head: "feature"}).Number
	w.issue = w.srv.AddIssue(procRepo, githubtest.IssueSpec{Author: "alice", Title: "Widgets crash on empty input", Body: "Steps: call Make(\"\")."}).Number

	w.sandbox.ScriptFor = script
	d := app.Deps{Store: w.store, Sandbox: w.sandbox}
	for _, f := range deps {
		f(&d)
	}
	w.svc = app.NewService(d, app.Config{PollInterval: time.Millisecond, MaxActiveRuns: 8})
	clients := func(ctx context.Context, id int64) (*gh.Client, error) {
		return gh.NewClient(nil).WithAuthToken(w.srv.InstallationToken(id)).WithEnterpriseURLs(w.srv.APIURL(), w.srv.UploadURL())
	}
	var err error
	w.tracker, err = NewTracker(TrackerOptions{Service: w.svc, Clients: clients, MinInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.proc, err = NewProcessor(ProcessorOptions{
		Service: w.svc, Deliveries: w.dels, Clients: clients, Pending: w.dels.Pending,
		Trigger: TriggerConfig{AppSlug: w.srv.AppSlug()}, Tracker: w.tracker,
		ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = app.WithActor(ctx, app.OperatorActor)
	runUntilCleanup(t, ctx, cancel, w.svc.Run, w.tracker.Run, w.proc.Run)
	return w
}

// deliver records a delivery as the webhook would and hands it to Accept.
func (w *procWorld) deliver(event string, payload []byte) Delivery {
	w.nextID++
	d := Delivery{ID: fmt.Sprintf("delivery-%d", w.nextID), Event: event, Payload: payload, ReceivedAt: time.Now()}
	if _, err := w.dels.RecordDelivery(w.ctx, d.ID, d.Event, "", d.Payload, d.ReceivedAt); err != nil {
		w.t.Fatal(err)
	}
	w.proc.Accept(w.ctx, d)
	return d
}

func (w *procWorld) comment(number int, login, body string) (githubtest.Comment, Delivery) {
	c := w.srv.AddComment(procRepo, number, login, body)
	return c, w.deliver("issue_comment", w.srv.IssueCommentPayload(c.ID, "created"))
}

func (w *procWorld) waitProcessed(d Delivery) string {
	w.t.Helper()
	var errText string
	procWaitFor(w.t, "delivery "+d.ID+" processed", func() bool {
		var ok bool
		errText, ok = w.dels.isProcessed(d.ID)
		return ok
	})
	return errText
}

// botComments are the comments the App made on a thread.
func (w *procWorld) botComments(number int) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range w.srv.Comments(procRepo, number) {
		if c.ViaApp {
			out = append(out, c)
		}
	}
	return out
}

func (w *procWorld) trackingComments(number int) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range w.botComments(number) {
		if _, ok := ParseTrackingMarker(c.Body); ok {
			out = append(out, c)
		}
	}
	return out
}

// waitTracking waits for the thread's only tracking comment to show state.
func (w *procWorld) waitTracking(number int, state app.RunState) githubtest.Comment {
	w.t.Helper()
	var last githubtest.Comment
	procWaitFor(w.t, "tracking comment to show "+string(state), func() bool {
		list := w.trackingComments(number)
		if len(list) != 1 {
			return false
		}
		last = list[0]
		m, _ := ParseTrackingMarker(last.Body)
		return m.State == state
	})
	return last
}

func (w *procWorld) thread(number int) (app.SessionView, bool) {
	w.t.Helper()
	v, ok, err := w.svc.SessionForThread(w.ctx, fmt.Sprintf("github:%s#%d", procRepo, number))
	if err != nil {
		w.t.Fatal(err)
	}
	return v, ok
}

func procWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func procHasEyes(list []githubtest.Reaction, bot string) bool {
	for _, r := range list {
		if r.Content == "eyes" && r.User == bot {
			return true
		}
	}
	return false
}

func procDoneScript(summary string) apptest.Script {
	return apptest.Script{
		Records: []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"working on it"}]}}`,
			fmt.Sprintf(`{"type":"result","subtype":"success","result":%q,"num_turns":1}`, summary),
		},
		Result: &app.AgentResult{Summary: summary, Usage: app.Usage{InputTokens: 10, OutputTokens: 5, Turns: 1}},
	}
}

func TestProcessorWriterAskRunsToFinalReport(t *testing.T) {
	hold := make(chan struct{})
	w := newProcWorld(t, func(turn app.Turn) apptest.Script {
		s := procDoneScript("Added TestMake covering the empty input.")
		s.Hold = hold
		return s
	})
	c, d := w.comment(w.pr, "alice", "/agent add a test")
	w.waitProcessed(d)

	// Acknowledged before the run could finish (it is held).
	if !procHasEyes(w.srv.Reactions(c.ID), w.srv.BotLogin()) {
		t.Fatalf("no 👀 reaction on the trigger: %+v", w.srv.Reactions(c.ID))
	}
	tracking := w.trackingComments(w.pr)
	if len(tracking) != 1 {
		t.Fatalf("want one tracking comment, got %d", len(tracking))
	}
	v, ok := w.thread(w.pr)
	if !ok || len(v.Runs) != 1 {
		t.Fatalf("want one run on the PR, got %+v", v)
	}
	run := v.Runs[0]
	if run.Origin.TrackingCommentID != tracking[0].ID || run.Origin.DeliveryID != d.ID || run.Origin.Login != "alice" {
		t.Fatalf("origin %+v", run.Origin)
	}
	for _, want := range []string{"add a test", procRepo + "#", "Add widgets"} {
		if !strings.Contains(run.Prompt, want) {
			t.Errorf("task %q lacks %q", run.Prompt, want)
		}
	}

	close(hold)
	final := w.waitTracking(w.pr, app.StateDone)
	if !strings.Contains(final.Body, "Added TestMake covering the empty input.") {
		t.Fatalf("final report lacks the summary:\n%s", final.Body)
	}
	if n := len(w.botComments(w.pr)); n != 1 {
		t.Fatalf("the App made %d comments, want 1", n)
	}
}

func TestProcessorQuestionAnsweredByWriterNotByOthers(t *testing.T) {
	w := newProcWorld(t, func(turn app.Turn) apptest.Script {
		if turn.Turn == 1 {
			return apptest.Script{Question: "Which test framework should I use?"}
		}
		if !strings.Contains(turn.Prompt, "use testify") {
			return apptest.Script{ExitCode: 1}
		}
		return procDoneScript("Used testify.")
	})
	_, d := w.comment(w.pr, "alice", "/agent add a test")
	w.waitProcessed(d)
	waiting := w.waitTracking(w.pr, app.StateWaiting)
	if !strings.Contains(waiting.Body, "Which test framework should I use?") {
		t.Fatalf("tracking comment lacks the question:\n%s", waiting.Body)
	}

	// A non-writer's answer starts nothing and gets one polite reply.
	mc, md := w.comment(w.pr, "mallory", "/agent use testify")
	w.waitProcessed(md)
	if got := w.botComments(w.pr); len(got) != 2 || !strings.Contains(got[1].Body, "write access") {
		t.Fatalf("want tracking comment plus one polite reply, got %+v", got)
	}
	if procHasEyes(w.srv.Reactions(mc.ID), w.srv.BotLogin()) {
		t.Fatal("a refused comment got 👀")
	}
	if v, _ := w.thread(w.pr); v.Current.State != app.StateWaiting || len(v.Runs) != 1 {
		t.Fatalf("a non-writer changed the run: %+v", v.Current)
	}

	ac, ad := w.comment(w.pr, "alice", "/agent use testify")
	w.waitProcessed(ad)
	final := w.waitTracking(w.pr, app.StateDone)
	if !strings.Contains(final.Body, "Used testify.") {
		t.Fatalf("final report:\n%s", final.Body)
	}
	if !procHasEyes(w.srv.Reactions(ac.ID), w.srv.BotLogin()) {
		t.Fatal("the answer got no 👀")
	}
	v, _ := w.thread(w.pr)
	if len(v.Runs) != 1 {
		t.Fatalf("the answer started another run: %d runs", len(v.Runs))
	}
	if n := len(w.botComments(w.pr)); n != 2 {
		t.Fatalf("the App made %d comments, want 2", n)
	}

	// The answering comment seen again — reprocessed after a crash before
	// it was marked, and arriving through the poller in a new delivery —
	// neither answers twice nor becomes a follow-up.
	p2, err := NewProcessor(ProcessorOptions{Service: w.svc, Deliveries: w.dels, API: w.proc.api, Trigger: w.proc.opts.Trigger})
	if err != nil {
		t.Fatal(err)
	}
	p2.process(w.ctx, ad)
	again := w.deliver("issue_comment", w.srv.IssueCommentPayload(ac.ID, "created"))
	w.waitProcessed(again)
	if v, _ := w.thread(w.pr); len(v.Runs) != 1 {
		t.Fatalf("the answer seen again made %d runs", len(v.Runs))
	}
}

func TestProcessorSameDeliveryOnce(t *testing.T) {
	w := newProcWorld(t, func(turn app.Turn) apptest.Script { return procDoneScript("ok") })
	c := w.srv.AddComment(procRepo, w.pr, "alice", "/agent add a test")
	d := w.deliver("issue_comment", w.srv.IssueCommentPayload(c.ID, "created"))
	w.proc.Accept(w.ctx, d)
	w.waitProcessed(d)
	w.waitTracking(w.pr, app.StateDone)

	// A restarted controller that processes it again (crash before it was
	// marked) starts nothing new.
	p2, err := NewProcessor(ProcessorOptions{Service: w.svc, Deliveries: w.dels, API: w.proc.api, Trigger: w.proc.opts.Trigger})
	if err != nil {
		t.Fatal(err)
	}
	p2.process(w.ctx, d)
	// And so does the same comment in another delivery (the poller).
	d2 := w.deliver("issue_comment", w.srv.IssueCommentPayload(c.ID, "created"))
	w.waitProcessed(d2)

	v, _ := w.thread(w.pr)
	if len(v.Runs) != 1 {
		t.Fatalf("want one run, got %d", len(v.Runs))
	}
	if n := len(w.trackingComments(w.pr)); n != 1 {
		t.Fatalf("want one tracking comment, got %d", n)
	}
}

func TestProcessorHelpAndOwnComments(t *testing.T) {
	w := newProcWorld(t, nil)
	hc, hd := w.comment(w.pr, "alice", "/agent help")
	w.waitProcessed(hd)
	got := w.botComments(w.pr)
	if len(got) != 1 || !strings.Contains(got[0].Body, "asb commands") {
		t.Fatalf("help reply: %+v", got)
	}
	if !procHasEyes(w.srv.Reactions(hc.ID), w.srv.BotLogin()) {
		t.Fatal("help got no 👀")
	}

	// The App's own comment (made with its installation token) is nothing.
	cl := gh.NewClient(nil).WithAuthToken(w.srv.InstallationToken(w.inst))
	cl, err := cl.WithEnterpriseURLs(w.srv.APIURL(), w.srv.UploadURL())
	if err != nil {
		t.Fatal(err)
	}
	own, _, err := cl.Issues.CreateComment(w.ctx, "acme", "widgets", w.pr, &gh.IssueComment{Body: gh.String("/agent add a test")})
	if err != nil {
		t.Fatal(err)
	}
	od := w.deliver("issue_comment", w.srv.IssueCommentPayload(own.GetID(), "created"))
	if e := w.waitProcessed(od); e != "" {
		t.Fatalf("own comment failed: %s", e)
	}
	if n := len(w.botComments(w.pr)); n != 2 { // help reply + the App's own comment
		t.Fatalf("the App answered itself: %d comments", n)
	}
	if len(w.srv.Reactions(own.GetID())) != 0 {
		t.Fatal("the App reacted to itself")
	}
	if _, ok := w.thread(w.pr); ok {
		t.Fatal("the App's own comment started a session")
	}
	// And a comment without a command is ignored, too.
	_, nd := w.comment(w.pr, "alice", "looks good to me")
	w.waitProcessed(nd)
	if n := len(w.botComments(w.pr)); n != 2 {
		t.Fatalf("a plain comment got a reply: %d comments", n)
	}
}

func TestProcessorLabelTrigger(t *testing.T) {
	w := newProcWorld(t, func(turn app.Turn) apptest.Script { return procDoneScript("Fixed the empty input crash.") })
	w.srv.AddLabels(procRepo, w.issue, "alice", "agent")
	d := w.deliver("issues", w.srv.IssuesPayload(procRepo, w.issue, "labeled", "agent", "alice"))
	w.waitProcessed(d)
	if !procHasEyes(w.srv.IssueReactions(procRepo, w.issue), w.srv.BotLogin()) {
		t.Fatal("no 👀 on the issue")
	}
	final := w.waitTracking(w.issue, app.StateDone)
	if !strings.Contains(final.Body, "Fixed the empty input crash.") {
		t.Fatalf("final report:\n%s", final.Body)
	}
	v, ok := w.thread(w.issue)
	if !ok || len(v.Runs) != 1 {
		t.Fatalf("want one run, got %+v", v)
	}
	if r := v.Runs[0]; r.Origin.Kind != app.OriginGitHubLabel || !strings.Contains(r.Prompt, "Widgets crash on empty input") {
		t.Fatalf("run %+v", r.Run)
	}
}

func TestProcessorStatusAndCancel(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	w := newProcWorld(t, func(turn app.Turn) apptest.Script {
		s := procDoneScript("never")
		s.Hold = hold
		return s
	})
	_, sd := w.comment(w.pr, "alice", "/agent status")
	w.waitProcessed(sd)
	if got := w.botComments(w.pr); len(got) != 1 || !strings.Contains(got[0].Body, "No agent session") {
		t.Fatalf("status reply: %+v", got)
	}
	_, d := w.comment(w.pr, "alice", "/agent add a test")
	w.waitProcessed(d)
	w.waitTracking(w.pr, app.StateRunning)
	_, cd := w.comment(w.pr, "alice", "/agent cancel")
	w.waitProcessed(cd)
	w.waitTracking(w.pr, app.StateCancelled)
}

func TestProcessorQueueOverflowLeftPending(t *testing.T) {
	w := newProcWorld(t, nil)
	// A processor that is not running, with room for one delivery.
	p, err := NewProcessor(ProcessorOptions{Service: w.svc, Deliveries: w.dels, API: w.proc.api, QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Accept(w.ctx, Delivery{ID: "a"})
	p.Accept(w.ctx, Delivery{ID: "b"}) // dropped, must not block
	if len(p.queue) != 1 {
		t.Fatalf("queue holds %d", len(p.queue))
	}
}

// runUntilCleanup runs each loop with ctx until the test ends (cancel
// then stops them and the cleanup waits); a loop's error fails the test.
func runUntilCleanup(t *testing.T, ctx context.Context, cancel context.CancelFunc, runs ...func(context.Context) error) {
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}
