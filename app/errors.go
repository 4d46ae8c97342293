package app

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes. The set is deliberately small: each surface maps a code to
// its own vocabulary exactly once (HTTP status in web, tool error in mcp,
// a reply comment in github).
const (
	EINVALID      = "invalid"      // the request is malformed or breaks a limit
	ENOTFOUND     = "not_found"    // the object does not exist, or the caller may not see it
	ECONFLICT     = "conflict"     // the object is not in a state that allows the request
	EUNAUTHORIZED = "unauthorized" // no or wrong credentials
	EFORBIDDEN    = "forbidden"    // credentials fine, action not allowed (quota, plan, permission)
	ETOOLARGE     = "too_large"    // a body or field exceeds its limit
	ERATELIMIT    = "rate_limited" // too many requests; retry later
	EUNAVAILABLE  = "unavailable"  // a dependency (host, GitHub) is down or not configured
	EINTERNAL     = "internal"     // a bug or an unexpected failure; details are only logged
)

// Error is the one error type that crosses the core's boundary to a
// surface. Message is safe to show to the caller: it never carries a
// secret or an argv.
type Error struct {
	Code    string
	Message string
	// Err is the underlying cause, for logs and errors.Is; never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		if cause := e.Err.Error(); !strings.Contains(e.Message, cause) {
			return fmt.Sprintf("%s: %s: %s", e.Code, e.Message, cause)
		}
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted, caller-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error whose message is safe to show and whose cause is kept for logs.
func WrapError(code string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err. Errors that are not
// *Error are internal and their text is hidden.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
