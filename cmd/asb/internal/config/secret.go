package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// redacted is what every printing path shows instead of a set secret.
const redacted = "[redacted]"

// Secret holds a credential. Every way Go has of turning a value into text
// (fmt verbs including %#v, slog, encoding/json, encoding.TextMarshaler)
// redacts it, so a Config can be logged or dumped whole without leaking.
// The only way to the value is Reveal, which makes each use greppable.
type Secret string

// Reveal returns the credential. Call it only where the value leaves for
// its one legitimate destination (an HTTP header, an HMAC key, a box's env).
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a value was configured.
func (s Secret) IsSet() bool { return s != "" }

// String shows "[redacted]" for a set secret and "" for an unset one, so a
// log still tells the two apart.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v (and therefore test failure dumps) redacted.
func (s Secret) GoString() string {
	return "config.Secret(" + strconv.Quote(s.String()) + ")"
}

// Format covers the verbs that would otherwise bypass String, such as %x on
// the underlying string or a bad verb like %d, which fmt prints raw.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// LogValue keeps slog output redacted whatever the handler.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps JSON dumps (debug endpoints, slog's JSON handler on a
// struct) redacted.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText covers encoders that use encoding.TextMarshaler. (JSON map
// keys of a string kind bypass it, so never key a map by a Secret.)
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
