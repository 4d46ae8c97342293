package sqlite_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/sqlite"
)

// BenchmarkDelegationOverhead measures the controller's own cost of one
// delegation, from Delegate to a done run, with an in-memory sandbox whose
// agent emits one record and exits (so msb and the agent cost nothing).
// It runs the same loop over the in-memory store as the baseline and
// reports both medians and their ratio: what durability on SQLite costs.
func BenchmarkDelegationOverhead(b *testing.B) {
	run := func(b *testing.B, store app.Store) []time.Duration {
		sb := apptest.NewFakeSandbox()
		svc := app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: 200 * time.Microsecond})
		ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
		defer cancel()
		go svc.Run(ctx)
		var out []time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "benchmark task"})
			if err != nil {
				b.Fatal(err)
			}
			res, err := svc.Wait(ctx, d.Session.ID, time.Minute)
			if err != nil || !res.Reached || res.View.Current.State != app.StateDone {
				b.Fatalf("run did not finish: %+v %v", res.View.Current, err)
			}
			out = append(out, time.Since(start))
		}
		return out
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	b.ResetTimer()
	onDisk := run(b, store)
	b.StopTimer()
	inMem := run(b, apptest.NewMemStore())
	d, m := median(onDisk), median(inMem)
	b.ReportMetric(float64(d.Microseconds()), "sqlite-µs/delegation")
	b.ReportMetric(float64(m.Microseconds()), "memory-µs/delegation")
	b.ReportMetric(float64(d)/float64(m), "x-memory")
	b.Logf("delegation overhead (median of %d): sqlite %v, in-memory baseline %v, ratio %.2fx", b.N, d, m, float64(d)/float64(m))
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
