package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
)

// The comparison must run, over equal-length inputs, whatever the length
// of the presented token: an early return on length would tell an
// attacker how long the token is.
func TestTokenComparedInConstantTime(t *testing.T) {
	type call struct{ a, b int }
	var calls []call
	orig := constantTimeEqual
	constantTimeEqual = func(x, y []byte) int {
		calls = append(calls, call{len(x), len(y)})
		return orig(x, y)
	}
	t.Cleanup(func() { constantTimeEqual = orig })

	const token = "asb_0123456789abcdef0123456789abcdef"
	auth := OperatorTokenAuthenticator(token)
	for _, tc := range []struct {
		presented string
		ok        bool
	}{
		{"x", false},
		{token[:len(token)-1], false},
		{token + "0", false},
		{strings.Repeat("a", len(token)), false},
		{strings.Repeat("b", 4096), false},
		{token, true},
	} {
		calls = nil
		r := httptest.NewRequest("GET", "/fleet.json", nil)
		r.Header.Set("Authorization", "Bearer "+tc.presented)
		actor, err := auth.Authenticate(r)
		if (err == nil) != tc.ok {
			t.Errorf("token of length %d: err = %v, want ok=%v", len(tc.presented), err, tc.ok)
		}
		if tc.ok && actor != app.OperatorActor {
			t.Errorf("actor = %+v", actor)
		}
		if len(calls) != 1 || calls[0].a != calls[0].b || calls[0].a != 32 {
			t.Errorf("token of length %d: compare calls = %+v, want one over two 32-byte digests", len(tc.presented), calls)
		}
	}

	// No configured token accepts nobody, not even the empty string, and
	// still compares.
	calls = nil
	empty := OperatorTokenAuthenticator("")
	r := httptest.NewRequest("GET", "/fleet.json", nil)
	r.Header.Set("Authorization", "Bearer anything")
	if _, err := empty.Authenticate(r); app.ErrorCode(err) != app.EUNAUTHORIZED || len(calls) != 1 {
		t.Fatalf("empty token: err = %v, calls = %d", err, len(calls))
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		headers []string
		want    string
		ok      bool
	}{
		{nil, "", false},
		{[]string{"Bearer abc"}, "abc", true},
		{[]string{"bearer abc"}, "abc", true},
		{[]string{"BEARER  abc "}, "abc", true},
		{[]string{"Basic YWJjOmRlZg=="}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Bearer abc", "Bearer def"}, "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		for _, h := range tc.headers {
			r.Header.Add("Authorization", h)
		}
		got, ok := BearerToken(r)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %q %v, want %q %v", tc.headers, got, ok, tc.want, tc.ok)
		}
	}
}
