package agent

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func fixtureEvents(t *testing.T) []Event {
	t.Helper()
	f, err := os.Open("testdata/sample-turns.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := ParseStream(f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestSummarizeFixture(t *testing.T) {
	evs := fixtureEvents(t)
	if len(evs) != 12 {
		t.Fatalf("%d records", len(evs))
	}
	s := Summarize(evs)
	if s.SessionID != "sample-session-id" || !s.Done || s.IsError || s.Failed() || s.Subtype != "" {
		t.Errorf("outcome: %+v", s)
	}
	if s.TotalCostUSD != 0.0347 || s.DurationMS != 18750 || s.Records != 12 {
		t.Errorf("figures: %+v", s)
	}
	// The sample's result has no usage: the per-message sum stands.
	if s.Usage != (Usage{InputTokens: 630, OutputTokens: 265, CacheReadInputTokens: 315}) {
		t.Errorf("usage: %+v", s.Usage)
	}
	wantTools := map[string]int{"Read": 1, "Edit": 1, "mcp__github__add_pull_request_review_comment": 1}
	if !reflect.DeepEqual(s.ToolUses, wantTools) || s.ToolErrors != 0 {
		t.Errorf("tools: %v %d", s.ToolUses, s.ToolErrors)
	}
	if !strings.HasPrefix(s.Text(), "Successfully removed") || !strings.HasPrefix(s.LastText, "Great!") {
		t.Errorf("text: %q / %q", s.Text(), s.LastText)
	}
	if s.Model != "claude-test-model" {
		t.Errorf("model %q", s.Model)
	}
	if SessionID(evs) != "sample-session-id" || !reflect.DeepEqual(ToolCounts(evs), wantTools) || Checklist(evs) != nil {
		t.Error("helpers disagree with Summarize")
	}
	r, ok := FinalResult(evs)
	if !ok || r.Kind != KindResult {
		t.Errorf("FinalResult: %v %+v", ok, r)
	}
	if _, ok := FinalResult(evs[:5]); ok {
		t.Error("FinalResult without a result")
	}

	// Incremental Add over a prefix: not done yet, usage so far.
	var inc Summary
	for _, e := range evs[:3] {
		inc.Add(e)
	}
	if inc.Done || inc.Usage != (Usage{InputTokens: 100, OutputTokens: 75, CacheReadInputTokens: 50}) || inc.SessionID != "sample-session-id" {
		t.Errorf("prefix: %+v", inc)
	}
}

func TestSummarizeShapes(t *testing.T) {
	stream := strings.Join([]string{
		`{"type":"system","subtype":"hook_response","session_id":"early"}`,
		`{"type":"system","subtype":"init","session_id":"sid","model":"m-init"}`,
		// One message split over two lines repeating the usage, as newer releases do.
		`{"type":"assistant","message":{"id":"m1","model":"m-msg","content":[{"type":"text","text":"plan"}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"sid"}`,
		`{"type":"assistant","message":{"id":"m1","model":"m-msg","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"a","status":"pending"}]}}],"usage":{"input_tokens":10,"output_tokens":7}},"session_id":"sid"}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"false"}},{"type":"tool_use","id":"t3","name":"TodoWrite","input":{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"in_progress"}]}}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"sid"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"Exit code 1","is_error":true},{"type":"tool_result","tool_use_id":"t3","content":"ok"}]},"session_id":"sid"}`,
		`{"type":"system","subtype":"init","session_id":"other"}`,
		`{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":9,"session_id":"sid","total_cost_usd":1.5,"usage":{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":7},"errors":["max turns"]}`,
	}, "\n")
	evs, err := ParseStream(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(evs)
	if s.SessionID != "sid" || s.Model != "m-init" {
		t.Errorf("session %q model %q", s.SessionID, s.Model)
	}
	if !s.Failed() || s.Text() != "max turns" || s.NumTurns != 9 || s.TotalCostUSD != 1.5 {
		t.Errorf("outcome: %+v", s)
	}
	if s.Usage != (Usage{InputTokens: 100, OutputTokens: 50, CacheReadInputTokens: 7}) {
		t.Errorf("usage: %+v", s.Usage)
	}
	if want := []Todo{{Content: "a", Status: "completed"}, {Content: "b", Status: "in_progress"}}; !reflect.DeepEqual(s.Todos, want) {
		t.Errorf("todos: %+v", s.Todos)
	}
	if !reflect.DeepEqual(s.ToolUses, map[string]int{"TodoWrite": 2, "Bash": 1}) || s.ToolErrors != 1 {
		t.Errorf("tools: %v errors %d", s.ToolUses, s.ToolErrors)
	}

	// Before the result, usage is per distinct message, latest value.
	pre := Summarize(evs[:6])
	if pre.Usage != (Usage{InputTokens: 11, OutputTokens: 8}) || pre.Done {
		t.Errorf("pre-result usage: %+v", pre.Usage)
	}
	// Without an init, the first session id seen and the message's model.
	noInit := Summarize(evs[2:4])
	if noInit.SessionID != "sid" || noInit.Model != "m-msg" || noInit.Text() != "plan" {
		t.Errorf("no init: %+v", noInit)
	}
}

func TestSplitLines(t *testing.T) {
	lines, n := SplitLines([]byte("a\r\nb\n\nc"))
	if n != 6 || len(lines) != 3 || string(lines[0]) != "a" || string(lines[1]) != "b" || len(lines[2]) != 0 {
		t.Fatalf("%q %d", lines, n)
	}
	if lines, n := SplitLines(nil); lines != nil || n != 0 {
		t.Fatal("nil input")
	}
	// Reading a growing file in arbitrary chunks sees every line exactly once.
	data, err := os.ReadFile("testdata/sample-turns.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := SplitLines(data)
	for _, chunk := range []int{1, 7, 100, 4096} {
		var got [][]byte
		var pending []byte
		for off := 0; off < len(data); off += chunk {
			pending = append(pending, data[off:min(off+chunk, len(data))]...)
			ls, n := SplitLines(pending)
			for _, l := range ls {
				got = append(got, bytes.Clone(l))
			}
			pending = append([]byte(nil), pending[n:]...)
		}
		if len(pending) != 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("chunk %d: %d lines, %d pending", chunk, len(got), len(pending))
		}
	}
}

func TestParseStreamErrors(t *testing.T) {
	in := "{\"type\":\"result\",\"result\":\"x\"}\n\ngarbage\n[1]\n{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}"
	evs, err := ParseStream(strings.NewReader(in))
	if len(evs) != 2 || evs[0].Kind != KindResult || evs[1].Kind != KindSystemInit {
		t.Fatalf("events: %+v", evs)
	}
	if err == nil || !strings.Contains(err.Error(), "line 3:") || !strings.Contains(err.Error(), "line 4:") || !errors.Is(err, ErrNotObject) {
		t.Fatalf("err: %v", err)
	}

	boom := errors.New("boom")
	evs, err = ParseStream(io.MultiReader(strings.NewReader("{\"type\":\"x\"}\n"), iotest.ErrReader(boom)))
	if len(evs) != 1 || !errors.Is(err, boom) {
		t.Fatalf("read error: %v %+v", err, evs)
	}
}
