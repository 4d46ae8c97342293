package agent

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzParseStream feeds a whole events file: the records are exactly
// those of its non-blank lines parsed one by one, in order; each line that
// does not parse is reported with its number while the others still
// count; and reading the file a byte at a time changes nothing. The seed
// corpus in testdata/fuzz/FuzzParseStream holds the real sample turns.
func FuzzParseStream(f *testing.F) {
	f.Add([]byte("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n\n{\"type\":\"result\",\"result\":\"ok\"}"))
	f.Add([]byte("{\"type\":\"assistant\"}\r\nnot json\n[]\n{\"type\":\"user\"}\n"))
	f.Add([]byte("\n \n\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := ParseStream(bytes.NewReader(data))
		var want []Event
		bad := 0
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			got, perr := ParseAll(line)
			if perr != nil {
				bad++
				if err == nil || !strings.Contains(err.Error(), "line "+strconv.Itoa(i+1)+":") {
					t.Fatalf("line %d does not parse (%v) but the stream error is %v", i+1, perr, err)
				}
			}
			want = append(want, got...)
		}
		if bad == 0 && err != nil {
			t.Fatalf("every line parses, yet %v", err)
		}
		if len(evs) != len(want) || len(evs) > 0 && !reflect.DeepEqual(evs, want) {
			t.Fatalf("%d records from the stream, %d from its lines", len(evs), len(want))
		}
		slow, serr := ParseStream(iotest.OneByteReader(bytes.NewReader(data)))
		if !reflect.DeepEqual(slow, evs) || (serr == nil) != (err == nil) {
			t.Fatalf("a byte at a time: %d records (%v), at once: %d (%v)", len(slow), serr, len(evs), err)
		}
	})
}
