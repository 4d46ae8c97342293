package web

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// eventItem is one readable line of a session's thread. An agent record
// can hold several (text and tool calls), so items, not events, are what
// the page lists.
type eventItem struct {
	EventID int64
	// Key names the item across reloads (event id and position), so the
	// script can keep a folded result open while the thread refreshes.
	Key   string
	RunID app.RunID
	// Kind is the CSS class: text, tool, result, state, question, answer,
	// queued, session, system, raw.
	Kind  string
	Label string
	Text  string
	// Detail is folded in <details>: tool arguments or results, raw JSON.
	Detail  string
	Summary string
	Error   bool
	At      time.Time
}

// Size limits of what one item shows; the full record stays in the store
// and in /watch.json.
const (
	maxItemText   = 8000
	maxItemDetail = 16000
)

// eventItems renders one stored event readably.
func eventItems(e app.Event) []eventItem {
	items := renderEvent(e)
	for i := range items {
		items[i].Key = strconv.FormatInt(e.ID, 10) + "-" + strconv.Itoa(i)
	}
	return items
}

func renderEvent(e app.Event) []eventItem {
	base := eventItem{EventID: e.ID, RunID: e.RunID, At: e.At}
	item := func(kind, label, text string) eventItem {
		it := base
		it.Kind, it.Label, it.Text = kind, label, clipText(text, maxItemText)
		return it
	}
	switch e.Type {
	case app.EventAgent:
		return agentItems(base, e.Data)
	case app.EventRunQueued:
		var q app.QueuedData
		_ = e.Decode(&q)
		// The prompt heads the run's block already; this line says when
		// and where it joined the queue.
		text := "task queued"
		if q.Kind == app.RunFollowUp {
			text = "follow-up queued"
		}
		if q.Position > 0 {
			text += " at position " + strconv.Itoa(q.Position)
		}
		return []eventItem{item("queued", "queue", text)}
	case app.EventRunState:
		var s app.StateChange
		_ = e.Decode(&s)
		text := string(s.From) + " → " + string(s.To)
		if s.Reason != "" {
			text += ": " + s.Reason
		}
		it := item("state", "state", text)
		it.Error = s.To == app.StateFailed
		return []eventItem{it}
	case app.EventRunQuestion:
		var q app.QuestionData
		_ = e.Decode(&q)
		return []eventItem{item("question", "question", q.Text)}
	case app.EventRunAnswered:
		var q app.QuestionData
		_ = e.Decode(&q)
		label := "answer"
		if q.AnsweredBy != "" {
			label += " from " + q.AnsweredBy
		}
		return []eventItem{item("answer", label, q.Answer)}
	case app.EventRunNotice:
		var n app.NoticeData
		_ = e.Decode(&n)
		return []eventItem{item("state", "notice", n.Text)}
	case app.EventAsk:
		return nil // shown in the ask panel
	case app.EventSessionCreated, app.EventSessionUpdated, app.EventSessionClosed:
		var s app.SessionData
		_ = e.Decode(&s)
		var parts []string
		switch e.Type {
		case app.EventSessionCreated:
			parts = append(parts, "session created")
		case app.EventSessionClosed:
			parts = append(parts, "session closed")
		}
		if s.Box != nil && !s.Box.IsZero() {
			parts = append(parts, "box "+s.Box.Name+" on "+s.Box.Host)
		}
		if s.Pinned != nil {
			parts = append(parts, map[bool]string{true: "pinned", false: "unpinned"}[*s.Pinned])
		}
		if s.Reason != "" {
			parts = append(parts, s.Reason)
		}
		if len(parts) == 0 {
			return nil
		}
		return []eventItem{item("session", "session", strings.Join(parts, " · "))}
	}
	it := item("raw", string(e.Type), "")
	it.Detail = prettyJSON(e.Data)
	return []eventItem{it}
}

// agentRecord is the part of a Claude Code stream-json line the page reads.
type agentRecord struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Model   string `json:"model"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Result  string  `json:"result"`
	IsError bool    `json:"is_error"`
	Cost    float64 `json:"total_cost_usd"`
	Turns   int     `json:"num_turns"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	ToolUseID string          `json:"tool_use_id"`
}

func agentItems(base eventItem, data json.RawMessage) []eventItem {
	raw := func(label string) []eventItem {
		it := base
		it.Kind, it.Label, it.Detail = "raw", label, clipText(prettyJSON(data), maxItemDetail)
		return []eventItem{it}
	}
	var rec agentRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		var s string
		if json.Unmarshal(data, &s) == nil {
			it := base
			it.Kind, it.Label, it.Text = "system", "output", clipText(s, maxItemText)
			return []eventItem{it}
		}
		return raw("agent")
	}
	switch rec.Type {
	case "system":
		it := base
		it.Kind, it.Label = "system", "agent"
		it.Text = "started"
		if rec.Subtype != "" && rec.Subtype != "init" {
			it.Text = rec.Subtype
		}
		if rec.Model != "" {
			it.Text += " (" + rec.Model + ")"
		}
		return []eventItem{it}
	case "result":
		it := base
		it.Kind, it.Label, it.Error = "result", "finished", rec.IsError
		it.Text = clipText(rec.Result, maxItemText)
		if rec.Turns > 0 || rec.Cost > 0 {
			it.Summary = strconv.Itoa(rec.Turns) + " turns, $" + strconv.FormatFloat(rec.Cost, 'f', 2, 64)
		}
		return []eventItem{it}
	case "assistant", "user":
		blocks, ok := contentBlocks(rec.Message.Content)
		if !ok {
			return raw(rec.Type)
		}
		var out []eventItem
		for _, b := range blocks {
			it := base
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					continue
				}
				it.Kind, it.Label, it.Text = "text", rec.Type, clipText(b.Text, maxItemText)
				if rec.Type == "assistant" {
					it.Label = "agent"
				}
			case "thinking":
				it.Kind, it.Label, it.Summary, it.Detail = "text", "thinking", "thinking", clipText(b.Thinking, maxItemDetail)
			case "tool_use":
				it.Kind, it.Label = "tool", "tool call"
				it.Text = b.Name
				it.Summary = toolSummary(b.Input)
				it.Detail = clipText(prettyJSON(b.Input), maxItemDetail)
			case "tool_result":
				it.Kind, it.Label, it.Error = "result", "tool result", b.IsError
				text := resultText(b.Content)
				it.Summary = firstLineOf(text, 100)
				it.Detail = clipText(text, maxItemDetail)
			default:
				continue
			}
			out = append(out, it)
		}
		return out
	}
	return raw("agent " + clipText(rec.Type, 40))
}

// contentBlocks reads message content: a list of blocks or a plain string.
func contentBlocks(raw json.RawMessage) ([]contentBlock, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var blocks []contentBlock
	if err := json.Unmarshal(raw, &blocks); err == nil {
		return blocks, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []contentBlock{{Type: "text", Text: s}}, true
	}
	return nil, false
}

// resultText flattens a tool result: a string or a list of text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return prettyJSON(raw)
}

// toolSummary is a tool call's most telling argument, on one line.
func toolSummary(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if v, ok := m[k].(string); ok && v != "" {
			return firstLineOf(v, 120)
		}
	}
	return ""
}

func firstLineOf(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return clipText(s, n)
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
