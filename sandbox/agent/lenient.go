package agent

import (
	"bytes"
	"encoding/json"
	"math"
)

// obj is a JSON object whose members are decoded on demand and leniently:
// a missing member or one of the wrong JSON type reads as the zero value,
// so format drift never fails a line.
type obj map[string]json.RawMessage

// object decodes raw as an object; anything else gives a nil obj, whose
// getters all return zero values.
func object(raw json.RawMessage) obj {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var o obj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

func asString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func asArray(raw json.RawMessage) []json.RawMessage {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

func (o obj) str(k string) string {
	s, _ := asString(o[k])
	return s
}

func (o obj) obj(k string) obj { return object(o[k]) }

func (o obj) arr(k string) []json.RawMessage { return asArray(o[k]) }

// strs reads an array of strings, skipping members that are not strings.
func (o obj) strs(k string) []string {
	var out []string
	for _, m := range o.arr(k) {
		if s, ok := asString(m); ok {
			out = append(out, s)
		}
	}
	return out
}

func (o obj) boolean(k string) bool {
	return bytes.Equal(o[k], []byte("true"))
}

// float reads a JSON number as float64 (0 for anything else, including
// numbers out of float64's range).
func (o obj) float(k string) float64 {
	raw := o[k]
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// integer reads a JSON number as int64, truncating fractions and clamping
// to ±2^53.
func (o obj) integer(k string) int64 {
	f := o.float(k)
	switch {
	case f >= 1<<53:
		return 1 << 53
	case f <= -(1 << 53):
		return -(1 << 53)
	}
	return int64(f)
}

// smallint reads a JSON number as an int clamped to int32's range, so it
// fits an int on every platform.
func (o obj) smallint(k string) int {
	n := o.integer(k)
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int(n)
}

// rawValue returns a member's raw JSON, or nil when it is absent or null.
func (o obj) rawValue(k string) json.RawMessage {
	raw := o[k]
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

func (o obj) usage(k string) *Usage {
	u := o.obj(k)
	if u == nil {
		return nil
	}
	return &Usage{
		InputTokens:              u.bigint("input_tokens"),
		OutputTokens:             u.bigint("output_tokens"),
		CacheCreationInputTokens: u.bigint("cache_creation_input_tokens"),
		CacheReadInputTokens:     u.bigint("cache_read_input_tokens"),
	}
}

// bigint reads a non-negative count, clamped to [0, 2^53].
func (o obj) bigint(k string) int64 {
	f := o.float(k)
	switch {
	case f <= 0:
		return 0
	case f >= 1<<53:
		return 1 << 53
	}
	return int64(f)
}
