package github

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/github/githubtest"
)

// faultWorld is the fault suite's GitHub side (docs/reliability.md): the
// fake GitHub, the App's own clients (as asb serve builds them, with a
// short request timeout), a Service over in-memory fakes, and the
// Processor and Tracker, all running.
type faultWorld struct {
	*procWorld
}

func newFaultWorld(t *testing.T, timeout time.Duration) *faultWorld {
	t.Helper()
	return newFaultWorldVia(t, timeout, nil)
}

// newFaultWorldVia is newFaultWorld with the App's REST calls going
// through a proxy; lose, when it returns true for a request, makes the
// proxy pass the request on and then lose GitHub's answer (a 502 to asb
// for a request GitHub did carry out).
func newFaultWorldVia(t *testing.T, timeout time.Duration, lose func(*http.Request) bool) *faultWorld {
	t.Helper()
	w := &procWorld{t: t, store: apptest.NewMemStore(), sandbox: apptest.NewFakeSandbox(), dels: newProcDeliveries()}
	w.srv = githubtest.New(t, githubtest.Options{})
	w.srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n"})
	w.srv.AddUser("alice")
	w.srv.SetPermission(procRepo, "alice", "write")
	w.inst = w.srv.AddInstallation("acme").ID
	w.srv.Commit(procRepo, "feature", "feature work", map[string]string{"w.go": "package w\n"})
	w.pr = w.srv.AddPull(procRepo, githubtest.PullSpec{Author: "alice", Title: "Add widgets", Head: "feature"}).Number
	w.sandbox.ScriptFor = func(app.Turn) apptest.Script { return procDoneScript("Added the widget test.") }
	w.svc = app.NewService(app.Deps{Store: w.store, Sandbox: w.sandbox}, app.Config{PollInterval: time.Millisecond, MaxActiveRuns: 8})
	apiURL := w.srv.APIURL()
	if lose != nil {
		target, err := url.Parse(w.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ModifyResponse = func(resp *http.Response) error {
			if lose(resp.Request) {
				return errors.New("the answer was lost on the way back")
			}
			return nil
		}
		ps := httptest.NewServer(proxy)
		t.Cleanup(ps.Close)
		apiURL = strings.Replace(apiURL, w.srv.URL, ps.URL, 1)
	}
	ghApp, err := NewApp(AppConfig{AppID: w.srv.AppID(), PrivateKeyPEM: w.srv.AppPrivateKeyPEM(),
		APIURL: apiURL, WebURL: w.srv.URL, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	w.tracker, err = NewTracker(TrackerOptions{Service: w.svc, Clients: ghApp.InstallationClient, MinInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.proc, err = NewProcessor(ProcessorOptions{
		Service: w.svc, Deliveries: w.dels, Clients: ghApp.InstallationClient, Pending: w.dels.Pending,
		// No scan during the test: a failed acknowledgement must be
		// retried on its own, in seconds.
		Trigger: TriggerConfig{AppSlug: w.srv.AppSlug()}, Tracker: w.tracker, ScanInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = app.WithActor(ctx, app.OperatorActor)
	runUntilCleanup(t, ctx, cancel, w.svc.Run, w.tracker.Run, w.proc.Run)
	return &faultWorld{w}
}

// TestFaultGitHubAcknowledge makes GitHub fail the acknowledgement of a
// trigger: the 👀 reaction and the tracking comment answered 5xx, a 403
// primary rate limit, a 429 with Retry-After, a hang past the request
// timeout, or a dropped connection. The delivery is retried until the
// tracking comment is posted: exactly one run, exactly one tracking
// comment that ends as the final report, no installation token in any
// error recorded.
func TestFaultGitHubAcknowledge(t *testing.T) {
	const (
		comments  = "/api/v3/repos/acme/widgets/issues/*/comments"
		reactions = "/api/v3/repos/acme/widgets/issues/comments/*/reactions"
	)
	cases := []struct {
		name  string
		fault githubtest.Fault
	}{
		{"tracking comment 502", githubtest.Fault{Kind: githubtest.FaultServerError, Method: "POST", Path: comments, Times: 2}},
		{"tracking comment 403 rate limit", githubtest.Fault{Kind: githubtest.FaultRateLimit, Method: "POST", Path: comments}},
		{"tracking comment 429", githubtest.Fault{Kind: githubtest.FaultTooManyRequests, Method: "POST", Path: comments, RetryAfter: time.Second}},
		{"tracking comment hangs", githubtest.Fault{Kind: githubtest.FaultHang, Method: "POST", Path: comments}},
		{"tracking comment dropped", githubtest.Fault{Kind: githubtest.FaultDrop, Method: "POST", Path: comments}},
		{"reaction 500", githubtest.Fault{Kind: githubtest.FaultServerError, Status: 500, Method: "POST", Path: reactions, Times: 3}},
		{"reaction hangs", githubtest.Fault{Kind: githubtest.FaultHang, Method: "POST", Path: reactions}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newFaultWorld(t, 300*time.Millisecond)
			if tc.fault.Kind == githubtest.FaultRateLimit {
				tc.fault.Reset = time.Now().Add(time.Second) // go-github holds calls until then
			}
			w.srv.Inject(tc.fault)
			_, d := w.comment(w.pr, "alice", "/agent add a test")
			if errText := w.waitProcessed(d); errText != "" {
				t.Fatalf("delivery processed with an error: %s", errText)
			}
			if len(w.srv.Requests(func(q githubtest.Request) bool { return q.Fault == tc.fault.Kind })) == 0 {
				t.Fatal("the fault never hit: nothing was tested")
			}
			final := w.waitTracking(w.pr, app.StateDone)
			if !strings.Contains(final.Body, "Added the widget test.") {
				t.Fatalf("final report:\n%s", final.Body)
			}
			v, ok := w.thread(w.pr)
			if !ok || len(v.Runs) != 1 {
				t.Fatalf("runs on the pull request: %+v", v.Runs)
			}
			if n := len(w.botComments(w.pr)); n != 1 {
				t.Fatalf("the App made %d comments, want 1", n)
			}
			w.dels.mu.Lock()
			defer w.dels.mu.Unlock()
			for _, tok := range w.srv.IssuedTokens() {
				for _, e := range w.dels.processed {
					if strings.Contains(e, tok) {
						t.Fatal("an installation token is in a recorded error")
					}
				}
			}
		})
	}
}

// TestFaultGitHubTimeoutClassified checks that a call GitHub never
// answers ends at the App's request timeout as a retryable "timed out".
func TestFaultGitHubTimeoutClassified(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n"})
	inst := srv.AddInstallation("acme").ID
	ghApp, err := NewApp(AppConfig{AppID: srv.AppID(), PrivateKeyPEM: srv.AppPrivateKeyPEM(),
		APIURL: srv.APIURL(), WebURL: srv.URL, RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ghApp.InstallationClient(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultHang, Path: "/api/v3/repos/acme/widgets", Times: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = c.Repositories.Get(ctx, "acme", "widgets")
	if ctx.Err() != nil {
		t.Fatal("the call was not bounded by the request timeout")
	}
	err = APIError(err, "read acme/widgets")
	if app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(app.ErrorMessage(err), "timed out") {
		t.Fatalf("a hung call: %v (%s)", err, app.ErrorCode(err))
	}
}

// TestFaultTrackingCommentTellsRetries: while a run retries a failing step
// (or was picked up after a restart) its tracking comment says so, and
// stops saying it once the run moves on.
func TestFaultTrackingCommentTellsRetries(t *testing.T) {
	const text = "could not push to acme/widgets: GitHub is unavailable (HTTP 502); retrying (next try in 4s)"
	notice := app.Event{ID: 2, SessionID: "ses_m4x9ab", RunID: "run_7f3kq2", Type: app.EventRunNotice, Data: json.RawMessage(`{"state":"running","text":"` + text + ` @octocat"}`), At: t0}
	moved := app.Event{ID: 3, SessionID: "ses_m4x9ab", RunID: "run_7f3kq2", Type: app.EventRunState, Data: json.RawMessage(`{"from":"running","to":"done"}`), At: t0}

	running := scenario(app.StateRunning, nil)
	running.Digest = Digest(append(agentEvents(`{"type":"system","subtype":"init","session_id":"s"}`), notice))
	body := RenderTracking(running)
	if !strings.Contains(body, "⚠️ "+text) {
		t.Fatalf("the running run's comment does not tell the retry:\n%s", body)
	}
	if strings.Contains(body, " @octocat") {
		t.Fatalf("a notice pinged someone:\n%s", body)
	}
	done := scenario(app.StateDone, nil)
	done.Digest = Digest([]app.Event{notice, moved})
	if body := RenderTracking(done); strings.Contains(body, "retrying") {
		t.Fatalf("a stale notice outlived the run:\n%s", body)
	}
}

// TestFaultGitHubLostAnswerNoDuplicate: GitHub creates the tracking
// comment but its answer is lost (asb sees a 502). The retried delivery
// finds the comment it already made instead of posting a second one.
func TestFaultGitHubLostAnswerNoDuplicate(t *testing.T) {
	var mu sync.Mutex
	lost := 0
	w := newFaultWorldVia(t, 5*time.Second, func(r *http.Request) bool {
		ok, _ := path.Match("/api/v3/repos/acme/widgets/issues/*/comments", r.URL.Path)
		if r.Method != "POST" || !ok {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		lost++
		return lost == 1
	})
	_, d := w.comment(w.pr, "alice", "/agent add a test")
	if errText := w.waitProcessed(d); errText != "" {
		t.Fatalf("delivery processed with an error: %s", errText)
	}
	final := w.waitTracking(w.pr, app.StateDone)
	if !strings.Contains(final.Body, "Added the widget test.") {
		t.Fatalf("final report:\n%s", final.Body)
	}
	mu.Lock()
	n := lost
	mu.Unlock()
	if n == 0 {
		t.Fatal("no answer was lost: nothing was tested")
	}
	if cs := w.botComments(w.pr); len(cs) != 1 {
		t.Fatalf("the App made %d comments, want 1", len(cs))
	}
	if v, _ := w.thread(w.pr); len(v.Runs) != 1 || v.Runs[0].Origin.TrackingCommentID == 0 {
		t.Fatalf("runs: %+v", v.Runs)
	}
}
