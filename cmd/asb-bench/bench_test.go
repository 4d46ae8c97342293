package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) Outcome {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func find(t *testing.T, results []Result, pkg, name string) Result {
	t.Helper()
	for _, r := range results {
		if r.Name == name && strings.HasSuffix(r.Pkg, pkg) {
			return r
		}
	}
	t.Fatalf("no result %s %s in %+v", pkg, name, results)
	return Result{}
}

// go-test-bench.txt is the raw output of a real `make bench` run.
func TestParseRealOutput(t *testing.T) {
	out := parseFile(t, "go-test-bench.txt")
	if len(out.Failed) != 0 || len(out.Skipped) != 0 {
		t.Fatalf("failed %v skipped %v", out.Failed, out.Skipped)
	}
	var names []string
	for _, r := range out.Results {
		names = append(names, shortPkg(r.Pkg)+" "+r.Name)
	}
	want := []string{
		"app/sqlite DelegationOverhead",
		"github Webhook_baseline", "github RenderTracking_baseline", "github Digest_baseline",
		"github WebhookAcknowledgement", "github WebhookThroughput",
		"github RenderTracking", "github Digest", "github Webhook",
		"sandbox ExecRoundTrip/xcrypto-persistent", "sandbox ExecRoundTrip/baseline-openssh-controlmaster",
		"sandbox ExecRoundTrip/local-exec", "sandbox LiveLogLatency/poll=1s", "sandbox LiveLogLatency/poll=100ms",
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("results\n got %q\nwant %q", names, want)
	}
	d := find(t, out.Results, "app/sqlite", "DelegationOverhead")
	if d.N != 480 {
		t.Fatalf("N = %d", d.N)
	}
	for unit, v := range map[string]float64{"ns/op": 3051387, "baseline-µs/delegation": 415, "µs/delegation": 2448, "x-memory": 5.893, "allocs/op": 3764} {
		if got, ok := d.Get(unit); !ok || got != v {
			t.Errorf("%s = %v %v, want %v", unit, got, ok, v)
		}
	}
	if v, _ := find(t, out.Results, "github", "Webhook").Get("MB/s"); v != 34.97 {
		t.Errorf("MB/s = %v", v)
	}
}

func TestParseInterleavedOutput(t *testing.T) {
	out := parseFile(t, "interleaved.txt")
	chatty := find(t, out.Results, "demo", "Chatty")
	if chatty.N != 100 || !reflect.DeepEqual(chatty.Metrics, []Metric{{5000, "ns/op"}, {7.5, "median-ms"}}) {
		t.Fatalf("a name printed alone lost its figures: %+v", chatty)
	}
	find(t, out.Results, "demo", "Pair/deeper/nested")
	if !reflect.DeepEqual(out.Failed, []string{"github.com/asb-dev/asb/broken"}) {
		t.Fatalf("failed = %v", out.Failed)
	}
	if len(out.Skipped) != 1 || !strings.Contains(out.Skipped[0], "BenchmarkNeedsSSH") {
		t.Fatalf("skipped = %v", out.Skipped)
	}
	for _, r := range out.Results {
		if strings.Contains(r.Name, " ") {
			t.Fatalf("prose parsed as a result: %+v", r)
		}
	}
}

func TestPairConventions(t *testing.T) {
	rows := Pair(parseFile(t, "interleaved.txt").Results)
	type row struct {
		name, unit, baseline string
		value, base          float64
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Name, r.Unit, r.Baseline, r.Value, r.BaselineValue})
	}
	want := []row{
		// X_baseline pairs with X, on the figure both report.
		{"Chatty", "median-ms", "Chatty_baseline", 7.5, 2.5},
		// Nothing to pair with: a row that says so.
		{"Lonely", "ns/op", "", 1234, 0},
		// X/baseline pairs with its siblings, not with deeper benchmarks.
		{"Pair/asb", "ns/op", "Pair/baseline", 9000, 3000},
		{"Pair/deeper/nested", "ns/op", "", 1000, 0},
		// A baseline-<unit> metric pairs with <unit> on the same line.
		{"Half", "ns/op", "baseline-ns/op", 100, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows\n got %+v\nwant %+v", got, want)
	}
	if r := rows[0].Ratio(); r != 3 {
		t.Fatalf("ratio %v", r)
	}
	if r := rows[4].Ratio(); r != 0 {
		t.Fatalf("ratio over a zero baseline: %v", r)
	}
}

// Every benchmark of the real run has a baseline from the same run.
func TestRealOutputIsFullyPaired(t *testing.T) {
	rows := Pair(parseFile(t, "go-test-bench.txt").Results)
	seen := map[string]bool{}
	for _, r := range rows {
		if !r.HasBaseline() {
			t.Errorf("%s %s has no baseline", r.Pkg, r.Name)
		}
		seen[r.Name+" "+r.Unit] = true
	}
	for _, want := range []string{
		"DelegationOverhead µs/delegation", "WebhookAcknowledgement eyes-median-ms", "WebhookThroughput webhooks/s",
		"ExecRoundTrip/xcrypto-persistent median-ms", "LiveLogLatency/poll=1s median-ms", "LiveLogLatency/poll=1s p95-ms",
		"Webhook ns/op", "Digest ns/op", "RenderTracking ns/op",
	} {
		if !seen[want] {
			t.Errorf("no row %q", want)
		}
	}
	var text, md bytes.Buffer
	if err := WriteText(&text, rows); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sandbox     ExecRoundTrip/xcrypto-persistent  2.94 median-ms",
		"baseline-openssh-controlmaster  10.4 median-ms",
		"0.28x",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text table lacks %q:\n%s", want, text.String())
		}
	}
	if lines := strings.Count(md.String(), "\n"); lines != len(rows)+2 {
		t.Fatalf("markdown has %d lines for %d rows", lines, len(rows))
	}
	if !strings.Contains(md.String(), "| app/sqlite | DelegationOverhead | 2448 µs/delegation | baseline-µs/delegation | 415 µs/delegation | 5.90x |") {
		t.Fatalf("markdown:\n%s", md.String())
	}
}

func TestRunFromSavedOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"-in", filepath.Join("testdata", "interleaved.txt")}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("a failed package must fail the run: %v", err)
	}
	for _, want := range []string{"Chatty_baseline", "3.00x", "skipped: --- SKIP: BenchmarkNeedsSSH", "2 figure(s) without a baseline"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if err := run([]string{"-in", filepath.Join("testdata", "go-test-bench.txt"), "-md"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout.String(), "without a baseline") || !strings.HasPrefix(stdout.String(), "| package |") {
		t.Fatalf("output:\n%s", stdout.String())
	}
	if err := run([]string{"-timeout", "2h"}, &stdout, &stderr); err == nil {
		t.Fatal("an unbounded timeout was accepted")
	}
}
