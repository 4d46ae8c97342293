package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var fixtures = filepath.Join("..", "..", "github", "testdata", "webhooks")

// tiny is a load small enough for the test suite, bounded by counts.
func tiny(t *testing.T) options {
	t.Helper()
	o, err := parseFlags([]string{"-runs", "4", "-records", "3", "-poll", "5ms", "-webhooks", "26", "-rate", "500",
		"-fixtures", fixtures, "-db", filepath.Join(t.TempDir(), "load.sqlite"), "-timeout", "2m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestLoadRunsEverythingAndLeaksNothing(t *testing.T) {
	rep, err := load(context.Background(), tiny(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.write(&out)
	t.Log("\n" + out.String())
	if err := rep.verdict(); err != nil {
		t.Fatal(err)
	}
	if rep.RunsDone != 4 || len(rep.Done) != 4 || len(rep.Live) != 4 {
		t.Fatalf("runs: %d done, %d timings", rep.RunsDone, len(rep.Done))
	}
	for i := range rep.Done {
		if rep.Live[i] <= 0 || rep.Done[i] < rep.Live[i] {
			t.Fatalf("run %d: live %v, done %v", i, rep.Live[i], rep.Done[i])
		}
	}
	// 26 deliveries over 13 fixtures: each twice; the two pings are
	// answered without being stored.
	if len(rep.Webhooks.Latencies) != 26 || rep.Webhooks.Failed != 0 {
		t.Fatalf("webhooks: %d answered, %d failed: %v", len(rep.Webhooks.Latencies), rep.Webhooks.Failed, rep.Webhooks.FirstErr)
	}
	if rep.Stored != 24 || rep.Triggers == 0 {
		t.Fatalf("sink saw %d deliveries, %d triggers", rep.Stored, rep.Triggers)
	}
	if rep.DuringActive != 4 || rep.During.Goroutines <= rep.Before.Goroutines || rep.During.Heap <= rep.Before.Heap {
		t.Fatalf("the sample with every run active is not one: %+v active %d, before %+v", rep.During, rep.DuringActive, rep.Before)
	}
	for _, want := range []string{"4 done, 0 failed", "delegate→done", "webhook→2xx", "26 answered 2xx", "ok: goroutines and heap back near their idle baseline"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// The leak check is not vacuous: goroutines or heap still held once the
// load is over fail the load.
func TestLoadReportsLeaks(t *testing.T) {
	o := tiny(t)
	o.Webhooks, o.Settle, o.HeapSlack = 0, 200*time.Millisecond, 1<<20
	stop := make(chan struct{})
	defer close(stop)
	var kept [][]byte
	o.afterLoad = func() {
		for range 5 {
			go func() { <-stop }()
		}
		for range 64 {
			kept = append(kept, make([]byte, 256<<10)) // 16 MiB
		}
	}
	rep, err := load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	err = rep.verdict()
	if err == nil || !strings.Contains(err.Error(), "5 goroutines more") || !strings.Contains(err.Error(), "heap") {
		t.Fatalf("verdict: %v", err)
	}
	if len(kept) != 64 {
		t.Fatal("the allocations were optimised away")
	}
}

func TestFlagsAreBounded(t *testing.T) {
	for _, args := range [][]string{
		{"-runs", "0"}, {"-runs", "100000"}, {"-records", "0"}, {"-webhooks", "-1"}, {"-rate", "0"},
		{"-rate", "1e9"}, {"-timeout", "2h"}, {"-poll", "0s"}, {"-heap-slack-mib", "-1"}, {"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if _, err := parseFlags(nil, io.Discard); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestRunPrintsTheReport(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-runs", "2", "-records", "2", "-poll", "5ms", "-webhooks", "0",
		"-db", filepath.Join(t.TempDir(), "load.sqlite")}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "2 done, 0 failed") || strings.Contains(out.String(), "webhook→2xx") {
		t.Fatalf("report:\n%s", out.String())
	}
}
