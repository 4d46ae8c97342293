// Command asb-load puts a controller under load on loopback and checks
// that nothing leaks once the load is over. `make load` runs it.
//
// It starts asb's serving side as `asb serve` wires it — a Service on a
// real SQLite file, the real HTTP handler with the webhook receiver, on
// 127.0.0.1 — over a scripted in-memory sandbox whose agents print
// -records records, one per poll, in a process of its own (this binary
// again), so that its heap and goroutines are measured alone. Then, at the
// same time:
//
//   - -runs concurrent runs, each delegated with POST /delegate.json and
//     followed on /watch.sse until done, then torn down;
//   - -webhooks signed deliveries at -rate per second, from the recorded
//     GitHub payloads in -fixtures;
//   - a /healthz probe every 100ms, to show the controller stays responsive.
//
// Each agent, having printed its records, keeps running until every run
// has gone live, so the heap and goroutines are sampled with all -runs
// runs active. The report gives throughput, latency percentiles, memory
// and goroutines per active run, and before/after figures. The exit
// status is 1 when a run or a webhook failed, or when goroutines or heap
// do not come back near their idle baseline after the load (a leak).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

// Caps on the flags: the tool is meant for one machine's loopback.
const (
	maxRuns     = 2000
	maxRecords  = 1000
	maxWebhooks = 100000
	maxRate     = 5000
	maxTimeout  = 30 * time.Minute
)

type options struct {
	Runs         int
	Records      int
	PollInterval time.Duration
	Webhooks     int
	Rate         float64
	Fixtures     string
	DB           string
	Timeout      time.Duration
	// Leak thresholds: what may remain once the load is over.
	GoroutineSlack int
	HeapSlack      uint64
	Settle         time.Duration
}

func (o options) validate() error {
	switch {
	case o.Runs < 1 || o.Runs > maxRuns:
		return fmt.Errorf("-runs must be 1..%d", maxRuns)
	case o.Records < 1 || o.Records > maxRecords:
		return fmt.Errorf("-records must be 1..%d", maxRecords)
	case o.PollInterval < time.Millisecond || o.PollInterval > 10*time.Second:
		return fmt.Errorf("-poll must be 1ms..10s")
	case o.Webhooks < 0 || o.Webhooks > maxWebhooks:
		return fmt.Errorf("-webhooks must be 0..%d", maxWebhooks)
	case o.Webhooks > 0 && (o.Rate <= 0 || o.Rate > maxRate):
		return fmt.Errorf("-rate must be in (0, %d]", maxRate)
	case o.Timeout <= 0 || o.Timeout > maxTimeout:
		return fmt.Errorf("-timeout must be in (0, %v]", maxTimeout)
	case o.GoroutineSlack < 0 || o.Settle <= 0 || o.Settle > time.Minute:
		return fmt.Errorf("-goroutine-slack must be 0 or more and -settle in (0, 1m]")
	}
	return nil
}

func main() {
	if os.Getenv(envRole) == "controller" {
		os.Exit(controllerMain())
	}
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "asb-load:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("asb-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.Runs, "runs", 20, fmt.Sprintf("concurrent runs (at most %d)", maxRuns))
	fs.IntVar(&o.Records, "records", 20, "records each agent prints, one per poll")
	fs.DurationVar(&o.PollInterval, "poll", 50*time.Millisecond, "the controller's poll interval")
	fs.IntVar(&o.Webhooks, "webhooks", 200, "signed webhook deliveries to send in all")
	fs.Float64Var(&o.Rate, "rate", 50, "webhook deliveries per second")
	fs.StringVar(&o.Fixtures, "fixtures", "github/testdata/webhooks", "folder of recorded GitHub payloads, <event>.<action>.json")
	fs.StringVar(&o.DB, "db", "", "SQLite file for the controller (default: a new one in a temporary folder)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "bound on the whole load")
	fs.IntVar(&o.GoroutineSlack, "goroutine-slack", 2, "goroutines allowed above the idle baseline after the load")
	heapSlackMiB := fs.Float64("heap-slack-mib", 4, "heap (MiB) allowed above the idle baseline after the load")
	fs.DurationVar(&o.Settle, "settle", 10*time.Second, "how long goroutines and heap get to come back after the load")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *heapSlackMiB < 0 || *heapSlackMiB > 1024 {
		return o, errors.New("-heap-slack-mib must be 0..1024")
	}
	o.HeapSlack = uint64(*heapSlackMiB * (1 << 20))
	return o, o.validate()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	rep, err := load(ctx, o)
	if err != nil {
		return err
	}
	rep.write(stdout)
	return rep.verdict()
}
