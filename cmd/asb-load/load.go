package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// sample is the controller process's heap and goroutines at one moment,
// after a GC.
type sample struct {
	Heap       uint64 // live heap bytes (HeapAlloc right after a GC)
	Goroutines int
}

func take() sample {
	runtime.GC()
	runtime.GC() // the second one frees what the first one's finalizers released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{Heap: ms.HeapAlloc, Goroutines: runtime.NumGoroutine()}
}

// report is what one load measured.
type report struct {
	Opts options

	RunsDone    int
	RunErrors   []error
	RunsElapsed time.Duration
	Live, Done  []time.Duration

	Webhooks         webhookResult
	Stored, Triggers int64

	Health       []time.Duration
	HealthFailed int

	Before, During, After sample
	// DuringActive is how many runs were live when During was taken.
	DuringActive int
	// GateWait is how long the first live run waited for the others.
	GateWait time.Duration
	// HeapAllowed is how far above Before the heap may stay after the load.
	HeapAllowed uint64
	Leaks       []string
}

// goroutineDescriptor is the heap a runtime.g takes (measured with a heap
// profile after a load: runtime.malg, about 450 bytes per goroutine).
const goroutineDescriptor = 512

// load runs the whole exercise; errors are about setting it up, what the
// load finds is in the report.
func load(ctx context.Context, o options) (*report, error) {
	fixtures, err := loadFixtures(o.Fixtures)
	if o.Webhooks > 0 && err != nil {
		return nil, err
	}
	db := o.DB
	if db == "" {
		dir, err := os.MkdirTemp("", "asb-load-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		db = filepath.Join(dir, "asb-load.sqlite")
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ctl, err := spawnController(ctx, controllerConfig{DBPath: db, Runs: o.Runs, Records: o.Records, PollInterval: o.PollInterval})
	if err != nil {
		return nil, err
	}
	defer ctl.stop()

	transport := &http.Transport{MaxIdleConnsPerHost: o.Runs + 80, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: transport}
	c := &client{base: ctl.URL, token: ctl.Token, http: hc}
	if err := probe(ctx, hc, ctl.URL); err != nil {
		return nil, fmt.Errorf("the controller does not answer: %w", err)
	}
	transport.CloseIdleConnections()
	rep := &report{Opts: o}
	// The idle baseline: two equal goroutine counts in a row.
	if rep.Before, err = settle(ctx, ctl, func(prev, s sample) bool { return s.Goroutines == prev.Goroutines }, 2*time.Second); err != nil {
		return nil, err
	}

	// The health prober, for as long as the load lasts.
	healthCtx, stopHealth := context.WithCancel(ctx)
	defer stopHealth()
	var healthWG sync.WaitGroup
	healthWG.Add(1)
	go func() {
		defer healthWG.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-healthCtx.Done():
				return
			case <-t.C:
			}
			start := time.Now()
			if err := probe(healthCtx, hc, ctl.URL); err != nil {
				if healthCtx.Err() == nil {
					rep.HealthFailed++
				}
				continue
			}
			rep.Health = append(rep.Health, time.Since(start))
		}
	}()

	var whWG sync.WaitGroup
	if o.Webhooks > 0 {
		whWG.Add(1)
		go func() {
			defer whWG.Done()
			rep.Webhooks = sendWebhooks(ctx, hc, ctl.URL+"/webhooks/github", ctl.WebhookSecret, fixtures, o.Webhooks, o.Rate)
		}()
	}

	// The runs. The sample with every run active is taken when the last
	// one goes live (or fails); then the gate opens and they all finish.
	type outcome struct {
		t   runTiming
		err error
	}
	outcomes := make(chan outcome, o.Runs)
	lives := make(chan struct{}, o.Runs)
	start := time.Now()
	for i := 0; i < o.Runs; i++ {
		go func() {
			t, err := c.driveRun(ctx, i, func() { lives <- struct{}{} })
			if err == nil && t.Live == 0 {
				err = fmt.Errorf("run %d was never seen live", i)
			}
			outcomes <- outcome{t, err}
		}()
	}
	var firstLive time.Time
	live, ended, sampled := 0, 0, false
	for ended < o.Runs {
		select {
		case <-lives:
			live++
			if firstLive.IsZero() {
				firstLive = time.Now()
			}
		case oc := <-outcomes:
			ended++
			if oc.err != nil {
				rep.RunErrors = append(rep.RunErrors, oc.err)
			} else {
				rep.RunsDone++
				rep.Live, rep.Done = append(rep.Live, oc.t.Live), append(rep.Done, oc.t.Done)
			}
		}
		if !sampled && live+len(rep.RunErrors) >= o.Runs {
			sampled = true
			rep.DuringActive, rep.GateWait = live-(ended-len(rep.RunErrors)), time.Since(firstLive)
			if rep.During, err = ctl.sample(ctx); err != nil {
				rep.RunErrors = append(rep.RunErrors, fmt.Errorf("sample with the runs active: %w", err))
			}
			if err := ctl.openGate(ctx); err != nil {
				return nil, fmt.Errorf("open the gate: %w", err)
			}
		}
	}
	rep.RunsElapsed = time.Since(start)
	whWG.Wait()
	counts, err := ctl.drained(ctx)
	if err != nil {
		rep.RunErrors = append(rep.RunErrors, fmt.Errorf("the webhook sink: %w", err))
	}
	rep.Stored, rep.Triggers = counts.Accepted, counts.Triggers
	stopHealth()
	healthWG.Wait()

	// Back to idle: drop the keep-alive connections (their server side
	// ends with them) and give the controller time to settle.
	transport.CloseIdleConnections()
	rep.HeapAllowed = heapAllowed(rep.Before, rep.During, o.HeapSlack)
	back := func(_, s sample) bool { return len(leaks(rep.Before, s, o.GoroutineSlack, rep.HeapAllowed)) == 0 }
	if rep.After, err = settle(ctx, ctl, back, o.Settle); err != nil {
		return nil, err
	}
	rep.Leaks = leaks(rep.Before, rep.After, o.GoroutineSlack, rep.HeapAllowed)
	if ctx.Err() != nil {
		rep.RunErrors = append(rep.RunErrors, fmt.Errorf("the load did not finish within -timeout %v", o.Timeout))
	}
	if err := ctl.stop(); err != nil {
		return nil, err
	}
	return rep, nil
}

// heapAllowed is how far above the idle heap the controller's may stay
// after the load. The runtime never frees a goroutine's descriptor, it
// reuses it: the heap keeps one per goroutine of the peak, which is no
// leak of asb's.
func heapAllowed(before, during sample, slack uint64) uint64 {
	return slack + uint64(max(during.Goroutines-before.Goroutines, 0))*goroutineDescriptor
}

// leaks says what did not come back to the idle baseline.
func leaks(before, after sample, goroutineSlack int, heapAllowed uint64) []string {
	var out []string
	if d := after.Goroutines - before.Goroutines; d > goroutineSlack {
		out = append(out, fmt.Sprintf("%d goroutines more than before the load (allowed %d)", d, goroutineSlack))
	}
	if after.Heap > before.Heap+heapAllowed {
		out = append(out, fmt.Sprintf("heap %s above its idle baseline (allowed %s)", mib(after.Heap-before.Heap), mib(heapAllowed)))
	}
	return out
}

// settle samples the controller every 50ms until ok(previous, sample)
// holds or the time is up, and returns the last sample.
func settle(ctx context.Context, ctl *remote, ok func(prev, s sample) bool, within time.Duration) (sample, error) {
	deadline := time.Now().Add(within)
	prev, err := ctl.sample(ctx)
	if err != nil {
		return prev, err
	}
	for {
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		s, err := ctl.sample(ctx)
		if err != nil {
			return s, err
		}
		if ok(prev, s) || time.Now().After(deadline) {
			return s, nil
		}
		prev = s
	}
}

func probe(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %d", resp.StatusCode)
	}
	return nil
}
