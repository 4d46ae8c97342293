package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// remote is the controller process as the driver sees it.
type remote struct {
	URL, Token    string
	WebhookSecret []byte

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stopOnce sync.Once
	stopErr  error
	// debug talks to the debug endpoints on a fresh connection each time,
	// so every sample counts the same one server-side connection.
	debug *http.Client
}

// spawnController starts this same binary as the controller process and
// reads where it listens.
func spawnController(ctx context.Context, cfg controllerConfig) (*remote, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envRole+"=controller", envDB+"="+cfg.DBPath, envRuns+"="+strconv.Itoa(cfg.Runs),
		envRecords+"="+strconv.Itoa(cfg.Records), envPoll+"="+cfg.PollInterval.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the controller process: %w", err)
	}
	r := &remote{cmd: cmd, stdin: stdin, debug: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}}
	lines := make(chan hello, 1)
	go func() {
		var h hello
		if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&h); err == nil {
			lines <- h
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case h, ok := <-lines:
		if !ok {
			r.stop()
			return nil, errors.New("the controller process ended before it listened")
		}
		r.URL, r.Token, r.WebhookSecret = h.URL, h.Token, []byte(h.WebhookSecret)
		return r, nil
	case <-ctx.Done():
		r.stop()
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		r.stop()
		return nil, errors.New("the controller process did not listen within a minute")
	}
}

func (r *remote) call(ctx context.Context, method, what string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.URL+debugPrefix+what, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	resp, err := r.debug.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d", what, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(out)
}

// sample is the controller process's heap and goroutines after a GC.
func (r *remote) sample(ctx context.Context) (sample, error) {
	var s sample
	err := r.call(ctx, http.MethodGet, "sample", &s)
	return s, err
}

func (r *remote) openGate(ctx context.Context) error {
	return r.call(ctx, http.MethodPost, "gate", &struct{}{})
}

func (r *remote) sink(ctx context.Context) (sinkCounts, error) {
	var c sinkCounts
	err := r.call(ctx, http.MethodGet, "sink", &c)
	return c, err
}

// drained waits, at most until ctx ends, for the sink's consumer to
// process what the webhook handed it.
func (r *remote) drained(ctx context.Context) (sinkCounts, error) {
	for {
		c, err := r.sink(ctx)
		if err != nil || c.Accepted >= c.Handed {
			return c, err
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop closes the controller's stdin, which shuts it down, and waits for
// it (killing it after 30 seconds). Only the first call does anything.
func (r *remote) stop() error {
	r.stopOnce.Do(func() { r.stopErr = r.shutdown() })
	return r.stopErr
}

func (r *remote) shutdown() error {
	r.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
		return errors.New("the controller process did not stop within 30s; killed")
	}
}
