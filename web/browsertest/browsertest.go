// Package browsertest drives Debian's headless Chromium for end-to-end
// dashboard tests outside package web (cmd/asb runs them against a real
// `asb serve`): one tab whose console is recorded from the start, with
// Content-Security-Policy violations reported as console errors, bounded
// steps, and screenshots written as test artifacts.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// Chrome is one headless Chromium tab.
type Chrome struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	// Artifacts is the folder screenshots go to.
	Artifacts string
}

// cspReporter runs in every document before its own scripts. DevTools
// injects it, so the page's CSP does not apply to it.
const cspReporter = `document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline code"));
});`

// New starts Chromium (skipping the test when it is not installed) and
// writes screenshots under $ASB_TEST_ARTIFACTS/<folder> (a temporary
// folder's asb-test-artifacts when unset).
func New(t *testing.T, folder string) *Chrome {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Skipf("browser tests need Debian's chromium at %s (apt-get install chromium; .ci/run installs it): %v", ChromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first action starts the browser; its context must not time out
	// (that would end the browser), so the start is bounded from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not start within 60s")
	}
	c := &Chrome{t: t, ctx: ctx, Artifacts: os.Getenv("ASB_TEST_ARTIFACTS")}
	if c.Artifacts == "" {
		c.Artifacts = filepath.Join(os.TempDir(), "asb-test-artifacts")
	}
	c.Artifacts = filepath.Join(c.Artifacts, folder)
	if err := os.MkdirAll(c.Artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			c.mu.Unlock()
		}
	}()
	c.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspReporter})
		return err
	}))
	return c
}

// bounded returns a context for one step: a hung page fails the test
// instead of hanging it.
func (c *Chrome) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, 30*time.Second)
}

// Do runs steps that do not load a page.
func (c *Chrome) Do(steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := c.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.t.Fatalf("browser: %v\nconsole:\n%s", err, c.Console())
	}
}

// Navigate runs steps that load a page (a link, a form), waits for it and
// returns its HTTP status.
func (c *Chrome) Navigate(steps ...chromedp.Action[chromedp.Void]) int64 {
	c.t.Helper()
	ctx, cancel := c.bounded()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		c.t.Fatalf("browser navigation: %v\nconsole:\n%s", err, c.Console())
	}
	return resp.Status
}

// Eval evaluates a JavaScript expression that yields a string.
func (c *Chrome) Eval(expr string) string {
	c.t.Helper()
	ctx, cancel := c.bounded()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		c.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor polls a JavaScript condition in the current page for at most
// timeout.
func (c *Chrome) WaitFor(what, expr string, timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, timeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(25*time.Millisecond),
		chromedp.WithPollingTimeout(timeout))); err != nil {
		c.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s\nconsole:\n%s", what, expr, err, c.PageText(), c.Console())
	}
}

// PageText is the current page's visible text.
func (c *Chrome) PageText() string {
	ctx, cancel := c.bounded()
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// Screenshot writes a full-page PNG into the artifacts folder.
func (c *Chrome) Screenshot(name string) {
	c.t.Helper()
	ctx, cancel := c.bounded()
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(c.Artifacts, name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("screenshot: %s", path)
}

// Console is every console message so far, one a line.
func (c *Chrome) Console() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, m := range c.messages {
		fmt.Fprintf(&b, "  %s [%s] %s:%d\n", m, m.Source, m.URL, m.Line+1)
	}
	return b.String()
}

// Problems returns console errors, exceptions and CSP reports.
func (c *Chrome) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.messages {
		if m.IsException() || m.Type == chromedp.ConsoleError || strings.Contains(m.Text, "Content Security Policy") ||
			strings.Contains(m.Text, "CSP violation") {
			out = append(out, m.String())
		}
	}
	return out
}

// JS quotes s as a JavaScript string literal.
func JS(s string) string { return fmt.Sprintf("%q", s) }
