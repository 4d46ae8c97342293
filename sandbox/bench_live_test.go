package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

// tickerAgent writes timestamped stream-json records, one every 100 ms,
// the way an agent's stream grows while it works.
const tickerAgent = `#!/bin/sh
i=0
while [ "$i" -lt "${TICKS:-20}" ]; do
  printf '{"type":"system","subtype":"tick","ts":%s}\n' "$(date +%s%N)"
  i=$((i+1))
  sleep 0.1
done
printf '{"type":"result","subtype":"success","is_error":false,"result":"ticked","session_id":"tick"}\n'
`

// BenchmarkLiveLogLatency measures how long a record takes from being
// written in the box to reaching a subscriber of the session's live event
// stream (what /watch.sse relays), at the default poll interval and at a
// tenth of it. The baseline, measured in the same run, is the least any
// poller at that interval can do: the same agent script writing to a local
// file that a bare loop reads every interval (baseline-median-ms and
// baseline-p95-ms). x-poll-interval is the median over the interval.
func BenchmarkLiveLogLatency(b *testing.B) {
	fake := msbtest.New(b, "node")
	agentFile := filepath.Join(b.TempDir(), "ticker")
	if err := os.WriteFile(agentFile, []byte(tickerAgent), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, interval := range []time.Duration{time.Second, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("poll=%v", interval), func(b *testing.B) {
			lat := liveLatencies(b, fake, agentFile, interval, 20*b.N)
			b.StopTimer()
			bare := bareLatencies(b, agentFile, interval, 20*b.N)
			med, p95 := latencyQuantiles(lat)
			bmed, bp95 := latencyQuantiles(bare)
			b.ReportMetric(float64(med.Milliseconds()), "median-ms")
			b.ReportMetric(float64(p95.Milliseconds()), "p95-ms")
			b.ReportMetric(float64(bmed.Milliseconds()), "baseline-median-ms")
			b.ReportMetric(float64(bp95.Milliseconds()), "baseline-p95-ms")
			b.ReportMetric(float64(med)/float64(interval), "x-poll-interval")
			b.Logf("box → subscriber: median %v, p95 %v over %d records; bare local poller median %v, p95 %v; poll interval %v (ratio %.2f)",
				med, p95, len(lat), bmed, bp95, interval, float64(med)/float64(interval))
		})
	}
}

func latencyQuantiles(lat []time.Duration) (median, p95 time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*95/100]
}

// bareLatencies runs the agent script on the controller itself, writing
// to a file, and reads the file's new lines every interval with nothing
// in between: no box, no exec, no store, no bus.
func bareLatencies(b *testing.B, agentFile string, interval time.Duration, ticks int) []time.Duration {
	out := filepath.Join(b.TempDir(), "events.ndjson")
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(bg, time.Duration(ticks)*150*time.Millisecond+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentFile)
	cmd.Env = append(os.Environ(), fmt.Sprintf("TICKS=%d", ticks))
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var lat []time.Duration
	var off int64
	var partial []byte
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for exited := false; !exited; {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("ticker: %v", err)
			}
			exited = true
		case <-tick.C:
		case <-ctx.Done():
			b.Fatalf("bare poller: only %d of %d records arrived", len(lat), ticks)
		}
		buf, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		partial = append(partial, buf[off:]...)
		off = int64(len(buf))
		for {
			line, rest, ok := bytes.Cut(partial, []byte("\n"))
			if !ok {
				break
			}
			partial = rest
			var rec struct {
				Subtype string `json:"subtype"`
				TS      int64  `json:"ts"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Subtype == "tick" {
				lat = append(lat, now.Sub(time.Unix(0, rec.TS)))
			}
		}
	}
	if len(lat) != ticks {
		b.Fatalf("bare poller: %d of %d records", len(lat), ticks)
	}
	return lat
}

func liveLatencies(b *testing.B, fake *msbtest.Host, agentFile string, interval time.Duration, ticks int) []time.Duration {
	store, err := sqlite.Open(bg, filepath.Join(b.TempDir(), "asb.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	fleet, err := sandbox.NewFleet(sandbox.FleetConfig{
		Hosts:    []sandbox.HostSpec{{Name: "local", Transport: sandbox.NewLocalTransport(nil), MSBPath: fake.Path, MaxBoxes: 4}},
		Defaults: defaults(), Store: store,
	})
	if err != nil {
		b.Fatal(err)
	}
	agentPath := inbox.ToolDir + "/bin/ticker"
	sb := sandbox.New(fleet, sandbox.RuntimeConfig{AgentCommand: agentPath, Install: map[string]string{agentPath: agentFile},
		AgentEnv: map[string]string{"TICKS": fmt.Sprint(ticks)}}, nil)
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: interval})
	ctx, cancel := context.WithCancel(app.WithActor(bg, app.OperatorActor))
	defer cancel()
	go svc.Run(ctx)
	d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "tick"})
	if err != nil {
		b.Fatal(err)
	}
	events, _, err := svc.Subscribe(ctx, d.Session.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	timeout := time.After(time.Duration(ticks)*150*time.Millisecond + time.Minute)
	for len(lat) < ticks {
		select {
		case e := <-events:
			if e.Type != app.EventAgent {
				continue
			}
			var rec struct {
				Subtype string `json:"subtype"`
				TS      int64  `json:"ts"`
			}
			if json.Unmarshal(e.Data, &rec) == nil && rec.Subtype == "tick" {
				lat = append(lat, time.Since(time.Unix(0, rec.TS)))
			}
		case <-timeout:
			b.Fatalf("only %d of %d records arrived", len(lat), ticks)
		}
	}
	if _, err := svc.Teardown(ctx, d.Session.ID); err != nil {
		b.Fatal(err)
	}
	return lat
}
