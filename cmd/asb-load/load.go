package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// sample is the process's heap and goroutines at one moment, after a GC.
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
		db = defaultDB(dir)
	}
	ctl, err := startController(controllerConfig{DBPath: db, Runs: o.Runs, Records: o.Records, PollInterval: o.PollInterval})
	if err != nil {
		return nil, err
	}
	defer ctl.stop()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	transport := &http.Transport{MaxIdleConnsPerHost: o.Runs + 80, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: transport}
	c := &client{base: ctl.URL, token: ctl.Token, http: hc}
	if err := probe(ctx, hc, ctl.URL); err != nil {
		return nil, fmt.Errorf("the controller does not answer: %w", err)
	}
	transport.CloseIdleConnections()
	rep := &report{Opts: o}
	rep.Before = settle(sample{}, 0, 0, 500*time.Millisecond) // let the idle controller come to rest

	// The health prober, for as long as the load lasts.
	healthCtx, stopHealth := context.WithCancel(ctx)
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
	live, ended := 0, 0
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
		if rep.During.Goroutines == 0 && live+len(rep.RunErrors) >= o.Runs {
			rep.During, rep.DuringActive = take(), live-(ended-len(rep.RunErrors))
			rep.GateWait = time.Since(firstLive)
			ctl.openGate()
		}
	}
	rep.RunsElapsed = time.Since(start)
	whWG.Wait()
	ctl.drained(ctx)
	stopHealth()
	healthWG.Wait()
	rep.Stored, rep.Triggers = ctl.accepted.Load(), ctl.triggers.Load()

	// Back to idle: drop the client's keep-alive connections (their
	// server side ends with them) and give the controller time to settle.
	transport.CloseIdleConnections()
	if o.afterLoad != nil {
		o.afterLoad()
	}
	// The runtime never frees a goroutine's descriptor, it reuses it: the
	// heap keeps one per goroutine of the peak, which is no leak of asb's.
	rep.HeapAllowed = o.HeapSlack + uint64(max(rep.During.Goroutines-rep.Before.Goroutines, 0))*goroutineDescriptor
	rep.After = settle(rep.Before, o.GoroutineSlack, rep.HeapAllowed, o.Settle)
	if d := rep.After.Goroutines - rep.Before.Goroutines; d > o.GoroutineSlack {
		rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d goroutines more than before the load (allowed %d)", d, o.GoroutineSlack))
	}
	if rep.After.Heap > rep.Before.Heap+rep.HeapAllowed {
		rep.Leaks = append(rep.Leaks, fmt.Sprintf("heap %s above its idle baseline (allowed %s)",
			mib(rep.After.Heap-rep.Before.Heap), mib(rep.HeapAllowed)))
	}
	if o.MemProfile != "" {
		if err := writeHeapProfile(o.MemProfile); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		rep.RunErrors = append(rep.RunErrors, fmt.Errorf("the load did not finish within -timeout %v", o.Timeout))
	}
	return rep, nil
}

// settle samples until goroutines and heap are within slack of base, or
// until the time is up, and returns the last sample. With a zero base it
// waits for two equal goroutine counts in a row (the idle baseline).
func settle(base sample, goroutineSlack int, heapSlack uint64, within time.Duration) sample {
	deadline := time.Now().Add(within)
	prev := take()
	for {
		time.Sleep(50 * time.Millisecond)
		s := take()
		if base == (sample{}) {
			if s.Goroutines == prev.Goroutines || time.Now().After(deadline) {
				return s
			}
		} else if s.Goroutines <= base.Goroutines+goroutineSlack && s.Heap <= base.Heap+heapSlack || time.Now().After(deadline) {
			return s
		}
		prev = s
	}
}

// writeHeapProfile records what is still on the heap, to find a leak.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
