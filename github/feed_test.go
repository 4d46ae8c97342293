package github

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/github/githubtest"
)

// feedWorld is a fake GitHub where alice stored a personal token, a real
// Service, and a Processor, Tracker and events-feed Poller that act as
// alice where the App is not installed.
type feedWorld struct {
	t       *testing.T
	srv     *githubtest.Server
	svc     *app.Service
	dels    *procDeliveries
	proc    *Processor
	cursors *memCursors
	ctx     context.Context
	token   string
	inst    int64
}

func newFeedWorld(t *testing.T) *feedWorld {
	t.Helper()
	w := &feedWorld{t: t, dels: newProcDeliveries(), cursors: &memCursors{}}
	w.srv = githubtest.New(t, githubtest.Options{})
	w.srv.AddUser("alice")
	w.srv.AddRepo(githubtest.RepoSpec{Owner: "alice", Name: "site", Private: true})
	w.srv.CreateRepo("acme", "widgets", nil)
	w.srv.SetPermission("acme/widgets", "alice", "write")
	w.inst = w.srv.AddInstallation("acme").ID

	users, err := NewUserClients(w.srv.APIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := seal.New(bytes.Repeat([]byte{9}, seal.KeySize))
	sb := apptest.NewFakeSandbox()
	sb.ScriptFor = func(app.Turn) apptest.Script { return procDoneScript("Fixed the typo.") }
	w.svc = app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: sb, Secrets: keys, GitHub: users},
		app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = app.WithActor(ctx, app.OperatorActor)
	w.token = w.srv.AddToken("alice")
	if _, err := w.svc.AddGitHubToken(w.ctx, w.token); err != nil {
		t.Fatal(err)
	}
	asUser := StoredTokenClients(users, w.svc.GitHubToken)
	clients := func(ctx context.Context, id int64) (*gh.Client, error) {
		return gh.NewClient(nil).WithAuthToken(w.srv.InstallationToken(id)).WithEnterpriseURLs(w.srv.APIURL(), w.srv.UploadURL())
	}
	tracker, err := NewTracker(TrackerOptions{Service: w.svc, Clients: clients, UserClient: asUser,
		Installation: func(ctx context.Context, repo string) (int64, error) {
			if strings.EqualFold(repo, "acme/widgets") {
				return w.inst, nil
			}
			return 0, app.Errorf(app.ENOTFOUND, "not installed")
		}, MinInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.proc, err = NewProcessor(ProcessorOptions{Service: w.svc, Deliveries: w.dels, Clients: clients, UserClient: asUser,
		Pending: w.dels.Pending, Trigger: TriggerConfig{AppSlug: w.srv.AppSlug()}, Tracker: tracker, ScanInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, ctx, cancel, w.svc.Run, tracker.Run, w.proc.Run)
	return w
}

// feedPoller polls the stored logins' feeds only: no App installations.
func (w *feedWorld) feedPoller() *Poller {
	w.t.Helper()
	users, _ := NewUserClients(w.srv.APIURL(), nil)
	p, err := NewPoller(PollerOptions{
		Feeds: func(ctx context.Context) ([]string, error) {
			list, err := w.svc.GitHubAccounts(app.WithActor(ctx, app.OperatorActor))
			var logins []string
			for _, a := range list {
				logins = append(logins, a.Login)
			}
			return logins, err
		},
		FeedClient: StoredTokenClients(users, w.svc.GitHubToken),
		Cursors:    w.cursors, Deliveries: w.dels, Sink: w.proc,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *feedWorld) runsOn(repo string, number int) []app.RunView {
	v, ok, err := w.svc.SessionForThread(w.ctx, fmt.Sprintf("github:%s#%d", repo, number))
	if err != nil {
		w.t.Fatal(err)
	}
	if !ok {
		return nil
	}
	return v.Runs
}

func (w *feedWorld) tracking(repo string, number int) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range w.srv.Comments(repo, number) {
		if _, ok := ParseTrackingMarker(c.Body); ok {
			out = append(out, c)
		}
	}
	return out
}

func TestFeedPollerRunsCommentWithoutApp(t *testing.T) {
	w := newFeedWorld(t)
	p := w.feedPoller()
	issue := w.srv.AddIssue("alice/site", githubtest.IssueSpec{Author: "alice", Title: "Typo on the home page"})
	c := w.srv.AddComment("alice/site", issue.Number, "alice", "/agent fix the typo")
	if err := p.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	procWaitFor(t, "the run to finish and its tracking comment to say so", func() bool {
		list := w.tracking("alice/site", issue.Number)
		if len(list) != 1 {
			return false
		}
		m, _ := ParseTrackingMarker(list[0].Body)
		return m.State == app.StateDone
	})
	tr := w.tracking("alice/site", issue.Number)[0]
	if tr.User != "alice" || tr.ViaApp {
		t.Fatalf("tracking comment by %s (via App %v), want alice's token", tr.User, tr.ViaApp)
	}
	if !procHasEyes(w.srv.Reactions(c.ID), "alice") {
		t.Fatalf("no 👀 from alice: %+v", w.srv.Reactions(c.ID))
	}
	runs := w.runsOn("alice/site", issue.Number)
	if len(runs) != 1 || runs[0].Origin.CommentID != c.ID || runs[0].Origin.Login != "alice" {
		t.Fatalf("runs = %+v", runs)
	}

	// The feed now holds alice's own tracking comment and reaction: none
	// of it triggers, and an unchanged feed costs a 304.
	if err := p.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.srv.ResetRequests()
	if err := p.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := w.srv.Requests(githubtest.Match("GET", "/api/v3/users/alice/events"))
	if len(reqs) != 1 || reqs[0].Status != http.StatusNotModified || reqs[0].Auth != githubtest.AuthPersonal {
		t.Fatalf("unchanged feed requests = %v, want one 304 with alice's token", reqs)
	}
	if n := len(w.runsOn("alice/site", issue.Number)); n != 1 {
		t.Fatalf("%d runs after polling again, want 1", n)
	}
	for _, q := range w.srv.Requests(nil) {
		if strings.Contains(q.Path, w.token) || strings.Contains(q.Query.Encode(), w.token) {
			t.Errorf("token in URL %s", q.Path)
		}
	}
	w.dels.mu.Lock()
	for _, d := range w.dels.all {
		if bytes.Contains(d.Payload, []byte(w.token)) {
			t.Error("token in a stored delivery")
		}
	}
	w.dels.mu.Unlock()
}

func TestFeedWebhookAndRepoPollerRunCommentOnce(t *testing.T) {
	w := newFeedWorld(t)
	issue := w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Crash"})
	c := w.srv.AddComment("acme/widgets", issue.Number, "alice", "/agent fix the crash")

	// The webhook delivers it, the feed and the repository poller find it.
	wh := Delivery{ID: "webhook-1", Event: "issue_comment", Payload: w.srv.IssueCommentPayload(c.ID, "created"), ReceivedAt: time.Now()}
	if _, err := w.dels.RecordDelivery(w.ctx, wh.ID, wh.Event, "created", wh.Payload, wh.ReceivedAt); err != nil {
		t.Fatal(err)
	}
	w.proc.Accept(w.ctx, wh)
	if err := w.feedPoller().PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	repoPoller, err := NewPoller(PollerOptions{
		Clients: func(ctx context.Context, id int64) (*gh.Client, error) {
			return gh.NewClient(nil).WithAuthToken(w.srv.InstallationToken(id)).WithEnterpriseURLs(w.srv.APIURL(), w.srv.UploadURL())
		},
		Installations: func(ctx context.Context) ([]InstalledRepo, error) {
			return []InstalledRepo{{Repo: "acme/widgets", InstallationID: w.inst}}, nil
		},
		Cursors: w.cursors, Deliveries: w.dels, Sink: w.proc,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := repoPoller.PollOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	procWaitFor(t, "every delivery processed", func() bool {
		pending, _ := w.dels.Pending(context.Background())
		return len(pending) == 0
	})
	procWaitFor(t, "the run to finish", func() bool {
		runs := w.runsOn("acme/widgets", issue.Number)
		return len(runs) > 0 && runs[0].State == app.StateDone
	})
	if runs := w.runsOn("acme/widgets", issue.Number); len(runs) != 1 {
		t.Fatalf("%d runs for one comment, want 1", len(runs))
	}
	if n := len(w.tracking("acme/widgets", issue.Number)); n != 1 {
		t.Fatalf("%d tracking comments, want 1", n)
	}
	// The repository poller also finds the tracking comment; count the
	// deliveries of the triggering comment only.
	w.dels.mu.Lock()
	var ids []string
	for id := range w.dels.all {
		if id == wh.ID || strings.HasPrefix(id, fmt.Sprintf("poll:comment:%d:", c.ID)) {
			ids = append(ids, id)
		}
	}
	w.dels.mu.Unlock()
	if len(ids) != 2 {
		t.Fatalf("deliveries %v, want 2 (the webhook's, and one shared by the feed and the repository poller)", ids)
	}
}
