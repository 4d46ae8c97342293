package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s", ms(percentile(ds, 50)), ms(percentile(ds, 95)),
		ms(percentile(ds, 99)), ms(percentile(ds, 100)))
}

func perSecond(n int, d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f/s", float64(n)/d.Seconds())
}

func (r *report) write(w io.Writer) {
	o := r.Opts
	fmt.Fprintf(w, "asb-load: %d concurrent runs × %d records (poll %v), %d webhooks at %.0f/s, on loopback over SQLite\n\n",
		o.Runs, o.Records, o.PollInterval, o.Webhooks, o.Rate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "runs\t%d done, %d failed in %.2fs: %s\n", r.RunsDone, len(r.RunErrors), r.RunsElapsed.Seconds(), perSecond(r.RunsDone, r.RunsElapsed))
	fmt.Fprintf(tw, "delegate→live\t%s\n", quantiles(r.Live))
	fmt.Fprintf(tw, "delegate→done\t%s\n", quantiles(r.Done))
	fmt.Fprintf(tw, "gate\tthe last run went live %s after the first; agents done before then wait for it, so memory is sampled with every run active\n", ms(r.GateWait))
	if o.Webhooks > 0 {
		fmt.Fprintf(tw, "webhooks\t%d answered 2xx, %d failed in %.2fs: %s; %d stored and handed on, %d triggers\n",
			len(r.Webhooks.Latencies), r.Webhooks.Failed, r.Webhooks.Elapsed.Seconds(), perSecond(len(r.Webhooks.Latencies), r.Webhooks.Elapsed),
			r.Stored, r.Triggers)
		fmt.Fprintf(tw, "webhook→2xx\t%s\n", quantiles(r.Webhooks.Latencies))
	}
	fmt.Fprintf(tw, "/healthz under load\t%d answered, %d failed; %s\n", len(r.Health), r.HealthFailed, quantiles(r.Health))
	active := max(r.DuringActive, 1)
	fmt.Fprintf(tw, "heap\tidle %s, with %d runs active %s (%s per run), after %s (allowed %s)\n", mib(r.Before.Heap), r.DuringActive,
		mib(r.During.Heap), kib((float64(r.During.Heap)-float64(r.Before.Heap))/float64(active)), mib(r.After.Heap),
		mib(r.Before.Heap+r.HeapAllowed))
	fmt.Fprintf(tw, "goroutines\tidle %d, with %d runs active %d (%.1f per run), after %d\n", r.Before.Goroutines, r.DuringActive,
		r.During.Goroutines, float64(r.During.Goroutines-r.Before.Goroutines)/float64(active), r.After.Goroutines)
	leak := "ok: goroutines and heap back near their idle baseline"
	if len(r.Leaks) > 0 {
		leak = "LEAK: " + strings.Join(r.Leaks, "; ")
	}
	fmt.Fprintf(tw, "leak check\t%s\n", leak)
	tw.Flush()
	fmt.Fprintln(w, "\n(heap and goroutines are the controller process's, after a GC, measured in that process)")
	for i, err := range r.RunErrors {
		if i == 5 {
			fmt.Fprintf(w, "… and %d more run errors\n", len(r.RunErrors)-5)
			break
		}
		fmt.Fprintln(w, "run error:", err)
	}
	if r.Webhooks.FirstErr != nil {
		fmt.Fprintln(w, "first webhook error:", r.Webhooks.FirstErr)
	}
}

// verdict fails the load on a failed run, webhook or health probe, or a leak.
func (r *report) verdict() error {
	var errs []error
	if len(r.RunErrors) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d runs failed", len(r.RunErrors), r.Opts.Runs))
	}
	if r.Webhooks.Failed > 0 {
		errs = append(errs, fmt.Errorf("%d of %d webhooks failed", r.Webhooks.Failed, r.Opts.Webhooks))
	}
	if r.HealthFailed > 0 {
		errs = append(errs, fmt.Errorf("%d health probes failed", r.HealthFailed))
	}
	if len(r.Leaks) > 0 {
		errs = append(errs, fmt.Errorf("leak: %s", strings.Join(r.Leaks, "; ")))
	}
	return errors.Join(errs...)
}
