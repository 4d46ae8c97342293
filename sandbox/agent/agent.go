// Package agent reads Claude Code's stream-json event stream: the NDJSON
// that `claude -p … --output-format stream-json --verbose` writes to
// stdout, one JSON object a line.
//
// The wire format, as documented for the Agent SDK's SDKMessage union and
// observed in real streams:
//
//	{"type":"system","subtype":"init","session_id":…,"cwd":…,"tools":[…],"model":…,"permissionMode":…,…}
//	{"type":"assistant","message":{"id":…,"model":…,"content":[{"type":"text","text":…},
//	    {"type":"tool_use","id":…,"name":…,"input":{…}}],"stop_reason":…,"usage":{…}},
//	    "parent_tool_use_id":null,"session_id":…,"uuid":…}
//	{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":…,
//	    "content":…,"is_error":…}]},"session_id":…,"uuid":…,"tool_use_result":…}
//	{"type":"result","subtype":"success"|"error_during_execution"|"error_max_turns"|…,
//	    "is_error":…,"duration_ms":…,"duration_api_ms":…,"num_turns":…,"result":…,
//	    "session_id":…,"total_cost_usd":…,"usage":{…},"modelUsage":{…},
//	    "permission_denials":[…],"errors":[…],"uuid":…}
//
// Parsing is lenient by design: the format drifts between Claude Code
// releases, so every valid JSON object parses. Unknown event types and
// content blocks become KindUnknown records, fields of the wrong JSON type
// read as zero values, and every record keeps the raw line (and, for
// message content, the raw block) so nothing is lost.
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Kind classifies one record of the stream.
type Kind string

const (
	// KindSystemInit is the `system`/`init` event that opens every run:
	// it carries the session id (the handle for `claude --resume`), the
	// cwd, the model, the tool list and the permission mode.
	KindSystemInit Kind = "system_init"
	// KindSystem is any other `system` event (compact_boundary, status,
	// hook responses …); Subtype says which.
	KindSystem Kind = "system"
	// KindAssistantText is a text block of an assistant message.
	KindAssistantText Kind = "assistant_text"
	// KindThinking is a thinking block of an assistant message.
	KindThinking Kind = "thinking"
	// KindToolUse is a tool_use block of an assistant message.
	KindToolUse Kind = "tool_use"
	// KindTodo is a tool_use block of the TodoWrite tool; Todos holds the
	// whole checklist it sets.
	KindTodo Kind = "todo"
	// KindToolResult is a tool_result block of a user message.
	KindToolResult Kind = "tool_result"
	// KindUserText is a text block (or plain string content) of a user
	// message, e.g. a replayed prompt or "[Request interrupted by user]".
	KindUserText Kind = "user_text"
	// KindResult is the final `result` event of a run: outcome, result
	// text, usage, cost, turns and duration.
	KindResult Kind = "result"
	// KindUnknown is an event type or content block this package does not
	// interpret; Raw (and Block) keep it.
	KindUnknown Kind = "unknown"
)

// TodoWriteTool is the name of Claude Code's checklist tool.
const TodoWriteTool = "TodoWrite"

// Result subtypes Claude Code writes on the `result` event.
const (
	SubtypeSuccess              = "success"
	SubtypeErrorDuringExecution = "error_during_execution"
	SubtypeErrorMaxTurns        = "error_max_turns"
	SubtypeErrorMaxBudgetUSD    = "error_max_budget_usd"
)

// SubtypeInit is the subtype of the system event that opens a run.
const SubtypeInit = "init"

// Usage is a token count as the Anthropic API reports it.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns the field-wise sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + o.InputTokens,
		OutputTokens:             u.OutputTokens + o.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + o.CacheReadInputTokens,
	}
}

// Total is every token counted: input (fresh, cache writes and cache
// reads) plus output.
func (u Usage) Total() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}

// Todo is one item of a TodoWrite checklist.
type Todo struct {
	Content string `json:"content"`
	// Status is "pending", "in_progress" or "completed" (other values are
	// passed through).
	Status string `json:"status"`
	// ActiveForm is the present-continuous label shown while in progress.
	ActiveForm string `json:"activeForm,omitempty"`
	// ID is set by older Claude Code releases only.
	ID string `json:"id,omitempty"`
}

// MCPServer is one entry of the init event's mcp_servers list.
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// PermissionDenial is one tool call the run was not allowed to make, as
// listed on the result event.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
}

// Event is one typed record of the stream. A line yields one record,
// except assistant and user messages, which yield one per content block
// (see ParseAll). Fields that do not apply to a Kind are zero.
type Event struct {
	Kind Kind `json:"kind"`
	// Type and Subtype are the line's own "type" and "subtype".
	Type    string `json:"type"`
	Subtype string `json:"subtype,omitempty"`
	// SessionID is the line's "session_id" (or "sessionId").
	SessionID string `json:"session_id,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	// ParentToolUseID is set on messages of a sub-agent (the Task tool).
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`

	// MessageID, Model, StopReason and Usage describe the assistant
	// message a record came from; every record of one message shares
	// them. Newer Claude Code releases emit one assistant line per
	// content block, repeating the same message id and usage, so sum
	// usage per distinct MessageID, never per record (Summary does).
	// Model is also set on system_init.
	MessageID  string `json:"message_id,omitempty"`
	Model      string `json:"model,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// Index is the record's content block index within its message.
	Index int `json:"index,omitempty"`
	// Usage is the message's usage (assistant records) or the run's total
	// (result). Nil when the line has none.
	Usage *Usage `json:"usage,omitempty"`
	// Error is an assistant message's "error" (authentication_failed,
	// rate_limit …).
	Error string `json:"error,omitempty"`

	// Text is the text of assistant_text, thinking and user_text records,
	// the content of a tool_result (text blocks joined), and the "result"
	// of a result event.
	Text string `json:"text,omitempty"`
	// ToolName, ToolUseID and Input describe a tool_use or todo record;
	// ToolUseID also links a tool_result to its tool_use.
	ToolName  string          `json:"tool_name,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	// Todos is the checklist a TodoWrite call sets (todo records).
	Todos []Todo `json:"todos,omitempty"`
	// IsError is set on failed tool results and failed runs.
	IsError bool `json:"is_error,omitempty"`

	// system_init fields.
	Cwd               string      `json:"cwd,omitempty"`
	Tools             []string    `json:"tools,omitempty"`
	MCPServers        []MCPServer `json:"mcp_servers,omitempty"`
	PermissionMode    string      `json:"permission_mode,omitempty"`
	ClaudeCodeVersion string      `json:"claude_code_version,omitempty"`

	// result fields.
	TotalCostUSD      float64            `json:"total_cost_usd,omitempty"`
	NumTurns          int                `json:"num_turns,omitempty"`
	DurationMS        int64              `json:"duration_ms,omitempty"`
	DurationAPIMS     int64              `json:"duration_api_ms,omitempty"`
	Errors            []string           `json:"errors,omitempty"`
	PermissionDenials []PermissionDenial `json:"permission_denials,omitempty"`

	// Block is the raw content block a message record came from.
	Block json.RawMessage `json:"-"`
	// Raw is the whole line, so fields this package does not interpret
	// are kept. Records of one line share it; treat it as read-only.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// ErrNotObject reports a line that is valid JSON but not an object, or
// blank.
var ErrNotObject = errors.New("agent: stream-json line is not a JSON object")

// Parse returns the first record of one stream-json line: the only one,
// except for assistant and user messages with several content blocks, for
// which ParseAll returns them all.
func Parse(line []byte) (Event, error) {
	evs, err := ParseAll(line)
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// ParseAll turns one stream-json line into its records: one per content
// block of an assistant or user message (at least one, even for an empty
// message), exactly one for any other line. Surrounding whitespace (and a
// trailing "\r\n") is ignored. Every valid JSON object parses; the error
// reports only a line that is not one: ErrNotObject for a blank line or
// valid JSON of another type, a syntax error otherwise.
func ParseAll(line []byte) ([]Event, error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) > 0 && !json.Valid(trimmed) {
			return nil, fmt.Errorf("agent: invalid stream-json line: %w", syntaxError(trimmed))
		}
		return nil, ErrNotObject
	}
	var o obj
	if err := json.Unmarshal(trimmed, &o); err != nil {
		return nil, fmt.Errorf("agent: invalid stream-json line: %w", err)
	}
	raw := json.RawMessage(bytes.Clone(trimmed))

	base := Event{
		Type:            o.str("type"),
		Subtype:         o.str("subtype"),
		SessionID:       o.str("session_id"),
		UUID:            o.str("uuid"),
		ParentToolUseID: o.str("parent_tool_use_id"),
		Raw:             raw,
	}
	if base.SessionID == "" {
		base.SessionID = o.str("sessionId")
	}

	switch base.Type {
	case "system":
		base.Kind = KindSystem
		if base.Subtype == SubtypeInit {
			base.Kind = KindSystemInit
			base.Cwd = o.str("cwd")
			base.Tools = o.strs("tools")
			base.Model = o.str("model")
			base.PermissionMode = o.str("permissionMode")
			base.ClaudeCodeVersion = o.str("claude_code_version")
			for _, s := range o.arr("mcp_servers") {
				so := object(s)
				base.MCPServers = append(base.MCPServers, MCPServer{Name: so.str("name"), Status: so.str("status")})
			}
		}
		return []Event{base}, nil
	case "assistant", "user":
		return parseMessage(base, o), nil
	case "result":
		base.Kind = KindResult
		base.IsError = o.boolean("is_error")
		base.Text = o.str("result")
		base.TotalCostUSD = o.float("total_cost_usd")
		base.NumTurns = o.smallint("num_turns")
		base.DurationMS = o.integer("duration_ms")
		base.DurationAPIMS = o.integer("duration_api_ms")
		base.Usage = o.usage("usage")
		base.Errors = o.strs("errors")
		for _, d := range o.arr("permission_denials") {
			do := object(d)
			base.PermissionDenials = append(base.PermissionDenials, PermissionDenial{
				ToolName:  do.str("tool_name"),
				ToolUseID: do.str("tool_use_id"),
				ToolInput: do.rawValue("tool_input"),
			})
		}
		return []Event{base}, nil
	default:
		base.Kind = KindUnknown
		return []Event{base}, nil
	}
}

// parseMessage splits an assistant or user message into one record per
// content block.
func parseMessage(base Event, o obj) []Event {
	msg := o.obj("message")
	base.MessageID = msg.str("id")
	base.Model = msg.str("model")
	base.StopReason = msg.str("stop_reason")
	base.Usage = msg.usage("usage")
	base.Error = o.str("error")

	textKind := KindAssistantText
	if base.Type == "user" {
		textKind = KindUserText
	}
	content := msg["content"]
	if s, ok := asString(content); ok {
		base.Kind = textKind
		base.Text = s
		return []Event{base}
	}
	blocks := msg.arr("content")
	if len(blocks) == 0 {
		base.Kind = textKind
		return []Event{base}
	}
	out := make([]Event, 0, len(blocks))
	for i, b := range blocks {
		e := base
		e.Index = i
		e.Block = b
		bo := object(b)
		switch bo.str("type") {
		case "text":
			e.Kind = textKind
			e.Text = bo.str("text")
		case "thinking":
			e.Kind = KindThinking
			e.Text = bo.str("thinking")
		case "tool_use", "server_tool_use":
			e.Kind = KindToolUse
			e.ToolName = bo.str("name")
			e.ToolUseID = bo.str("id")
			e.Input = bo.rawValue("input")
			if e.ToolName == TodoWriteTool {
				e.Kind = KindTodo
				e.Todos = parseTodos(object(e.Input))
			}
		case "tool_result":
			e.Kind = KindToolResult
			e.ToolUseID = bo.str("tool_use_id")
			e.IsError = bo.boolean("is_error")
			e.Text = contentText(bo["content"])
		default:
			e.Kind = KindUnknown
		}
		out = append(out, e)
	}
	return out
}

func parseTodos(input obj) []Todo {
	var todos []Todo
	for _, t := range input.arr("todos") {
		to := object(t)
		todos = append(todos, Todo{
			Content:    to.str("content"),
			Status:     to.str("status"),
			ActiveForm: to.str("activeForm"),
			ID:         to.str("id"),
		})
	}
	return todos
}

// contentText reads a tool_result's content: a string, or a list of blocks
// whose text blocks are joined by newlines (images and other blocks are
// skipped).
func contentText(raw json.RawMessage) string {
	if s, ok := asString(raw); ok {
		return s
	}
	var parts []string
	for _, b := range asArray(raw) {
		bo := object(b)
		if bo.str("type") == "text" {
			parts = append(parts, bo.str("text"))
		}
	}
	return joinLines(parts)
}

func joinLines(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}

// syntaxError returns the decoder's error for invalid JSON.
func syntaxError(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}
