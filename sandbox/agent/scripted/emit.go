package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// The stream-json event shapes, field for field as Claude Code writes them
// (Agent SDK SDKMessage types: SDKSystemMessage init, SDKAssistantMessage,
// SDKUserMessage, SDKResultMessage).

type initEvent struct {
	Type              string      `json:"type"`
	Subtype           string      `json:"subtype"`
	Cwd               string      `json:"cwd"`
	SessionID         string      `json:"session_id"`
	Tools             []string    `json:"tools"`
	MCPServers        []mcpServer `json:"mcp_servers"`
	Model             string      `json:"model"`
	PermissionMode    string      `json:"permissionMode"`
	SlashCommands     []string    `json:"slash_commands"`
	APIKeySource      string      `json:"apiKeySource"`
	ClaudeCodeVersion string      `json:"claude_code_version"`
	OutputStyle       string      `json:"output_style"`
	Agents            []string    `json:"agents"`
	Skills            []string    `json:"skills"`
	Plugins           []string    `json:"plugins"`
	UUID              string      `json:"uuid"`
}

type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type usage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

func (u usage) add(o usage) usage {
	u.InputTokens += o.InputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	u.OutputTokens += o.OutputTokens
	return u
}

// costUSD prices usage at Claude Sonnet 4.5's list prices per million
// tokens: $3 input, $3.75 cache write, $0.30 cache read, $15 output.
func (u usage) costUSD() float64 {
	return (float64(u.InputTokens)*3 + float64(u.CacheCreationInputTokens)*3.75 +
		float64(u.CacheReadInputTokens)*0.30 + float64(u.OutputTokens)*15) / 1e6
}

type contentBlock struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text,omitempty"`
	// tool_use
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	Input any    `json:"input,omitempty"`
}

type apiMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
}

type assistantEvent struct {
	Type            string     `json:"type"`
	Message         apiMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
}

type toolResultBlock struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

type userMessage struct {
	Role    string            `json:"role"`
	Content []toolResultBlock `json:"content"`
}

type userEvent struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
	UUID            string      `json:"uuid"`
	ToolUseResult   any         `json:"tool_use_result,omitempty"`
}

type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
}

type permissionDenial struct {
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
	ToolInput any    `json:"tool_input"`
}

type resultEvent struct {
	Type              string                `json:"type"`
	Subtype           string                `json:"subtype"`
	IsError           bool                  `json:"is_error"`
	DurationMS        int64                 `json:"duration_ms"`
	DurationAPIMS     int64                 `json:"duration_api_ms"`
	NumTurns          int                   `json:"num_turns"`
	Result            *string               `json:"result,omitempty"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             usage                 `json:"usage"`
	ModelUsage        map[string]modelUsage `json:"modelUsage"`
	PermissionDenials []permissionDenial    `json:"permission_denials"`
	Errors            []string              `json:"errors,omitempty"`
	UUID              string                `json:"uuid"`
}

// emitter writes events to stdout: each stream-json event as one line in
// a single write, so a reader tailing the file never sees a torn line and
// nothing waits in a buffer. In the json and text output formats only the
// result is written, at the end.
type emitter struct {
	w      io.Writer
	format string
}

func (e *emitter) event(v any) {
	if e.format != "stream-json" {
		return
	}
	e.line(v)
}

// line writes v as one JSON line, without HTML escaping (as JavaScript's
// JSON.stringify writes it).
func (e *emitter) line(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("scripted agent: marshal event: %v", err))
	}
	_, _ = e.w.Write(buf.Bytes())
}

// final writes the result in the chosen output format.
func (e *emitter) final(r resultEvent) {
	switch e.format {
	case "stream-json", "json":
		e.line(r)
	default:
		if r.Result != nil {
			_, _ = fmt.Fprintln(e.w, *r.Result)
		} else {
			for _, msg := range r.Errors {
				_, _ = fmt.Fprintln(e.w, msg)
			}
		}
	}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newID returns an Anthropic-style id: prefix, "01", 22 base62 characters.
func newID(prefix string) string {
	var b [22]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + "01" + string(b[:])
}

func ptr[T any](v T) *T { return &v }
