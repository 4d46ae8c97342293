package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play the controller process, as the
// asb-load binary does: load re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "controller" {
		os.Exit(controllerMain())
	}
	os.Exit(m.Run())
}

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
// load is over are reported, and only the runtime's goroutine descriptors
// are forgiven on top of the slack.
func TestLeakJudgement(t *testing.T) {
	before := sample{Heap: 10 << 20, Goroutines: 8}
	during := sample{Heap: 40 << 20, Goroutines: 1008}
	allowed := heapAllowed(before, during, 4<<20)
	if allowed != 4<<20+1000*goroutineDescriptor {
		t.Fatalf("allowed %d", allowed)
	}
	cases := []struct {
		after sample
		want  []string
	}{
		{sample{Heap: 10 << 20, Goroutines: 8}, nil},
		{sample{Heap: 10<<20 + allowed, Goroutines: 10}, nil},
		{sample{Heap: 10 << 20, Goroutines: 11}, []string{"3 goroutines more than before the load (allowed 2)"}},
		{sample{Heap: 10<<20 + allowed + 1, Goroutines: 8}, []string{"heap 4.5 MiB above its idle baseline (allowed 4.5 MiB)"}},
		{sample{Heap: 100 << 20, Goroutines: 500}, []string{"492 goroutines more than before the load (allowed 2)", "heap 90.0 MiB above its idle baseline (allowed 4.5 MiB)"}},
	}
	for _, c := range cases {
		if got := leaks(before, c.after, 2, allowed); !reflect.DeepEqual(got, c.want) {
			t.Errorf("after %+v: %q, want %q", c.after, got, c.want)
		}
	}
	rep := &report{Opts: options{Runs: 1}, Leaks: leaks(before, cases[4].after, 2, allowed)}
	if err := rep.verdict(); err == nil || !strings.Contains(err.Error(), "leak: 492 goroutines") {
		t.Fatalf("verdict: %v", err)
	}
}

// The controller's debug endpoints answer only the load driver.
func TestDebugEndpointsNeedTheToken(t *testing.T) {
	ctl, err := startController(controllerConfig{DBPath: filepath.Join(t.TempDir(), "c.sqlite"), Runs: 1, Records: 1, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.stop()
	for _, token := range []string{"", "wrong", ctl.Token + "x"} {
		r := &remote{URL: ctl.URL, Token: token, debug: http.DefaultClient}
		if _, err := r.sample(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: %v", token, err)
		}
	}
	r := &remote{URL: ctl.URL, Token: ctl.Token, debug: http.DefaultClient}
	if s, err := r.sample(context.Background()); err != nil || s.Goroutines == 0 || s.Heap == 0 {
		t.Fatalf("%+v %v", s, err)
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
