package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// formatPoll writes a pollResult the way pollScript prints it.
func formatPoll(r pollResult) []byte {
	b2i := map[bool]int{false: 0, true: 1}
	exit := ""
	if r.exited {
		exit = fmt.Sprint(r.exitCode)
	}
	return fmt.Appendf(nil, "asb-poll 1\nlaunched=%d\nexit=%s\nalive=%d\nsize=%d\nqlen=%d\n\n%s%s",
		b2i[r.launched], exit, b2i[r.alive], r.size, len(r.question), r.question, r.chunk)
}

// FuzzParsePoll feeds the poll parser whatever a box might print, and
// the record splitter the chunk it finds. Properties: the chunk is the
// tail of the answer and the question fits in what came before it; an
// answer printed back in pollScript's format parses to the same result;
// the records are the complete, non-blank, trimmed lines of the consumed
// part of the chunk and the offset moves exactly past them, so the next
// poll starts on a line boundary and nothing is read twice or skipped. The
// seed corpus in testdata/fuzz/FuzzParsePoll holds answers carrying the
// real stream-json sample turns.
func FuzzParsePoll(f *testing.F) {
	f.Add([]byte("asb-poll 1\nlaunched=1\nexit=\nalive=1\nsize=12\nqlen=0\n\n{\"type\":1}\n"), int64(0))
	f.Add([]byte("asb-poll 1\nlaunched=1\nexit=0\nalive=0\nsize=30\nqlen=9\n\nquestion?{\"a\":1}\n{\"type\":\"result\"}"), int64(10))
	f.Add([]byte("asb-poll 1\nlaunched=0\nexit=\nalive=0\nsize=0\nqlen=0\n\n"), int64(0))
	f.Add([]byte("asb-poll 1\nexit=-1\nsize=-5\nqlen=3\n\nab"), int64(0))
	f.Add([]byte("garbage"), int64(-1))
	f.Fuzz(func(t *testing.T, out []byte, offset int64) {
		r, err := parsePoll(out)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(out, r.chunk) {
			t.Fatal("the chunk is not the tail of the answer")
		}
		if len(r.question) > len(out)-len(r.chunk) {
			t.Fatalf("question of %d bytes from an answer of %d", len(r.question), len(out))
		}
		// Round trip, for questions the script could print: it trims
		// nothing, so a question that survives TrimSpace unchanged.
		again, err := parsePoll(formatPoll(r))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip:\n got %+v %v\nwant %+v", again, err, r)
		}

		if offset < 0 {
			offset = -(offset + 1)
		}
		p := progressFrom(r, offset)
		consumed := p.Offset - offset
		if consumed < 0 || consumed > int64(len(r.chunk)) {
			t.Fatalf("offset moved by %d over a chunk of %d", consumed, len(r.chunk))
		}
		done := r.chunk[:consumed]
		if !p.Exited && len(done) > 0 && done[len(done)-1] != '\n' {
			t.Fatalf("stopped mid-line before the end of the stream: %q", done)
		}
		if p.Exited && !r.exited || p.Question != "" && !p.Exited {
			t.Fatalf("exited %v (answer %v), question %q", p.Exited, r.exited, p.Question)
		}
		var want [][]byte
		for _, line := range strings.Split(string(done), "\n") {
			if l := bytes.TrimSpace([]byte(line)); len(l) > 0 {
				want = append(want, l)
			}
		}
		if len(want) != len(p.Records) {
			t.Fatalf("%d records from %d lines: %q", len(p.Records), len(want), done)
		}
		for i := range want {
			if !bytes.Equal(want[i], p.Records[i]) {
				t.Fatalf("record %d: %q, want %q", i, p.Records[i], want[i])
			}
		}
		if !r.exited {
			// What is left is the start of a line the next poll completes.
			if bytes.IndexByte(r.chunk[consumed:], '\n') >= 0 {
				t.Fatalf("left a complete line unread: %q", r.chunk[consumed:])
			}
		}
	})
}

// FuzzListRoundTrip: whatever `msb ls --format json` printed, every entry
// parsed has a name, a creation time in UTC, and printing the entries
// back in msb's shape parses to the same entries. The seed corpus in
// testdata/fuzz/FuzzListRoundTrip holds msb 0.6's documented output.
func FuzzListRoundTrip(f *testing.F) {
	f.Add([]byte(`[{"name":"box1","status":"Running","created_at":"2026-08-15T02:21:00.123456+00:00","image":"python:3.12"}]`))
	f.Add([]byte("[\n  {\n    \"name\": \"asb-ses_a\",\n    \"status\": \"Crashed\",\n    \"created_at\": null,\n    \"image\": \"-\"\n  }\n]\n"))
	f.Add([]byte(`[{"name":"a","created_at":"2026-08-15 02:21:00"},{"name":""},{"status":"Stopped"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := ParseList(b)
		if err != nil {
			return
		}
		type raw struct {
			Name      string  `json:"name"`
			Status    string  `json:"status"`
			CreatedAt *string `json:"created_at"`
			Image     string  `json:"image"`
		}
		var back []raw
		for _, e := range list {
			if e.Name == "" {
				t.Fatal("an entry without a name survived")
			}
			if !e.CreatedAt.IsZero() && e.CreatedAt.Location() != time.UTC {
				t.Fatalf("created_at not in UTC: %v", e.CreatedAt)
			}
			r := raw{Name: e.Name, Status: e.Status, Image: e.Image}
			if !e.CreatedAt.IsZero() {
				s := e.CreatedAt.Format(time.RFC3339Nano)
				r.CreatedAt = &s
			}
			back = append(back, r)
		}
		printed, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseList(printed)
		if err != nil || len(again) != len(list) {
			t.Fatalf("reprinted list: %d entries, %v", len(again), err)
		}
		for i := range list {
			a, b := list[i], again[i]
			if a.Name != b.Name || a.Status != b.Status || a.Image != b.Image || !a.CreatedAt.Equal(b.CreatedAt) {
				t.Fatalf("entry %d: %+v, reprinted %+v", i, a, b)
			}
		}
	})
}

// FuzzMetricsRoundTrip: `msb metrics --format json` output that parses
// is an object or an array, and the samples printed back as an array
// parse to the same samples. The seed corpus in
// testdata/fuzz/FuzzMetricsRoundTrip holds msb 0.6's documented fields.
func FuzzMetricsRoundTrip(f *testing.F) {
	f.Add([]byte(`{"name":"a","state":"running","cpus":1,"timestamp":"2026-08-15T02:21:00Z","cpu_percent":12.5,"vcpu_time_ns":1,"memory_bytes":1048576,"memory_available_bytes":null,"memory_limit_bytes":536870912,"uptime_secs":3.5}`))
	f.Add([]byte(`[{"name":"a","state":"stalled"},{"name":"b","state":"exited","cpu_percent":-0}]`))
	f.Add([]byte(`  null `))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ParseMetrics(b)
		if err != nil {
			return
		}
		if trimmed := bytes.TrimSpace(b); len(trimmed) == 0 || !strings.ContainsRune("{[n", rune(trimmed[0])) {
			t.Fatalf("accepted %q", b)
		}
		printed, err := json.Marshal(ms)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseMetrics(printed)
		if err != nil || len(again) != len(ms) {
			t.Fatalf("reprinted: %d samples, %v", len(again), err)
		}
		for i := range ms {
			if again[i] != ms[i] {
				t.Fatalf("sample %d: %+v, reprinted %+v", i, ms[i], again[i])
			}
		}
	})
}
