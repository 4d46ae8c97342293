package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	srv := w.srv
	client := func() *github.Client { return w.userClient(t, "alice") }

	// 5xx: the next two repository GETs, other paths untouched.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Method: "GET", Path: "/api/v3/repos/*/*", Times: 2})
	c := client()
	_, _, err := c.Users.Get(w.ctx, "alice")
	must(t, err, "other path")
	for i := 0; i < 2; i++ {
		_, _, err = c.Repositories.Get(w.ctx, "acme", "widgets")
		wantStatus(t, err, http.StatusBadGateway, "injected 5xx")
	}
	_, _, err = c.Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "after the fault ran out")

	srv.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Status: 503, Path: "/api/v3/"})
	_, _, err = c.Repositories.Get(w.ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusServiceUnavailable, "prefix path")

	// Primary rate limit: *github.RateLimitError with the reset time.
	reset := time.Now().Add(2 * time.Minute)
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultRateLimit, Reset: reset})
	_, _, err = client().Repositories.Get(w.ctx, "acme", "widgets")
	var rle *github.RateLimitError
	if !errors.As(err, &rle) || rle.Rate.Reset.Unix() != reset.Unix() || rle.Response.StatusCode != 403 {
		t.Fatalf("want *github.RateLimitError, got %T %v", err, err)
	}

	// Secondary limit, 403: *github.AbuseRateLimitError with RetryAfter.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultSecondaryRateLimit, RetryAfter: 30 * time.Second})
	_, _, err = client().Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	var arle *github.AbuseRateLimitError
	if !errors.As(err, &arle) || arle.GetRetryAfter() != 30*time.Second {
		t.Fatalf("want *github.AbuseRateLimitError with RetryAfter 30s, got %T %v", err, err)
	}

	// Secondary limit, 429: a plain *github.ErrorResponse in v62, with Retry-After.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultTooManyRequests, RetryAfter: 2 * time.Second})
	_, _, err = client().Repositories.Get(w.ctx, "acme", "widgets")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusTooManyRequests || er.Response.Header.Get("Retry-After") != "2" {
		t.Fatalf("want *github.ErrorResponse 429, got %T %v", err, err)
	}

	// Hang: the caller's deadline ends it.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultHang})
	ctx, cancel := context.WithTimeout(w.ctx, 200*time.Millisecond)
	_, _, err = client().Repositories.Get(ctx, "acme", "widgets")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %T %v", err, err)
	}

	// Drop: a transport error, no response.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultDrop})
	_, resp, err := client().Repositories.Get(w.ctx, "acme", "widgets")
	if err == nil || errors.As(err, &er) || (resp != nil && resp.Response != nil) {
		t.Fatalf("drop: %T %v", err, err)
	}

	// A failing token refresh surfaces as ghinstallation's HTTPError.
	srv.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Path: "/api/v3/app/installations/*/access_tokens", Times: -1})
	bot, _ := w.botClient(t)
	_, _, err = bot.Repositories.Get(w.ctx, "acme", "widgets")
	var he *ghinstallation.HTTPError
	if !errors.As(err, &he) || he.Response.StatusCode != http.StatusBadGateway {
		t.Fatalf("refresh failure: %T %v", err, err)
	}
	srv.ClearFaults()
	_, _, err = bot.Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "after ClearFaults")

	kinds := map[githubtest.FaultKind]int{}
	for _, q := range srv.Requests(nil) {
		kinds[q.Fault]++
	}
	if kinds[githubtest.FaultServerError] != 4 || kinds[githubtest.FaultHang] != 1 || kinds[githubtest.FaultRateLimit] != 1 {
		t.Fatalf("recorded faults %v", kinds)
	}
}
