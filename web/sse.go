package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/asb-dev/asb/app"
)

const (
	// sseRetry is the reconnection delay suggested to EventSource clients.
	sseRetry = 2 * time.Second
	// sseWriteTimeout bounds one write to a client that stopped reading, so
	// a stalled connection frees its handler (and its subscription).
	sseWriteTimeout = 30 * time.Second
)

// resumePoint is where a stream picks up: the Last-Event-ID header that
// EventSource sends on reconnect, else ?after= for clients that cannot set
// headers, else the beginning.
func resumePoint(r *http.Request) (int64, error) {
	s, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if s == "" {
		s, name = r.URL.Query().Get("after"), "after"
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, app.Errorf(app.EINVALID, "%s must be an event id (a whole number, 0 or more)", name)
	}
	return n, nil
}

// watchSSE streams a session's events as Server-Sent Events: the stored
// ones after the resume point, then live ones, each once and in order.
func (a *api) watchSSE(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r.URL.Query().Get("session"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	after, err := resumePoint(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // ends the subscription when the stream ends for any reason
	events, streamErr, err := a.svc.Subscribe(ctx, id, after)
	if err != nil {
		a.fail(w, r, err)
		return
	}

	rc := http.NewResponseController(w)
	// A deadline left on the connection would cut the next response on it.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	// Reverse proxies (nginx) must pass events through as they come.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !write([]byte("retry: " + strconv.FormatInt(sseRetry.Milliseconds(), 10) + "\n: stream of " + string(id) + "\n\n")) {
		return
	}

	heartbeat := time.NewTicker(a.o.Heartbeat)
	defer heartbeat.Stop()
	buf := make([]byte, 0, 1024)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				if err := streamErr(); errors.Is(err, app.ErrLagged) {
					// Ending the stream is the recovery: the client reconnects
					// with Last-Event-ID and the store replays what it missed.
					write([]byte(": lagged behind; reconnect with Last-Event-ID\n\n"))
				} else if err != nil && ctx.Err() == nil {
					a.log.Warn("event stream ended", "session", id, "err", err, "request_id", middleware.GetReqID(r.Context()))
				}
				return
			}
			if a.o.beforeEvent != nil {
				a.o.beforeEvent(e)
			}
			var ok2 bool
			buf, ok2 = appendSSE(buf[:0], e)
			if !ok2 {
				a.log.Error("event not encodable", "session", id, "event", e.ID)
				continue
			}
			if !write(buf) {
				return
			}
		case <-heartbeat.C:
			// A comment keeps proxies from timing the stream out and finds
			// clients that are gone.
			if !write([]byte(": ping\n\n")) {
				return
			}
		case <-a.o.StopStreams:
			return
		case <-ctx.Done():
			return
		}
	}
}

// appendSSE encodes one event. encoding/json escapes newlines inside
// strings, so the JSON is always a single data line.
func appendSSE(buf []byte, e app.Event) ([]byte, bool) {
	data, err := json.Marshal(e)
	if err != nil {
		return buf, false
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, e.ID, 10)
	// Types are the app's constants; a line break would still split the
	// frame, so such a type is left out and the client sees "message".
	if !strings.ContainsAny(string(e.Type), "\r\n") {
		buf = append(buf, "\nevent: "...)
		buf = append(buf, e.Type...)
	}
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	return buf, true
}
