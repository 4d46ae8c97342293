package github

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/github/githubtest"
)

const benchSecret = "bench-webhook-secret"

// benchWorld is the GitHub surface on loopback: the webhook receiver, the
// processor and the tracker over a real Service with an in-memory sandbox,
// talking to the fake GitHub.
type benchWorld struct {
	srv     *githubtest.Server
	hook    *httptest.Server
	clients ClientsFunc
	inst    int64
	pr      int
}

func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	srv := githubtest.New(b, githubtest.Options{RateLimit: 1 << 30})
	srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n"})
	srv.AddUser("alice")
	srv.SetPermission("acme/widgets", "alice", "write")
	inst := srv.AddInstallation("acme").ID
	srv.Commit("acme/widgets", "feature", "work", map[string]string{"w.go": "package w\n"})
	pr := srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "alice", Title: "Widgets", Head: "feature"}).Number
	clients := func(ctx context.Context, id int64) (*gh.Client, error) {
		return gh.NewClient(nil).WithAuthToken(srv.InstallationToken(id)).WithEnterpriseURLs(srv.APIURL(), srv.UploadURL())
	}
	sb := apptest.NewFakeSandbox()
	sb.ScriptFor = func(app.Turn) apptest.Script {
		return apptest.Script{Records: []string{`{"type":"assistant"}`}, Hold: make(chan struct{})}
	}
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: sb}, app.Config{PollInterval: time.Millisecond, MaxActiveRuns: 1000})
	tracker, err := NewTracker(TrackerOptions{Service: svc, Clients: clients})
	if err != nil {
		b.Fatal(err)
	}
	dels := newProcDeliveries()
	proc, err := NewProcessor(ProcessorOptions{Service: svc, Deliveries: dels, Clients: clients, Pending: dels.Pending,
		Trigger: TriggerConfig{AppSlug: srv.AppSlug()}, Tracker: tracker})
	if err != nil {
		b.Fatal(err)
	}
	hook, err := NewWebhook(WebhookConfig{Secret: []byte(benchSecret), Deliveries: dels, Sink: proc})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{svc.Run, tracker.Run, proc.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	hs := httptest.NewServer(hook)
	b.Cleanup(func() { hs.Close(); cancel(); wg.Wait() })
	return &benchWorld{srv: srv, hook: hs, clients: clients, inst: inst, pr: pr}
}

func (w *benchWorld) trackingComments(n int) int {
	c := 0
	for _, cm := range w.srv.Comments("acme/widgets", n) {
		if strings.HasSuffix(cm.User, "[bot]") {
			c++
		}
	}
	return c
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkWebhookAcknowledgement measures, per `/agent` comment, the time
// from the signed webhook arriving to the 👀 reaction and to the tracking
// comment existing on the fake GitHub. The baseline is one bare reaction
// call to the same fake (what any acknowledgement must cost at least),
// reported as baseline-eyes-median-ms for asb-bench to pair.
func BenchmarkWebhookAcknowledgement(b *testing.B) {
	w := newBenchWorld(b)
	ctx := context.Background()
	var toEyes, toTracking, bare []time.Duration
	for i := 0; i < b.N; i++ {
		issue := w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: fmt.Sprintf("task %d", i)})
		c := w.srv.AddComment("acme/widgets", issue.Number, "alice", fmt.Sprintf("/agent do task %d", i))
		payload := w.srv.IssueCommentPayload(c.ID, "created")
		start := time.Now()
		resp, err := w.srv.Deliver(ctx, w.hook.URL, benchSecret, "issue_comment", payload)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		var eyes, tracked time.Duration
		for eyes == 0 || tracked == 0 {
			if eyes == 0 && len(w.srv.Reactions(c.ID)) > 0 {
				eyes = time.Since(start)
			}
			if tracked == 0 && w.trackingComments(issue.Number) > 0 {
				tracked = time.Since(start)
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("no acknowledgement for comment %d", c.ID)
			}
			time.Sleep(100 * time.Microsecond)
		}
		toEyes, toTracking = append(toEyes, eyes), append(toTracking, tracked)

		client, _ := w.clients(ctx, w.inst)
		t0 := time.Now()
		if _, _, err := client.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", c.ID, "+1"); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	base := percentile(bare, 50)
	b.ReportMetric(float64(percentile(toEyes, 50).Microseconds())/1000, "eyes-median-ms")
	b.ReportMetric(float64(percentile(toEyes, 95).Microseconds())/1000, "eyes-p95-ms")
	b.ReportMetric(float64(percentile(toTracking, 50).Microseconds())/1000, "tracking-median-ms")
	b.ReportMetric(float64(percentile(toTracking, 95).Microseconds())/1000, "tracking-p95-ms")
	b.ReportMetric(float64(base.Microseconds())/1000, "baseline-eyes-median-ms")
	b.ReportMetric(float64(percentile(toEyes, 50))/float64(base), "x-bare-reaction")
	b.Logf("webhook → 👀 median %v p95 %v; → tracking comment median %v p95 %v; bare reaction call %v (👀 ratio %.1fx) over %d comments",
		percentile(toEyes, 50), percentile(toEyes, 95), percentile(toTracking, 50), percentile(toTracking, 95), base,
		float64(percentile(toEyes, 50))/float64(base), b.N)
}

// BenchmarkWebhookThroughput measures signed deliveries per second that
// the receiver verifies, records and hands on (plain comments, which the
// processor classifies and drops), from 8 concurrent senders. The baseline
// is the same traffic to a handler that only reads the body
// (baseline-webhooks/s).
func BenchmarkWebhookThroughput(b *testing.B) {
	w := newBenchWorld(b)
	noop := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer noop.Close()
	c := w.srv.AddComment("acme/widgets", w.pr, "alice", "thanks, looks good")
	payload := w.srv.IssueCommentPayload(c.ID, "created")
	sig := Sign([]byte(benchSecret), payload)
	n := max(b.N, 200)
	var seq atomic.Int64
	send := func(url string) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := seq.Add(1)
					if i > int64(n) {
						return
					}
					req, _ := http.NewRequest("POST", url, bytes.NewReader(payload))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-GitHub-Event", "issue_comment")
					req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%s-%d", url[len(url)-5:], i))
					req.Header.Set("X-Hub-Signature-256", sig)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode >= 300 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	got := send(w.hook.URL)
	b.StopTimer()
	seq.Store(0)
	base := send(noop.URL)
	b.ReportMetric(got, "webhooks/s")
	b.ReportMetric(base, "baseline-webhooks/s") // no-op handler requests/s
	b.ReportMetric(got/base, "x-noop")
	b.Logf("signed webhooks: %.0f/s; bare loopback POSTs to a no-op handler: %.0f/s (ratio %.2f) over %d deliveries", got, base, got/base, n)
}
