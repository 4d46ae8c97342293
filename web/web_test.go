package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

func newServer(t *testing.T, checks []web.Check, guidance []string) *httptest.Server {
	t.Helper()
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: apptest.NewFakeSandbox()}, app.Config{})
	h := web.New(web.Options{Service: svc, Checks: checks, Guidance: guidance, Metrics: web.NewMetrics(svc)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHealthz(t *testing.T) {
	srv := newServer(t, nil, nil)
	resp, body := get(t, srv.URL+"/healthz")
	if resp.StatusCode != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("healthz = %d %s", resp.StatusCode, body)
	}
}

func TestReadyzNamesWhatIsMissing(t *testing.T) {
	checks := []web.Check{
		{Name: "database", Required: true, Err: func(context.Context) error { return nil }},
		{Name: "sandbox_hosts", Required: true, Err: func(context.Context) error {
			return errors.New("no sandbox host configured: set SANDBOX_HOSTS")
		}},
		{Name: "github_app", Err: func(context.Context) error { return errors.New("no GitHub App yet: open /setup") }},
	}
	srv := newServer(t, checks, []string{"No sandbox host: set SANDBOX_HOSTS=ssh://user@host"})
	resp, body := get(t, srv.URL+"/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var r struct {
		Status string `json:"status"`
		Checks []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
		Unconfigured []string `json:"unconfigured"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	if r.Status != "not ready" || len(r.Checks) != 3 || r.Checks[0].OK != true || r.Checks[1].OK ||
		!strings.Contains(r.Checks[1].Detail, "SANDBOX_HOSTS") || len(r.Unconfigured) != 1 {
		t.Fatalf("readyz = %+v", r)
	}

	// Only required checks decide readiness.
	srv = newServer(t, []web.Check{checks[0], checks[2]}, nil)
	resp, body = get(t, srv.URL+"/readyz")
	if resp.StatusCode != 200 || !strings.Contains(body, `"ready"`) {
		t.Fatalf("ready = %d %s", resp.StatusCode, body)
	}
}

func TestMetricsExposePrometheusText(t *testing.T) {
	srv := newServer(t, nil, nil)
	get(t, srv.URL+"/healthz")
	resp, body := get(t, srv.URL+"/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`asb_runs{state="queued"} 0`, "asb_queue_depth 0", "asb_event_subscribers 0",
		`asb_http_requests_total{code="200",method="GET",route="/healthz"} 1`, "go_goroutines", "asb_stats_error 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestSecurityHeadersAndJSONErrors(t *testing.T) {
	srv := newServer(t, nil, nil)
	for _, path := range []string{"/healthz", "/readyz", "/nope", "/metrics"} {
		resp, body := get(t, srv.URL+path)
		csp := resp.Header.Get("Content-Security-Policy")
		if csp == "" || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") == "" {
			t.Errorf("%s: missing nosniff or referrer policy", path)
		}
		if path == "/nope" && (resp.StatusCode != 404 || !strings.Contains(body, `"error"`)) {
			t.Errorf("404 = %d %s", resp.StatusCode, body)
		}
	}
	resp, err := http.Post(srv.URL+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz = %d", resp.StatusCode)
	}
}

func TestStatusCodes(t *testing.T) {
	for code, want := range map[string]int{
		app.EINVALID: 400, app.EUNAUTHORIZED: 401, app.EFORBIDDEN: 403, app.ENOTFOUND: 404, app.ECONFLICT: 409,
		app.ETOOLARGE: 413, app.ERATELIMIT: 429, app.EINTERNAL: 500, app.EUNAVAILABLE: 503, "something-new": 500,
	} {
		if got := web.StatusCode(code); got != want {
			t.Errorf("%s → %d, want %d", code, got, want)
		}
	}
}
