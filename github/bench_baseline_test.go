package github

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/asb-dev/asb/app"
)

// The baselines of the in-process benchmarks. asb-bench pairs
// BenchmarkX_baseline with BenchmarkX and prints their ratio: what asb's
// version costs over the least any version of the same job must do.

// BenchmarkWebhook_baseline sends BenchmarkWebhook's requests to a handler
// that only reads the bounded body and answers 202: no signature check,
// no validation, no store.
func BenchmarkWebhook_baseline(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, DefaultBodyLimit)); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	benchWebhook(b, h)
}

// BenchmarkRenderTracking_baseline encodes the same tracking data as
// plain JSON: a generic rendering with no escaping, budgets or layout.
func BenchmarkRenderTracking_baseline(b *testing.B) {
	d := trackingCases()["done"]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDigest_baseline only decodes each agent record of the same
// events into a generic map, which any reading of the stream must do.
func BenchmarkDigest_baseline(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range doneEvents {
			if e.Type != app.EventAgent {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(e.Data, &m); err != nil {
				b.Fatal(err)
			}
		}
	}
}
