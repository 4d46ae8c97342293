package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asb-dev/asb/app"
)

const (
	// watchIdle is how long a stream may stay silent before it is taken for
	// dead: three of the server's 15 s heartbeats.
	watchIdle = 45 * time.Second
	// Reconnection delays: quick after a stream that delivered events (the
	// server ends lagging streams on purpose), growing while it is down.
	watchQuickRetry = 250 * time.Millisecond
	watchMaxRetry   = 30 * time.Second
)

// errSessionClosed ends a watch: nothing more will happen in the session.
var errSessionClosed = errors.New("session closed")

func runWatch(ctx context.Context, env *environment, args []string) int {
	fs := clientFlagSet(env, "watch", "[flags] SESSION",
		"Follow a session live: the agent's text and tool calls, state changes, and the question it asks with how\n"+
			"to answer it. A dropped connection is resumed where it left off. Stops when the session is closed, or on Ctrl-C.")
	tail := fs.Int("tail", 20, "show this many past events before following (0: none)")
	fromStart := fs.Bool("from-start", false, "replay the whole session from its first event")
	raw := fs.Bool("raw", false, "print each event as one line of JSON")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.stderr, "asb watch: give one SESSION (an id like ses_…; 'asb monitor' lists them)")
		return 2
	}
	if *tail < 0 || *tail > 1000 {
		fmt.Fprintln(env.stderr, "asb watch: --tail must be from 0 to 1000")
		return 2
	}
	id, ok := checkSessionArg(env, "watch", pos[0])
	if !ok {
		return 2
	}
	c, code, ok := connectClient(env, "watch")
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	w := &watcher{c: c, id: id, out: env.stdout, errOut: env.stderr, raw: *raw, idle: watchIdle}
	q := url.Values{"session": {string(id)}, "events": {strconv.Itoa(*tail)}}
	if *fromStart {
		q.Set("events", "1") // only to learn where the live part begins
	}
	var snap struct {
		fleetEntry
		Events      []app.Event `json:"events"`
		LastEventID int64       `json:"last_event_id"`
	}
	callCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err := c.call(callCtx, "GET", "/watch.json", q, nil, &snap)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintf(env.stderr, "asb watch: %v\n", err)
		return 1
	}
	w.liveFrom = snap.LastEventID
	if !w.raw {
		w.header(snap.fleetEntry)
	}
	if !*fromStart {
		for _, e := range snap.Events {
			w.print(e)
		}
		w.last = snap.LastEventID
		if snap.State == string(app.SessionClosed) {
			fmt.Fprintln(w.out, "The session is closed; nothing more will happen in it.")
			return 0
		}
	}
	return w.follow(ctx)
}

// watcher prints one session's events and follows its live stream.
type watcher struct {
	c      *apiClient
	id     app.SessionID
	out    io.Writer
	errOut io.Writer
	raw    bool
	idle   time.Duration
	// last is the id of the last event printed: the resume point.
	last int64
	// liveFrom is the newest event when the watch began; older events are
	// history and get no instructions.
	liveFrom int64
}

// follow streams events until the session closes or ctx ends, and
// reconnects from the last event printed whenever the stream drops.
func (w *watcher) follow(ctx context.Context) int {
	delay := time.Duration(0)
	for {
		progressed, retry, err := w.stream(ctx)
		switch {
		case errors.Is(err, errSessionClosed):
			return 0
		case ctx.Err() != nil:
			return 0
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != http.StatusTooManyRequests {
			fmt.Fprintf(w.errOut, "asb watch: %v\n", ae)
			return 1
		}
		switch {
		case progressed:
			delay = watchQuickRetry
		case delay == 0:
			delay = max(retry, time.Second)
		default:
			delay = min(delay*2, watchMaxRetry)
		}
		why := "the stream ended"
		if err != nil && !errors.Is(err, io.EOF) {
			why = err.Error()
		}
		fmt.Fprintf(w.errOut, "asb watch: %s; reconnecting in %s from event %d\n", why, delay.Round(10*time.Millisecond), w.last)
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(delay):
		}
	}
}

// stream follows one connection of /watch.sse from w.last.
func (w *watcher) stream(ctx context.Context) (progressed bool, retry time.Duration, err error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel() // aborts the request, which also ends readSSE's reader
	req, err := w.c.newRequest(connCtx, "GET", "/watch.sse", url.Values{"session": {string(w.id)}}, nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if w.last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(w.last, 10))
	}
	resp, err := w.c.hc.Do(req)
	if err != nil {
		return false, 0, w.c.reachError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, 0, readAPIError(resp)
	}
	retry, err = readSSE(connCtx, resp.Body, w.idle, func(f sseFrame) error {
		var e app.Event
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			fmt.Fprintf(w.errOut, "asb watch: skipped an event that is not JSON (id %s)\n", clipLine(sanitize(f.ID), 20))
			return nil
		}
		if e.ID <= w.last {
			return nil // already printed; resuming never shows an event twice
		}
		w.print(e)
		w.last = e.ID
		progressed = true
		if e.Type == app.EventSessionClosed {
			return errSessionClosed
		}
		return nil
	})
	return progressed, retry, err
}

func (w *watcher) header(v fleetEntry) {
	s := v.Session
	fmt.Fprintf(w.out, "┌─ %s  %s\n", s.ID, sanitize(clipLine(s.Title, 100)))
	state := v.State
	switch v.State {
	case string(app.StateWaiting):
		state = "WAITING — the agent asked a question and needs an answer"
	case string(app.SessionClosed):
		state = "closed (torn down)"
	}
	fmt.Fprintf(w.out, "│ state: %s", state)
	if v.Queued > 0 {
		fmt.Fprintf(w.out, ", %d queued", v.Queued)
	}
	fmt.Fprintln(w.out)
	line := "│ repo: " + sanitize(repoOf(s))
	if !s.Box.IsZero() {
		line += "   box: " + sanitize(s.Box.Name) + " on " + sanitize(s.Box.Host)
	}
	if s.Pinned {
		line += "   pinned"
	}
	fmt.Fprintln(w.out, line)
	if v.Question != "" {
		fmt.Fprintf(w.out, "│ question: %s\n", sanitize(clipLine(v.Question, 300)))
		for _, l := range w.howToAnswer() {
			fmt.Fprintf(w.out, "│ %s\n", strings.TrimSpace(l))
		}
	}
	fmt.Fprintln(w.out, "└─ events ─────────────────────────────")
}

// print writes one event, readably, or as JSON with --raw.
func (w *watcher) print(e app.Event) {
	if w.raw {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w.out, "%s\n", b)
		return
	}
	ts := e.At.Local().Format("15:04:05")
	for _, l := range w.render(e) {
		fmt.Fprintf(w.out, "%s %s\n", ts, l)
	}
}

func (w *watcher) render(e app.Event) []string {
	switch e.Type {
	case app.EventSessionCreated:
		var d app.SessionData
		_ = e.Decode(&d)
		return []string{"● session created: " + sanitize(clipLine(d.Title, 200))}
	case app.EventSessionUpdated:
		var d app.SessionData
		_ = e.Decode(&d)
		var out []string
		if d.Pinned != nil {
			if *d.Pinned {
				out = append(out, "● pinned: the box is kept until unpinned")
			} else {
				out = append(out, "● unpinned")
			}
		}
		if d.Box != nil {
			out = append(out, "● box "+sanitize(d.Box.Name)+" on "+sanitize(d.Box.Host))
		}
		return out
	case app.EventSessionClosed:
		var d app.SessionData
		_ = e.Decode(&d)
		return []string{"■ session closed: " + sanitize(clipLine(d.Reason, 200))}
	case app.EventRunQueued:
		var d app.QueuedData
		_ = e.Decode(&d)
		ahead := ""
		if d.Position > 0 {
			ahead = fmt.Sprintf(", %d ahead", d.Position)
		}
		return []string{fmt.Sprintf("+ run %d queued (%s%s): %s", d.Seq, d.Kind, ahead, sanitize(clipLine(d.Prompt, 200)))}
	case app.EventRunState:
		var d app.StateChange
		_ = e.Decode(&d)
		reason := ""
		if d.Reason != "" {
			reason = ": " + sanitize(clipLine(d.Reason, 200))
		}
		switch d.To {
		case app.StateDone:
			return []string{"✓ done" + reason}
		case app.StateFailed:
			return []string{"✗ failed" + reason}
		case app.StateCancelled:
			return []string{"■ cancelled" + reason}
		case app.StateWaiting:
			if e.ID <= w.liveFrom {
				return []string{"⏸ waiting for an answer"}
			}
			return append([]string{"⏸ waiting for an answer"}, w.howToAnswer()...)
		}
		return []string{fmt.Sprintf("→ %s%s", d.To, reason)}
	case app.EventRunQuestion:
		var d app.QuestionData
		_ = e.Decode(&d)
		out := []string{"? The agent asks:"}
		for _, l := range strings.Split(sanitizeMultiline(d.Text), "\n") {
			out = append(out, "    "+l)
		}
		return out
	case app.EventRunAnswered:
		var d app.QuestionData
		_ = e.Decode(&d)
		return []string{fmt.Sprintf("↳ answered by %s: %s", sanitize(d.AnsweredBy), sanitize(clipLine(d.Answer, 200)))}
	case app.EventRunNotice:
		var d app.NoticeData
		_ = e.Decode(&d)
		return []string{"! " + sanitize(clipLine(d.Text, 300))}
	case app.EventAsk:
		var d app.AskData
		_ = e.Decode(&d)
		return []string{"Q (co-pilot, " + sanitize(d.AskedBy) + "): " + sanitize(clipLine(d.Question, 200)),
			"A: " + sanitize(clipLine(d.Answer, 300))}
	case app.EventAgent:
		return renderAgent(e.Data)
	}
	return nil
}

// howToAnswer tells the person watching how to unblock the run, with a
// command that takes the token from where it is, never printing it.
func (w *watcher) howToAnswer() []string {
	body := fmt.Sprintf(`{"session":"%s","message":"YOUR ANSWER"}`, w.id)
	return []string{
		"  Answer from the dashboard, with MCP resume, or:",
		fmt.Sprintf(`  curl -sS -H "Authorization: Bearer %s" -H 'Content-Type: application/json' -d '%s' %s`,
			w.c.tokenHint, body, w.c.url("/resume.json", nil)),
	}
}

// ccRecord is the part of a Claude Code stream-json record the watch shows.
type ccRecord struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	Cwd     string `json:"cwd"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Result     string  `json:"result"`
	IsError    bool    `json:"is_error"`
	NumTurns   int     `json:"num_turns"`
	DurationMS int64   `json:"duration_ms"`
	CostUSD    float64 `json:"total_cost_usd"`
}

type ccBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// renderAgent shows the agent's own records: its text, the tools it calls,
// tool errors and the final result. Everything else is left out.
func renderAgent(data json.RawMessage) []string {
	var text string
	if json.Unmarshal(data, &text) == nil {
		return []string{"  " + sanitize(clipLine(text, 300))} // a line that was not JSON
	}
	var rec ccRecord
	if json.Unmarshal(data, &rec) != nil {
		return nil
	}
	switch rec.Type {
	case "system":
		if rec.Subtype != "init" {
			return nil
		}
		var parts []string
		if rec.Model != "" {
			parts = append(parts, "model "+rec.Model)
		}
		if rec.Cwd != "" {
			parts = append(parts, "in "+rec.Cwd)
		}
		line := "● agent started"
		if len(parts) > 0 {
			line += " (" + sanitize(strings.Join(parts, ", ")) + ")"
		}
		return []string{line}
	case "assistant", "user":
		var out []string
		for _, b := range contentBlocks(rec.Message.Content) {
			switch b.Type {
			case "text":
				if rec.Type != "assistant" {
					continue // the prompt echoed back; it was shown when queued
				}
				for _, l := range strings.Split(strings.TrimSpace(sanitizeMultiline(b.Text)), "\n") {
					out = append(out, "  "+l)
				}
			case "tool_use":
				out = append(out, "⚙ "+sanitize(b.Name)+" "+toolSummary(b.Input))
			case "tool_result":
				if b.IsError {
					out = append(out, "  ✗ tool error: "+sanitize(clipLine(blockText(b.Content), 200)))
				}
			}
		}
		return out
	case "result":
		if rec.IsError || (rec.Subtype != "" && rec.Subtype != "success") {
			return []string{"✗ agent ended with " + sanitize(rec.Subtype) + ": " + sanitize(clipLine(rec.Result, 200))}
		}
		parts := []string{fmt.Sprintf("%d turns", rec.NumTurns)}
		if rec.CostUSD > 0 {
			parts = append(parts, fmt.Sprintf("$%.2f", rec.CostUSD))
		}
		if rec.DurationMS > 0 {
			parts = append(parts, (time.Duration(rec.DurationMS) * time.Millisecond).Round(time.Second).String())
		}
		return []string{"✓ agent finished (" + strings.Join(parts, ", ") + ")"}
	}
	return nil
}

// contentBlocks reads message content, which is either a string or a list
// of blocks.
func contentBlocks(raw json.RawMessage) []ccBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []ccBlock{{Type: "text", Text: s}}
	}
	var blocks []ccBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

func blockText(raw json.RawMessage) string {
	var b strings.Builder
	for _, blk := range contentBlocks(raw) {
		b.WriteString(blk.Text)
	}
	return b.String()
}

// toolSummary picks the argument that says what a tool call does.
func toolSummary(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description", "prompt"} {
		if v, ok := m[k].(string); ok && v != "" {
			return sanitize(clipLine(v, 120))
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return sanitize(clipLine(strings.Join(keys, ", "), 120))
}

// sanitize makes text from the agent safe for a terminal: control
// characters (escape sequences could rewrite the screen or the title) are
// replaced, and the text is kept on one line.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			return '�'
		}
		return r
	}, s)
}

// sanitizeMultiline is sanitize that keeps line breaks.
func sanitizeMultiline(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = sanitize(l)
	}
	return strings.Join(lines, "\n")
}
