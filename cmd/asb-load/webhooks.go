package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	gh "github.com/asb-dev/asb/github"
)

// delivery is one recorded GitHub payload and the event it belongs to.
type delivery struct {
	event   string
	payload []byte
}

// loadFixtures reads the payloads in dir, named "<event>.<action>[...].json"
// as GitHub's examples are.
func loadFixtures(dir string) ([]delivery, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []delivery
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		event, _, _ := strings.Cut(filepath.Base(f), ".")
		out = append(out, delivery{event: event, payload: b})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no webhook payloads (*.json) in %s", dir)
	}
	return out, nil
}

// webhookResult is what the webhook load measured.
type webhookResult struct {
	Latencies []time.Duration
	Failed    int
	FirstErr  error
	Elapsed   time.Duration
}

// sendWebhooks posts n signed deliveries, cycling through fixtures, at
// rate per second (each on its own goroutine, at most inflight at once),
// and times each one to its 2xx.
func sendWebhooks(ctx context.Context, hc *http.Client, url string, secret []byte, fixtures []delivery, n int, rate float64) webhookResult {
	const inflight = 64
	var (
		mu  sync.Mutex
		res webhookResult
		wg  sync.WaitGroup
		sem = make(chan struct{}, inflight)
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed++
		if res.FirstErr == nil {
			res.FirstErr = err
		}
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		// Open-loop pacing: delivery i leaves at start + i/rate, however
		// long the earlier ones take.
		if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			fail(fmt.Errorf("webhook %d not sent: %w", i, ctx.Err()))
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			f := fixtures[i%len(fixtures)]
			d, err := postDelivery(ctx, hc, url, secret, f, fmt.Sprintf("load-%d-%d", start.UnixNano(), i))
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, d)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res
}

func postDelivery(ctx context.Context, hc *http.Client, url string, secret []byte, f delivery, id string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(f.payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", f.event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", gh.Sign(secret, f.payload))
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, fmt.Errorf("webhook %s (%s): status %d", id, f.event, resp.StatusCode)
	}
	return d, nil
}
