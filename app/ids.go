package app

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func randomID(prefix string) string {
	var b [10]byte         // 80 bits: collisions are not a practical concern
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + idEncoding.EncodeToString(b[:])
}

// NewSessionID returns a fresh, unguessable session id.
func NewSessionID() SessionID { return SessionID(randomID("ses_")) }

// NewRunID returns a fresh run id.
func NewRunID() RunID { return RunID(randomID("run_")) }

// ParseSessionID validates a session id from outside: a fixed prefix and
// a small charset, so it can never carry a path, an option or a quote.
func ParseSessionID(s string) (SessionID, error) {
	if !validID(s, "ses_") {
		return "", Errorf(EINVALID, "session id must look like ses_ followed by 1 to 40 lowercase letters or digits")
	}
	return SessionID(s), nil
}

// ParseRunID validates a run id from outside.
func ParseRunID(s string) (RunID, error) {
	if !validID(s, "run_") {
		return "", Errorf(EINVALID, "run id must look like run_ followed by 1 to 40 lowercase letters or digits")
	}
	return RunID(s), nil
}

func validID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) == 0 || len(rest) > 40 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
