package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

type sseEvent struct {
	id    int64
	typ   string
	event app.Event
}

type sseResult struct {
	events   []sseEvent
	comments []string
	retry    string
	raw      string
	// ended is true when the server closed the stream.
	ended bool
}

// readSSE follows /watch.sse from after until stop says enough or the
// server ends the stream. lastEventID, when > 0, is sent as the header.
func readSSE(t *testing.T, e *apiEnv, id app.SessionID, after int64, stop func([]sseEvent) bool, headers ...string) sseResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := "/watch.sse?session=" + string(id)
	if after > 0 {
		path += "&after=" + strconv.FormatInt(after, 10)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("watch.sse = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var res sseResult
	var raw strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var cur sseEvent
	var data string
	for sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		switch {
		case line == "":
			if data != "" {
				if err := json.Unmarshal([]byte(data), &cur.event); err != nil {
					t.Fatalf("data is not an event: %v: %s", err, data)
				}
				res.events = append(res.events, cur)
				if stop != nil && stop(res.events) {
					res.raw = raw.String()
					return res
				}
			}
			cur, data = sseEvent{}, ""
		case strings.HasPrefix(line, ":"):
			res.comments = append(res.comments, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "retry: "):
			res.retry = line[len("retry: "):]
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[len("id: "):], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			if data != "" {
				t.Fatalf("an event has two data lines: %q", line)
			}
			data = line[len("data: "):]
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end or satisfy the test in time; got %d events", len(res.events))
	}
	res.ended = true
	res.raw = raw.String()
	return res
}

func ids(evs []sseEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.id
	}
	return out
}

func storedIDs(evs []app.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func sameIDs(a, b []int64) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func hasType(evs []sseEvent, typ app.EventType, to app.RunState) bool {
	for _, e := range evs {
		if e.event.Type != typ {
			continue
		}
		if to == "" {
			return true
		}
		var sc app.StateChange
		if e.event.Decode(&sc) == nil && sc.To == to {
			return true
		}
	}
	return false
}

func TestSSEDeliversLiveEventsInOrder(t *testing.T) {
	hold := make(chan struct{})
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			return apptest.Script{Records: []string{`{"type":"assistant","n":1}`, `{"type":"assistant","n":2}`}, Hold: hold,
				Result: &app.AgentResult{Summary: "fine"}}
		}
	}})
	d := e.delegate(t, map[string]any{"task": "stream me"})
	var once sync.Once
	res := readSSE(t, e, d.Session.ID, 0, func(evs []sseEvent) bool {
		// Let the run finish only once the stream is live, so later events
		// come through the subscription and not the replay.
		if hasType(evs, app.EventRunState, app.StateRunning) {
			once.Do(func() { close(hold) })
		}
		return hasType(evs, app.EventRunState, app.StateDone)
	})
	stored := e.allEvents(t, d.Session.ID)
	got := ids(res.events)
	if !sameIDs(got, storedIDs(stored)[:len(got)]) {
		t.Fatalf("stream ids %v, stored %v", got, storedIDs(stored))
	}
	for i, ev := range res.events {
		if ev.typ != string(ev.event.Type) || ev.id != ev.event.ID || ev.event.SessionID != d.Session.ID {
			t.Fatalf("event %d: id %d type %q data %+v", i, ev.id, ev.typ, ev.event)
		}
	}
	if !hasType(res.events, app.EventAgent, "") || res.retry == "" {
		t.Fatalf("no agent records or no retry hint: %s", res.raw)
	}
}

func TestSSEHeartbeatAndClientLeaving(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	d := e.delegate(t, map[string]any{"task": "quiet"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/watch.sse?session="+string(d.Session.ID), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	pings := 0
	for pings < 3 && sc.Scan() {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	if pings < 3 {
		t.Fatalf("no heartbeats: %v", sc.Err())
	}
	if st, _ := e.svc.Stats(e.ctx); st.Subscribers != 1 {
		t.Fatalf("subscribers = %d", st.Subscribers)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, "the stream to end after the client left", func() bool {
		st, _ := e.svc.Stats(e.ctx)
		return st.Subscribers == 0
	})
}

func TestSSEStopStreamsEndsTheStream(t *testing.T) {
	stop := make(chan struct{})
	e := newAPI(t, envConfig{noRun: true, options: func(o *web.Options) { o.StopStreams = stop; o.Heartbeat = time.Hour }})
	d := e.delegate(t, map[string]any{"task": "quiet"})
	done := make(chan sseResult, 1)
	go func() {
		defer close(done) // readSSE may fail the test and exit the goroutine
		done <- readSSE(t, e, d.Session.ID, 0, nil)
	}()
	waitFor(t, "the stream to subscribe", func() bool {
		st, _ := e.svc.Stats(e.ctx)
		return st.Subscribers == 1
	})
	close(stop)
	res := <-done
	if !res.ended || len(res.events) != 2 {
		t.Fatalf("stream = %+v", res)
	}
}

func TestSSEResumesWithLastEventID(t *testing.T) {
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(app.Turn) apptest.Script {
			recs := make([]string, 20)
			for i := range recs {
				recs[i] = fmt.Sprintf(`{"type":"assistant","n":%d}`, i)
			}
			return apptest.Script{Records: recs}
		}
	}})
	d := e.delegate(t, map[string]any{"task": "many records"})
	id := d.Session.ID
	doneEv := func(evs []sseEvent) bool { return hasType(evs, app.EventRunState, app.StateDone) }

	// Read a few, drop the connection, resume from the last id seen:
	// together they are the stored sequence, with no gap and no repeat.
	first := readSSE(t, e, id, 0, func(evs []sseEvent) bool { return len(evs) == 4 })
	last := first.events[len(first.events)-1].id
	second := readSSE(t, e, id, 0, doneEv, "Last-Event-ID", strconv.FormatInt(last, 10))
	got := append(ids(first.events), ids(second.events)...)
	stored := storedIDs(e.allEvents(t, id))
	if !sameIDs(got, stored[:len(got)]) || !doneEv(second.events) {
		t.Fatalf("resumed ids %v, stored %v", got, stored)
	}

	// ?after= does the same for clients that cannot set headers, and the
	// header wins over it.
	third := readSSE(t, e, id, stored[5], func(evs []sseEvent) bool { return evs[len(evs)-1].id == stored[len(stored)-1] })
	if !sameIDs(ids(third.events), stored[6:]) {
		t.Fatalf("after ids %v, stored %v", ids(third.events), stored)
	}
	fourth := readSSE(t, e, id, stored[0], func(evs []sseEvent) bool { return true }, "Last-Event-ID", strconv.FormatInt(stored[9], 10))
	if fourth.events[0].id != stored[10] {
		t.Fatalf("Last-Event-ID did not win over ?after=: first id %d", fourth.events[0].id)
	}
}

// A reader that falls behind is dropped by the bus; the stream then ends
// and the client resumes from its Last-Event-ID without losing anything.
func TestSSELaggingReaderEndsAndResumes(t *testing.T) {
	release := make(chan struct{})
	var replayEnd int64
	var holdOnce sync.Once
	e := newAPI(t, envConfig{noRun: true, bus: app.NewBus(2), options: func(o *web.Options) {
		*o = web.WithBeforeEvent(*o, func(ev app.Event) {
			// Block the handler on the first live event, as a slow client would.
			if ev.ID > replayEnd {
				holdOnce.Do(func() { <-release })
			}
		})
	}})
	d := e.delegate(t, map[string]any{"task": "burst"})
	id := d.Session.ID
	stored := e.allEvents(t, id)
	replayEnd = stored[len(stored)-1].ID

	done := make(chan sseResult, 1)
	replayed := make(chan struct{})
	go func() {
		defer close(done) // readSSE may fail the test and exit the goroutine
		done <- readSSE(t, e, id, 0, func(evs []sseEvent) bool {
			if len(evs) == len(stored) {
				close(replayed)
			}
			return false
		})
	}()
	// Publish only once the replay is out, so the burst arrives live.
	select {
	case <-replayed:
	case <-time.After(20 * time.Second):
		t.Fatal("the replay did not arrive")
	}
	// One commit's worth of events, far more than the bus buffers.
	burst := make([]app.Event, 12)
	for i := range burst {
		burst[i] = app.Event{SessionID: id, Type: app.EventAgent, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), At: time.Now()}
	}
	var published []app.Event
	if err := e.store.Tx(e.ctx, func(tx app.Tx) error {
		var err error
		published, err = tx.AppendEvents(burst)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.svc.Bus().Publish(published...)
	close(release)

	first := <-done
	if !first.ended || len(first.events) >= len(stored)+len(published) {
		t.Fatalf("the lagging stream did not end early: %d events, ended %v", len(first.events), first.ended)
	}
	if !strings.Contains(strings.Join(first.comments, "\n"), "lagged") {
		t.Errorf("no lag notice: %q", first.comments)
	}
	all := storedIDs(e.allEvents(t, id))
	last := first.events[len(first.events)-1].id
	second := readSSE(t, e, id, 0, func(evs []sseEvent) bool { return evs[len(evs)-1].id == all[len(all)-1] },
		"Last-Event-ID", strconv.FormatInt(last, 10))
	got := append(ids(first.events), ids(second.events)...)
	if !sameIDs(got, all) {
		t.Fatalf("ids after resuming %v, stored %v", got, all)
	}
}
