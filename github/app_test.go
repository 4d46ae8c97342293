package github

import (
	"context"
	"errors"
	"net/http"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

func TestAPIErrorMapping(t *testing.T) {
	resp := func(status int, h http.Header) *http.Response {
		if h == nil {
			h = http.Header{}
		}
		return &http.Response{StatusCode: status, Header: h, Request: &http.Request{Method: "GET"}}
	}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{&gh.RateLimitError{Response: resp(403, nil)}, app.ERATELIMIT},
		{&gh.AbuseRateLimitError{Response: resp(403, nil)}, app.ERATELIMIT},
		{&gh.ErrorResponse{Response: resp(429, nil)}, app.ERATELIMIT},
		{&gh.ErrorResponse{Response: resp(403, http.Header{"Retry-After": {"60"}})}, app.ERATELIMIT},
		{&gh.ErrorResponse{Response: resp(502, nil)}, app.EUNAVAILABLE},
		{&gh.ErrorResponse{Response: resp(403, nil)}, app.EFORBIDDEN},
		{&gh.ErrorResponse{Response: resp(404, nil)}, app.ENOTFOUND},
		{&gh.ErrorResponse{Response: resp(422, nil)}, app.EINVALID},
		{&gh.ErrorResponse{Response: resp(401, nil)}, app.EUNAUTHORIZED},
		{context.DeadlineExceeded, app.EUNAVAILABLE},
		{&gh.AcceptedError{}, app.EUNAVAILABLE},
		{app.Errorf(app.ECONFLICT, "x"), app.ECONFLICT},
		{errors.New("boom"), app.EINTERNAL},
	} {
		if got := app.ErrorCode(APIError(tc.err, "do it")); got != tc.code {
			t.Errorf("%T: code %s, want %s", tc.err, got, tc.code)
		}
	}
	if APIError(nil, "x") != nil {
		t.Fatal("nil must stay nil")
	}
}

func TestAppInstallationAndPermission(t *testing.T) {
	fx := newForgeFixture(t)
	ctx := context.Background()
	id, err := fx.app.InstallationFor(ctx, "acme/widgets")
	if err != nil || id != fx.inst.ID {
		t.Fatalf("InstallationFor = %d, %v", id, err)
	}
	n := len(fx.srv.Requests(nil))
	if id2, _ := fx.app.InstallationFor(ctx, "ACME/widgets"); id2 != id || len(fx.srv.Requests(nil)) != n {
		t.Fatal("InstallationFor is not cached")
	}
	c1, _ := fx.app.InstallationClient(ctx, id)
	c2, _ := fx.app.InstallationClient(ctx, id)
	if c1 == nil || c1 != c2 {
		t.Fatal("InstallationClient is not cached")
	}
	for login, want := range map[string]string{"alice": "write", "mallory": "read"} { // public repository
		if login == "mallory" {
			fx.srv.AddUser(login)
		}
		got, err := fx.app.Permission(ctx, id, "acme/widgets", login)
		if err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", login, got, err, want)
		}
	}
	tok, err := fx.app.RepoToken(ctx, "acme/widgets", true)
	if err != nil || tok == "" {
		t.Fatalf("RepoToken: %v", err)
	}
	if _, err := fx.app.InstallationFor(ctx, "nobody/none"); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("unknown repo: %v", err)
	}
	// "Not installed" is remembered for a while: asking again costs no request.
	n = len(fx.srv.Requests(nil))
	if _, err := fx.app.InstallationFor(ctx, "Nobody/None"); app.ErrorCode(err) != app.ENOTFOUND || len(fx.srv.Requests(nil)) != n {
		t.Fatalf("a repository without the App was asked about again: %v, %d requests", err, len(fx.srv.Requests(nil))-n)
	}
	fx.app.ForgetInstallation("nobody/none")
	if _, err := fx.app.InstallationFor(ctx, "nobody/none"); app.ErrorCode(err) != app.ENOTFOUND || len(fx.srv.Requests(nil)) != n+1 {
		t.Fatalf("after ForgetInstallation: %v, %d requests", err, len(fx.srv.Requests(nil))-n)
	}
	if _, err := fx.app.InstallationFor(ctx, "bad"); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("bad repo: %v", err)
	}

}
