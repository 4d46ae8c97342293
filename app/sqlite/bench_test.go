package sqlite_test

import (
	"context"
	"fmt"
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
// reports both medians (µs/delegation and baseline-µs/delegation, the
// pair asb-bench compares) and their ratio: what durability on SQLite
// costs. Both stores start afresh every delegationBatch delegations: the
// in-memory store copies its whole state on every transaction, so over
// thousands of sessions it would measure its own growth, not a free store.
func BenchmarkDelegationOverhead(b *testing.B) {
	run := func(b *testing.B, n int, newStore func() app.Store) []time.Duration {
		var out []time.Duration
		for len(out) < n {
			out = append(out, delegations(b, newStore(), min(delegationBatch, n-len(out)))...)
		}
		return out
	}
	dir := b.TempDir()
	files := 0
	onDisk := run(b, b.N, func() app.Store {
		files++
		store, err := sqlite.Open(context.Background(), filepath.Join(dir, fmt.Sprintf("bench-%d.sqlite", files)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close() })
		return store
	})
	b.StopTimer()
	inMem := run(b, b.N, func() app.Store { return apptest.NewMemStore() })
	d, m := median(onDisk), median(inMem)
	b.ReportMetric(float64(d.Microseconds()), "µs/delegation")
	b.ReportMetric(float64(m.Microseconds()), "baseline-µs/delegation")
	b.ReportMetric(float64(d)/float64(m), "x-memory")
	b.Logf("delegation overhead (median of %d): sqlite %v, in-memory baseline %v, ratio %.2fx", b.N, d, m, float64(d)/float64(m))
}

// delegationBatch is how many delegations one store serves in the benchmark.
const delegationBatch = 50

// delegations runs n delegations to the end on a fresh Service over store
// and returns how long each took.
func delegations(b *testing.B, store app.Store, n int) []time.Duration {
	sb := apptest.NewFakeSandbox()
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: 200 * time.Microsecond})
	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	defer cancel()
	go svc.Run(ctx)
	var out []time.Duration
	for i := 0; i < n; i++ {
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

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
