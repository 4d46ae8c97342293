package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("It's a Secret to Everybody")

// memDeliveries is an in-memory DeliveryStore with the same contract as
// app/sqlite.Store: one row per id, the first write wins.
type memDeliveries struct {
	mu        sync.Mutex
	rows      map[string]Delivery
	processed map[string]string
	fail      error
}

func newMemDeliveries() *memDeliveries {
	return &memDeliveries{rows: map[string]Delivery{}, processed: map[string]string{}}
}

func (m *memDeliveries) RecordDelivery(_ context.Context, id, event, action string, payload []byte, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, m.fail
	}
	if _, ok := m.rows[id]; ok {
		return false, nil
	}
	m.rows[id] = Delivery{ID: id, Event: event, Action: action, Payload: bytes.Clone(payload), ReceivedAt: at}
	return true, nil
}

func (m *memDeliveries) MarkDeliveryProcessed(_ context.Context, id string, _ time.Time, errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.processed[id] = errText
	return nil
}

func (m *memDeliveries) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rows)
}

// recordingSink counts Accept calls.
type recordingSink struct {
	mu   sync.Mutex
	got  []Delivery
	ctxs []context.Context
}

func (s *recordingSink) Accept(ctx context.Context, d Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
	s.ctxs = append(s.ctxs, ctx)
}

func (s *recordingSink) calls() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.got...)
}

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestWebhook(t *testing.T) (*Webhook, *memDeliveries, *recordingSink) {
	t.Helper()
	store, sink := newMemDeliveries(), &recordingSink{}
	h, err := NewWebhook(WebhookConfig{
		Secret: testSecret, Deliveries: store, Sink: sink,
		Now: func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, store, sink
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate decodes a fixture, lets fn change it, and encodes it again.
func mutate(t testing.TB, name string, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

func signedRequest(event, id string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", id)
	r.Header.Set("X-Hub-Signature-256", Sign(testSecret, body))
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestNewWebhookRefusesEmptySecret(t *testing.T) {
	for _, secret := range [][]byte{nil, {}} {
		if _, err := NewWebhook(WebhookConfig{Secret: secret, Deliveries: newMemDeliveries(), Sink: &recordingSink{}}); err == nil {
			t.Fatalf("secret %q accepted", secret)
		}
	}
	if _, err := NewWebhook(WebhookConfig{Secret: testSecret, Sink: &recordingSink{}}); err == nil {
		t.Fatal("no store accepted")
	}
	if _, err := NewWebhook(WebhookConfig{Secret: testSecret, Deliveries: newMemDeliveries()}); err == nil {
		t.Fatal("no sink accepted")
	}
}

func TestWebhookAcceptsSignedDelivery(t *testing.T) {
	h, store, sink := newTestWebhook(t)
	body := fixture(t, "issue_comment.created.pull_request.json")
	ctx, cancel := context.WithCancel(context.Background())
	w := serve(h, signedRequest("issue_comment", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body).WithContext(ctx))
	cancel()
	if w.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if store.count() != 1 {
		t.Fatalf("stored %d", store.count())
	}
	got := sink.calls()
	if len(got) != 1 {
		t.Fatalf("sink called %d times", len(got))
	}
	d := got[0]
	if d.ID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || d.Event != "issue_comment" || d.Action != "created" ||
		!bytes.Equal(d.Payload, body) || !d.ReceivedAt.Equal(fixedNow) {
		t.Fatalf("delivery %+v", d)
	}
	if sink.ctxs[0].Err() != nil {
		t.Fatal("the sink's context ends with the request")
	}
	stored := store.rows[d.ID]
	if !bytes.Equal(stored.Payload, body) || stored.Action != "created" {
		t.Fatalf("stored %+v", stored)
	}
}

func TestWebhookDeduplicatesRedeliveries(t *testing.T) {
	h, store, sink := newTestWebhook(t)
	body := fixture(t, "issue_comment.created.pull_request.json")
	codes := []int{}
	for range 5 {
		codes = append(codes, serve(h, signedRequest("issue_comment", "dup-1", body)).Code)
	}
	want := []int{202, 200, 200, 200, 200}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if n := len(sink.calls()); n != 1 {
		t.Fatalf("sink called %d times", n)
	}
	if store.count() != 1 {
		t.Fatalf("stored %d", store.count())
	}
}

func TestWebhookConcurrentRedeliveries(t *testing.T) {
	h, _, sink := newTestWebhook(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := fixture(t, "issues.labeled.agent.json")
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-GitHub-Event", "issues")
			r.Header.Set("X-GitHub-Delivery", "same")
			r.Header.Set("X-Hub-Signature-256", Sign(testSecret, body))
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if accepted != 1 || len(sink.calls()) != 1 {
		t.Fatalf("accepted %d, sink calls %d", accepted, len(sink.calls()))
	}
}

func TestWebhookRefusals(t *testing.T) {
	body := fixture(t, "issue_comment.created.json")
	big := append([]byte(`{"action":"created","pad":"`), bytes.Repeat([]byte("a"), 2<<20)...)
	big = append(big, `"}`...)
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
	}{
		{"GET", func() *http.Request {
			return httptest.NewRequest(http.MethodGet, "/webhooks/github", nil)
		}, http.StatusMethodNotAllowed},
		{"wrong secret", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			mac := Sign([]byte("not the secret"), body)
			r.Header.Set("X-Hub-Signature-256", mac)
			return r
		}, http.StatusUnauthorized},
		{"signature of another body", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Set("X-Hub-Signature-256", Sign(testSecret, []byte("{}")))
			return r
		}, http.StatusUnauthorized},
		{"missing signature", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Del("X-Hub-Signature-256")
			return r
		}, http.StatusUnauthorized},
		{"SHA-1 only", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Del("X-Hub-Signature-256")
			r.Header.Set("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567")
			return r
		}, http.StatusUnauthorized},
		{"SHA-1 value in the SHA-256 header", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Set("X-Hub-Signature-256", "sha1=0123456789abcdef0123456789abcdef01234567")
			return r
		}, http.StatusUnauthorized},
		{"signature not hex", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Set("X-Hub-Signature-256", "sha256=zz")
			return r
		}, http.StatusUnauthorized},
		{"2 MiB body", func() *http.Request {
			return signedRequest("issue_comment", "d1", big)
		}, http.StatusRequestEntityTooLarge},
		{"2 MiB body without a length", func() *http.Request {
			r := signedRequest("issue_comment", "d1", big)
			r.ContentLength = -1
			r.Body = noLenBody{bytes.NewReader(big)}
			return r
		}, http.StatusRequestEntityTooLarge},
		{"missing event", func() *http.Request {
			r := signedRequest("", "d1", body)
			return r
		}, http.StatusBadRequest},
		{"malformed event", func() *http.Request {
			return signedRequest("Issue Comment", "d1", body)
		}, http.StatusBadRequest},
		{"missing delivery", func() *http.Request {
			return signedRequest("issue_comment", "", body)
		}, http.StatusBadRequest},
		{"malformed delivery", func() *http.Request {
			return signedRequest("issue_comment", "../../etc/passwd", body)
		}, http.StatusBadRequest},
		{"malformed JSON", func() *http.Request {
			return signedRequest("issue_comment", "d1", []byte(`{"action":"created",`))
		}, http.StatusBadRequest},
		{"JSON array", func() *http.Request {
			return signedRequest("issue_comment", "d1", []byte(`[1,2]`))
		}, http.StatusBadRequest},
		{"empty body", func() *http.Request {
			return signedRequest("issue_comment", "d1", nil)
		}, http.StatusBadRequest},
		{"payload of the wrong shape", func() *http.Request {
			return signedRequest("issue_comment", "d1", []byte(`{"action":"created","comment":{"id":"not a number"}}`))
		}, http.StatusBadRequest},
		{"unsupported content type", func() *http.Request {
			r := signedRequest("issue_comment", "d1", body)
			r.Header.Set("Content-Type", "text/xml")
			return r
		}, http.StatusUnsupportedMediaType},
		{"garbage for an ignored event", func() *http.Request {
			return signedRequest("star", "d1", []byte("not json"))
		}, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, store, sink := newTestWebhook(t)
			w := serve(h, tc.req())
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if store.count() != 0 || len(sink.calls()) != 0 {
				t.Fatalf("stored %d, sink %d", store.count(), len(sink.calls()))
			}
			if tc.status == http.StatusMethodNotAllowed && w.Header().Get("Allow") != http.MethodPost {
				t.Fatal("no Allow header")
			}
		})
	}
}

// noLenBody hides a reader's concrete type so nothing can learn the
// length from it: the limit must hold while reading.
type noLenBody struct{ io.Reader }

func (noLenBody) Close() error { return nil }

func TestWebhookIgnoredEvents(t *testing.T) {
	for _, tc := range []struct {
		event, file string
		status      int
		msg         string
	}{
		{"ping", "ping.with-app_id.json", http.StatusOK, "pong"},
		{"star", "", http.StatusAccepted, "ignored"},
		{"brand_new_event", "", http.StatusAccepted, "ignored"},
	} {
		t.Run(tc.event, func(t *testing.T) {
			h, store, sink := newTestWebhook(t)
			body := []byte(`{"action":"created"}`)
			if tc.file != "" {
				body = fixture(t, tc.file)
			}
			w := serve(h, signedRequest(tc.event, "id-"+tc.event, body))
			if w.Code != tc.status || strings.TrimSpace(w.Body.String()) != tc.msg {
				t.Fatalf("%d %q", w.Code, w.Body)
			}
			if store.count() != 0 || len(sink.calls()) != 0 {
				t.Fatal("ignored event stored")
			}
		})
	}
}

func TestWebhookStoresSubscribedEvents(t *testing.T) {
	for event, file := range map[string]string{
		"issue_comment":               "issue_comment.edited.json",
		"issues":                      "issues.opened.json",
		"pull_request":                "pull_request.opened.json",
		"pull_request_review_comment": "pull_request_review_comment.created.json",
		"installation":                "installation.created.json",
	} {
		h, store, sink := newTestWebhook(t)
		if w := serve(h, signedRequest(event, "id-"+event, fixture(t, file))); w.Code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", event, w.Code, w.Body)
		}
		if store.count() != 1 || len(sink.calls()) != 1 {
			t.Fatalf("%s not stored", event)
		}
	}
}

func TestWebhookCustomEventList(t *testing.T) {
	store, sink := newMemDeliveries(), &recordingSink{}
	h, err := NewWebhook(WebhookConfig{Secret: testSecret, Deliveries: store, Sink: sink, Events: []string{"issues"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(h, signedRequest("issue_comment", "a", fixture(t, "issue_comment.created.json"))); w.Code != http.StatusAccepted || store.count() != 0 {
		t.Fatalf("issue_comment: %d, stored %d", w.Code, store.count())
	}
	if w := serve(h, signedRequest("issues", "b", fixture(t, "issues.labeled.json"))); w.Code != http.StatusAccepted || store.count() != 1 {
		t.Fatalf("issues: %d, stored %d", w.Code, store.count())
	}
}

func TestWebhookStoreFailure(t *testing.T) {
	h, store, sink := newTestWebhook(t)
	store.fail = errors.New("disk full")
	w := serve(h, signedRequest("issue_comment", "x", fixture(t, "issue_comment.created.json")))
	if w.Code != http.StatusInternalServerError || len(sink.calls()) != 0 {
		t.Fatalf("%d, sink %d", w.Code, len(sink.calls()))
	}
	if strings.Contains(w.Body.String(), "disk full") {
		t.Fatal("internal error leaked")
	}
}

func TestWebhookJSONWithCharset(t *testing.T) {
	h, store, _ := newTestWebhook(t)
	r := signedRequest("issues", "cs-1", fixture(t, "issues.labeled.json"))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	if w := serve(h, r); w.Code != http.StatusAccepted || store.count() != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestWebhookFormEncoded(t *testing.T) {
	h, store, sink := newTestWebhook(t)
	payload := fixture(t, "issues.labeled.agent.json")
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	r := signedRequest("issues", "form-1", body)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := serve(h, r); w.Code != http.StatusAccepted {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if store.count() != 1 || !bytes.Equal(sink.calls()[0].Payload, payload) || sink.calls()[0].Action != "labeled" {
		t.Fatal("form payload not stored as JSON")
	}
}

func TestWebhookBodyLimitConfigurable(t *testing.T) {
	store, sink := newMemDeliveries(), &recordingSink{}
	h, err := NewWebhook(WebhookConfig{Secret: testSecret, Deliveries: store, Sink: sink, BodyLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(h, signedRequest("issues", "a", fixture(t, "issues.labeled.json"))); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d", w.Code)
	}
	if w := serve(h, signedRequest("issues", "b", []byte(`{"action":"labeled"}`))); w.Code != http.StatusAccepted {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestSignMatchesGitHubExample(t *testing.T) {
	// GitHub's documented example: secret "It's a Secret to Everybody",
	// payload "Hello, World!".
	want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := Sign(testSecret, []byte("Hello, World!")); got != want {
		t.Fatalf("Sign = %s", got)
	}
}

func BenchmarkWebhook(b *testing.B) {
	store, sink := newMemDeliveries(), SinkFunc(func(context.Context, Delivery) {})
	h, err := NewWebhook(WebhookConfig{Secret: testSecret, Deliveries: store, Sink: sink})
	if err != nil {
		b.Fatal(err)
	}
	benchWebhook(b, h)
}

// benchWebhook sends h signed issue_comment deliveries, each with a new
// delivery id; BenchmarkWebhook and its baseline send the same ones.
func benchWebhook(b *testing.B, h http.Handler) {
	body := fixture(b, "issue_comment.created.pull_request.json")
	sig := Sign(testSecret, body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; b.Loop(); i++ {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-GitHub-Event", "issue_comment")
		r.Header.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", i))
		r.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			b.Fatal(w.Code)
		}
	}
}
