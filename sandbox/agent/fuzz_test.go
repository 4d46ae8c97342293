package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzParse checks that no input panics the parser, that every valid JSON
// object parses into at least one record (unknown kinds are fine), that
// anything else is rejected, and that Parse agrees with ParseAll. The seed
// corpus in testdata/fuzz/FuzzParse holds the real sample lines.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"type":null}`, `{"type":"assistant","message":{"content":null}}`,
		`{"type":"user","message":{"content":[null,1,"x",{"type":"tool_result","content":[null]}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"TodoWrite","input":{"todos":[1,{"content":2}]}}]}}`,
		`{"type":"result","num_turns":-1e400}`, `[]`, `{"a":`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		evs, err := ParseAll(line)
		trimmed := bytes.TrimSpace(line)
		isObject := json.Valid(trimmed) && len(trimmed) > 0 && trimmed[0] == '{'
		if isObject {
			if err != nil {
				t.Fatalf("valid object rejected: %v", err)
			}
			if len(evs) == 0 {
				t.Fatal("no records for a valid object")
			}
		} else if err == nil {
			t.Fatalf("non-object accepted: %+v", evs)
		}
		if err != nil {
			if json.Valid(trimmed) != errors.Is(err, ErrNotObject) && len(trimmed) > 0 {
				t.Fatalf("error class: valid=%v err=%v", json.Valid(trimmed), err)
			}
			return
		}
		for _, e := range evs {
			if e.Kind == "" {
				t.Fatalf("record without a kind: %+v", e)
			}
			if !bytes.Equal(e.Raw, trimmed) {
				t.Fatal("Raw is not the line")
			}
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("record does not marshal: %v", err)
			}
		}
		first, err := Parse(line)
		if err != nil || !reflect.DeepEqual(first, evs[0]) {
			t.Fatalf("Parse disagrees with ParseAll: %v", err)
		}
		var s Summary
		for _, e := range evs {
			s.Add(e)
		}
		_ = s.Text()
	})
}
