package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// client talks to the controller over loopback HTTP like asb's own CLI.
type client struct {
	base, token string
	http        *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// runTiming is what one delegation measured.
type runTiming struct {
	// Live is delegate → the first agent record on /watch.sse.
	Live time.Duration
	// Done is delegate → the run's "done" state on /watch.sse.
	Done time.Duration
}

// driveRun delegates one task over POST /delegate.json, follows the
// session's /watch.sse until the run is done, reports when it went live,
// and tears the session down.
func (c *client) driveRun(ctx context.Context, i int, live func()) (runTiming, error) {
	var t runTiming
	start := time.Now()
	var d struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if err := c.do(ctx, http.MethodPost, "/delegate.json", map[string]any{"task": fmt.Sprintf("load task %d", i)}, &d); err != nil {
		return t, err
	}
	if d.Session.ID == "" {
		return t, fmt.Errorf("delegate answered without a session")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/watch.sse?session="+url.QueryEscape(d.Session.ID), nil)
	if err != nil {
		return t, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("watch.sse: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4<<10), 4<<20) // grows for long events; small, as it counts in the heap per run
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e app.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return t, fmt.Errorf("watch.sse sent an undecodable event: %w", err)
		}
		switch e.Type {
		case app.EventAgent:
			if t.Live == 0 {
				t.Live = time.Since(start)
				live()
			}
		case app.EventRunState:
			var sc app.StateChange
			if err := json.Unmarshal(e.Data, &sc); err != nil {
				return t, err
			}
			if sc.To.Terminal() {
				if sc.To != app.StateDone {
					return t, fmt.Errorf("run ended %s: %s", sc.To, sc.Reason)
				}
				t.Done = time.Since(start)
				resp.Body.Close() // ends the stream and its subscription
				err := c.do(ctx, http.MethodPost, "/teardown.json", map[string]any{"session": d.Session.ID}, nil)
				return t, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("watch.sse: %w", err)
	}
	return t, fmt.Errorf("watch.sse ended before the run was done")
}
