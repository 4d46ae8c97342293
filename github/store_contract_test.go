package github_test

// This external test pins DeliveryStore to the real store. The github
// package itself never imports app/sqlite (the dependency rule); only
// this test does, so a drift in either signature fails the build here
// rather than in cmd/asb's wiring.

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/github"
)

var _ github.DeliveryStore = (*sqlite.Store)(nil)

func TestWebhookOnSQLiteSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "asb.sqlite")
	secret := []byte("s3cret")
	body, err := os.ReadFile(filepath.Join("testdata", "webhooks", "issue_comment.created.pull_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	post := func(h http.Handler) int {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-GitHub-Event", "issue_comment")
		r.Header.Set("X-GitHub-Delivery", "0b9a7c1e-1111-2222-3333-444455556666")
		r.Header.Set("X-Hub-Signature-256", github.Sign(secret, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	var accepted atomic.Int32
	sink := github.SinkFunc(func(context.Context, github.Delivery) { accepted.Add(1) })

	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := github.NewWebhook(github.WebhookConfig{Secret: secret, Deliveries: store, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{202, 200, 200, 200, 200} {
		if got := post(h); got != want {
			t.Fatalf("delivery %d: %d, want %d", i, got, want)
		}
	}
	if accepted.Load() != 1 {
		t.Fatalf("sink called %d times", accepted.Load())
	}
	// The sink "lost" it (the process died before processing): the stored
	// delivery is still pending and classifies to the same trigger.
	pending, err := store.PendingDeliveries(ctx, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %d, %v", len(pending), err)
	}
	tr, ok, err := github.Classify(pending[0].Event, pending[0].Payload, github.TriggerConfig{})
	if err != nil || !ok || tr.Command.Kind != github.CommandAsk || !tr.PullRequest {
		t.Fatalf("replayed delivery: ok=%v err=%v %+v", ok, err, tr)
	}
	if err := store.MarkDeliveryProcessed(ctx, pending[0].ID, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	store.Close()

	// After a restart, GitHub's manual redelivery is still a duplicate.
	store, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err = github.NewWebhook(github.WebhookConfig{Secret: secret, Deliveries: store, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if got := post(h); got != http.StatusOK {
		t.Fatalf("redelivery after restart: %d", got)
	}
	if accepted.Load() != 1 {
		t.Fatal("redelivery reached the sink")
	}
	if pending, _ := store.PendingDeliveries(ctx, 10); len(pending) != 0 {
		t.Fatalf("pending after processing: %d", len(pending))
	}
}
