package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readFixture(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/sample-turns.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines, n := SplitLines(data)
	if n != len(data) || len(lines) != 9 {
		t.Fatalf("fixture: %d lines, %d of %d bytes", len(lines), n, len(data))
	}
	return lines
}

// brief is a comparable digest of a record.
type brief struct {
	Kind      Kind
	Session   string
	Text      string
	Tool      string
	ToolUseID string
	IsError   bool
	MessageID string
	Index     int
}

func digest(evs []Event) []brief {
	var out []brief
	for _, e := range evs {
		text := e.Text
		if len(text) > 40 {
			text = text[:40]
		}
		out = append(out, brief{e.Kind, e.SessionID, text, e.ToolName, e.ToolUseID, e.IsError, e.MessageID, e.Index})
	}
	return out
}

func TestParseAllFixture(t *testing.T) {
	lines := readFixture(t)
	const sid = "sample-session-id"
	want := [][]brief{
		{{Kind: KindSystemInit, Session: sid}},
		{
			{KindAssistantText, sid, "I'll help you with this task. Let me sta", "", "", false, "msg_sample123", 0},
			{KindToolUse, sid, "", "Read", "tool_call_1", false, "msg_sample123", 1},
		},
		{{Kind: KindToolResult, Text: "def example_function():\n    print(\"Debug", ToolUseID: "tool_call_1"}},
		{
			{KindAssistantText, sid, "I can see the debug print statement that", "", "", false, "msg_sample124", 0},
			{KindToolUse, sid, "", "Edit", "tool_call_2", false, "msg_sample124", 1},
		},
		{{Kind: KindToolResult, Text: "File successfully edited. The debug prin", ToolUseID: "tool_call_2"}},
		{
			{KindAssistantText, sid, "Perfect! I've successfully removed the d", "", "", false, "msg_sample125", 0},
			{KindToolUse, sid, "", "mcp__github__add_pull_request_review_comment", "tool_call_3", false, "msg_sample125", 1},
		},
		{{Kind: KindToolResult, Text: "Successfully posted review comment to PR", ToolUseID: "tool_call_3"}},
		{{KindAssistantText, sid, "Great! I've successfully completed the r", "", "", false, "msg_sample126", 0}},
		{{Kind: KindResult, Text: "Successfully removed debug print stateme"}},
	}
	for i, line := range lines {
		evs, err := ParseAll(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if got := digest(evs); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d:\n got %+v\nwant %+v", i+1, got, want[i])
		}
		for _, e := range evs {
			if !bytes.Equal(e.Raw, bytes.TrimSpace(line)) {
				t.Errorf("line %d: Raw is not the line", i+1)
			}
		}
		first, err := Parse(line)
		if err != nil || !reflect.DeepEqual(first, evs[0]) {
			t.Errorf("line %d: Parse differs from ParseAll[0]: %v", i+1, err)
		}
	}

	// Field-level checks on the richer lines.
	init, _ := Parse(lines[0])
	if len(init.Tools) != 8 || init.Tools[1] != "Bash" || len(init.MCPServers) != 1 ||
		init.MCPServers[0] != (MCPServer{"github", "connected"}) || init.Subtype != "init" {
		t.Errorf("init: %+v", init)
	}
	msg, _ := ParseAll(lines[1])
	if msg[0].Usage == nil || *msg[0].Usage != (Usage{100, 75, 0, 50}) || msg[0].Usage != msg[1].Usage {
		t.Errorf("usage: %+v", msg[0].Usage)
	}
	if msg[0].Model != "claude-test-model" || msg[0].StopReason != "tool_use" {
		t.Errorf("message fields: %+v", msg[0])
	}
	if string(msg[1].Input) != `{"file_path": "/path/to/sample/file.py"}` {
		t.Errorf("input: %s", msg[1].Input)
	}
	if !strings.Contains(string(msg[1].Block), `"tool_call_1"`) {
		t.Errorf("block: %s", msg[1].Block)
	}
	res, _ := Parse(lines[8])
	if res.TotalCostUSD != 0.0347 || res.DurationMS != 18750 || res.NumTurns != 0 || res.Usage != nil || res.IsError {
		t.Errorf("result: %+v", res)
	}
}

func TestParseShapes(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []Event
	}{
		{
			name: "full init",
			line: `{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash",7,"Write"],"mcp_servers":[],"model":"m1","permissionMode":"default","claude_code_version":"2.0.1","uuid":"u"}`,
			want: []Event{{Kind: KindSystemInit, Type: "system", Subtype: "init", SessionID: "s1", UUID: "u", Cwd: "/w",
				Tools: []string{"Bash", "Write"}, Model: "m1", PermissionMode: "default", ClaudeCodeVersion: "2.0.1"}},
		},
		{
			name: "other system subtype",
			line: `{"type":"system","subtype":"compact_boundary","session_id":"s1"}`,
			want: []Event{{Kind: KindSystem, Type: "system", Subtype: "compact_boundary", SessionID: "s1"}},
		},
		{
			name: "todo",
			line: `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"a","status":"completed","activeForm":"doing a"},{"content":"b","status":"pending"}]}}]},"session_id":"s"}`,
			want: []Event{{Kind: KindTodo, Type: "assistant", SessionID: "s", MessageID: "m", ToolName: "TodoWrite", ToolUseID: "t1",
				Input: json.RawMessage(`{"todos":[{"content":"a","status":"completed","activeForm":"doing a"},{"content":"b","status":"pending"}]}`),
				Todos: []Todo{{Content: "a", Status: "completed", ActiveForm: "doing a"}, {Content: "b", Status: "pending"}}}},
		},
		{
			name: "tool result with blocks and error",
			line: `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"Exit code 1"},{"type":"image"},{"type":"text","text":"FAIL"}],"is_error":true}]},"parent_tool_use_id":"p"}`,
			want: []Event{{Kind: KindToolResult, Type: "user", ParentToolUseID: "p", ToolUseID: "t2", IsError: true, Text: "Exit code 1\nFAIL"}},
		},
		{
			name: "error result",
			line: `{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":5,"duration_api_ms":4,"num_turns":2.0,"session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":3,"cache_read_input_tokens":4},"errors":["boom"],"permission_denials":[{"tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"x"}}]}`,
			want: []Event{{Kind: KindResult, Type: "result", Subtype: "error_during_execution", IsError: true, DurationMS: 5, DurationAPIMS: 4,
				NumTurns: 2, SessionID: "s", TotalCostUSD: 0.5, Usage: &Usage{1, 2, 3, 4}, Errors: []string{"boom"},
				PermissionDenials: []PermissionDenial{{"Bash", "t", json.RawMessage(`{"command":"x"}`)}}}},
		},
		{
			name: "string content",
			line: `{"type":"user","message":{"role":"user","content":"hello"}}`,
			want: []Event{{Kind: KindUserText, Type: "user", Text: "hello"}},
		},
		{
			name: "empty assistant message",
			line: `{"type":"assistant","message":{"id":"m","content":[]},"error":"rate_limit"}`,
			want: []Event{{Kind: KindAssistantText, Type: "assistant", MessageID: "m", Error: "rate_limit"}},
		},
		{
			name: "thinking, unknown block",
			line: `{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"redacted_thinking","data":"x"}]},"sessionId":"camel"}`,
			want: []Event{
				{Kind: KindThinking, Type: "assistant", SessionID: "camel", Text: "hmm"},
				{Kind: KindUnknown, Type: "assistant", SessionID: "camel", Index: 1},
			},
		},
		{
			name: "unknown type",
			line: `{"type":"stream_event","event":{"type":"content_block_delta"}}`,
			want: []Event{{Kind: KindUnknown, Type: "stream_event"}},
		},
		{
			name: "no type, wrong field types",
			line: `{"session_id":5,"type":["x"],"message":"text","is_error":"yes"}`,
			want: []Event{{Kind: KindUnknown}},
		},
		{
			name: "wrong types inside a result",
			line: `{"type":"result","num_turns":"3","total_cost_usd":{"a":1},"duration_ms":1e300,"usage":[1],"errors":"x","is_error":1}`,
			want: []Event{{Kind: KindResult, Type: "result", DurationMS: 1 << 53}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAll([]byte(tc.line + "\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Raw == nil {
					t.Errorf("record %d has no Raw", i)
				}
				got[i].Raw, got[i].Block = nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tc.want)
				t.Errorf("\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, line := range []string{"", "  \n", "[1,2]", `"text"`, "42", "null", "{", `{"type":"x"`, "not json", `{"a":1}{"b":2}`} {
		_, err := Parse([]byte(line))
		if err == nil {
			t.Errorf("%q: no error", line)
		}
		if _, err2 := ParseAll([]byte(line)); err2 == nil {
			t.Errorf("%q: ParseAll no error", line)
		}
		wantNotObject := json.Valid([]byte(line)) || strings.TrimSpace(line) == ""
		if errors.Is(err, ErrNotObject) != wantNotObject {
			t.Errorf("%q: error %v, ErrNotObject expected %v", line, err, wantNotObject)
		}
	}
}

func TestUsage(t *testing.T) {
	u := Usage{1, 2, 3, 4}.Add(Usage{10, 20, 30, 40})
	if u != (Usage{11, 22, 33, 44}) || u.Total() != 110 {
		t.Fatalf("%+v %d", u, u.Total())
	}
}

func TestEventJSON(t *testing.T) {
	e, err := Parse([]byte(`{"type":"result","subtype":"success","result":"ok","total_cost_usd":0.25}`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back["kind"] != "result" || back["text"] != "ok" || back["total_cost_usd"] != 0.25 || back["raw"] == nil {
		t.Fatalf("%s", data)
	}
}
