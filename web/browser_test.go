package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web/browsertest"
)

// chrome is one headless Chromium tab (see web/browsertest), with the
// short names these tests use.
type chrome struct {
	*browsertest.Chrome
	t *testing.T
}

func newChrome(t *testing.T) *chrome { return &chrome{browsertest.New(t, "dashboard"), t} }

func (c *chrome) do(steps ...chromedp.Action[chromedp.Void]) { c.t.Helper(); c.Do(steps...) }
func (c *chrome) navigate(steps ...chromedp.Action[chromedp.Void]) int64 {
	c.t.Helper()
	return c.Navigate(steps...)
}
func (c *chrome) eval(expr string) string { c.t.Helper(); return c.Eval(expr) }
func (c *chrome) waitFor(what, expr string) {
	c.t.Helper()
	c.WaitFor(what, expr, 25*time.Second)
}
func (c *chrome) pageText() string       { return c.PageText() }
func (c *chrome) screenshot(name string) { c.t.Helper(); c.Screenshot(name) }
func (c *chrome) console() string        { return c.Console() }
func (c *chrome) problems() []string     { return c.Problems() }

// js quotes s as a JavaScript string literal.
func js(s string) string { return browsertest.JS(s) }

// dashboardScript is the scripted agent of the browser test: the task
// waits for the test's go-ahead (so its events arrive after the page is
// open), then reads, runs a tool and asks; the answer finishes the run; a
// follow-up does one more step.
func dashboardScript(release <-chan struct{}) func(*apptest.FakeSandbox) {
	return func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			switch {
			case strings.Contains(turn.Prompt, "flaky"):
				<-release
				return apptest.Script{AgentSessionID: "cc-browser", Question: "Should I skip the test or fix the race?", Records: []string{
					`{"type":"system","subtype":"init","model":"scripted"}`,
					`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the flaky test."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test -run TestFlaky ./..."}}]}}`,
					`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"--- FAIL: TestFlaky (race detected)"}]}}`,
				}}
			case strings.Contains(turn.Prompt, "changelog"):
				return apptest.Script{Records: []string{`{"type":"assistant","message":{"content":[{"type":"text","text":"Changelog updated."}]}}`},
					Result: &app.AgentResult{Summary: "changelog"}}
			default:
				return apptest.Script{Records: []string{
					`{"type":"assistant","message":{"content":[{"type":"text","text":"Fixing the race as you asked."}]}}`,
					`{"type":"result","subtype":"success","result":"Race fixed.","num_turns":2,"total_cost_usd":0.01}`,
				}, Result: &app.AgentResult{Summary: "race fixed"}}
			}
		}
	}
}

func TestBrowserDashboardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	release := make(chan struct{})
	var once sync.Once
	releaseAgent := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAgent)
	e := newAPI(t, envConfig{sandbox: dashboardScript(release)})
	c := newChrome(t)
	base := e.srv.URL

	// Sign in through the gate.
	c.navigate(chromedp.Navigate(base + "/dashboard"))
	c.waitFor("the gate", `location.pathname === "/" && !!document.getElementById("token")`)
	c.do(chromedp.SendKeys(chromedp.ID("token"), testToken))
	c.navigate(chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)))
	c.waitFor("the fleet", `location.pathname === "/dashboard" && document.querySelector("h1").textContent === "Fleet"`)

	// Start a run; the repository named in the task shows as attached before sending.
	c.navigate(chromedp.Navigate(base + "/new"))
	c.do(chromedp.SendKeys(chromedp.ID("task"), "fix the flaky test in acme/api"))
	c.waitFor("the attached repository", `document.getElementById("attached").textContent.includes("Repository attached: acme/api (named in the task)")`)
	c.navigate(chromedp.Click(chromedp.ID("start")))
	c.waitFor("the session page", `location.pathname.startsWith("/s/ses_") && !!document.getElementById("live")`)
	id := app.SessionID(strings.TrimPrefix(c.eval(`location.pathname`), "/s/"))
	if got := e.view(t, id).Session.Sources; len(got) != 1 || got[0].Repo != "acme/api" {
		t.Fatalf("the run's sources = %+v, want acme/api", got)
	}

	// Live: the agent's events and its question appear without a reload.
	c.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = "yes"`))
	releaseAgent()
	c.waitFor("the tool call", `[...document.querySelectorAll(".ev-tool")].some(e => e.textContent.includes("go test -run TestFlaky"))`)
	c.waitFor("the folded tool result", `[...document.querySelectorAll(".ev-result details")].some(d => !d.open && d.textContent.includes("race detected"))`)
	c.waitFor("the question", `!!document.getElementById("answer-form") && document.querySelector(".question-text").textContent.includes("skip the test or fix the race")`)
	c.waitFor("the waiting state", `document.getElementById("session-state").textContent.includes("waiting")`)
	if got := c.eval(`String(window.__sameDocument)`); got != "yes" {
		t.Fatalf("the page reloaded to show live events (marker %q)", got)
	}
	c.screenshot("session-waiting-desktop.png")

	// The fleet singles out the waiting run.
	c.navigate(chromedp.Navigate(base + "/dashboard"))
	c.waitFor("the waiting row", `[...document.querySelectorAll("tr.waiting")].some(r => r.dataset.session === `+js(string(id))+`)`)
	c.screenshot("fleet-desktop.png")

	// At phone width the answer box is usable.
	c.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	c.navigate(chromedp.Navigate(base + "/dashboard"))
	c.screenshot("fleet-phone.png")
	c.navigate(chromedp.Navigate(base + "/s/" + string(id)))
	c.waitFor("the answer box", `!!document.getElementById("answer")`)
	if w := c.eval(`String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("at 390px the session page is %spx wide (scrolls sideways)", w)
	}
	box := c.eval(`(() => { const r = document.getElementById("answer").getBoundingClientRect(); return r.left >= 0 && r.right <= 390 && r.width >= 300 && r.height >= 40 ? "ok" : JSON.stringify(r) })()`)
	if box != "ok" {
		t.Errorf("the answer box at phone width: %s", box)
	}
	c.do(chromedp.SendKeys(chromedp.ID("answer"), "Fix the race, do not skip it."))
	c.screenshot("session-waiting-phone.png")
	c.navigate(chromedp.Click(chromedp.ID("answer-submit")))
	c.waitFor("the finished run", `document.getElementById("session-state").textContent.trim() === "done" && document.getElementById("thread").textContent.includes("Race fixed.")`)
	if !strings.Contains(c.pageText(), "Fix the race, do not skip it.") {
		t.Error("the thread does not show the answer")
	}
	c.screenshot("session-done-phone.png")

	// Follow-up, back at desktop width.
	c.do(chromedp.EmulateViewport(1280, 900))
	c.navigate(chromedp.Navigate(base + "/s/" + string(id)))
	c.do(chromedp.SendKeys(chromedp.ID("message"), "also update the changelog"))
	c.navigate(chromedp.Click(chromedp.ID("followup-submit")))
	c.waitFor("the follow-up's result", `document.getElementById("thread").textContent.includes("Changelog updated.") && document.getElementById("session-state").textContent.trim() === "done"`)
	if n := len(e.view(t, id).Runs); n != 2 {
		t.Errorf("runs = %d after the follow-up, want 2", n)
	}

	// Pin.
	c.navigate(chromedp.Click(chromedp.ID("pin-button")))
	c.waitFor("the pinned notice", `document.querySelector(".notice") && document.querySelector(".notice").textContent.startsWith("Pinned") && document.getElementById("pin-button").textContent === "Unpin"`)
	if !e.view(t, id).Session.Pinned {
		t.Error("the session is not pinned")
	}

	// Tear down, with its confirmation step.
	c.navigate(chromedp.Click(chromedp.ID("teardown-link")))
	c.waitFor("the confirmation page", `!!document.getElementById("teardown-confirm")`)
	if e.view(t, id).Session.State != app.SessionActive {
		t.Fatal("opening the confirmation tore the session down")
	}
	c.do(chromedp.Click(chromedp.ID("confirm")))
	c.navigate(chromedp.Click(chromedp.ID("teardown-confirm")))
	c.waitFor("the closed session", `document.getElementById("session-state").textContent.trim() === "closed"`)
	if e.view(t, id).Session.State != app.SessionClosed {
		t.Error("the session is not closed")
	}
	c.screenshot("session-closed-desktop.png")

	// Account: the test-connection button talks to the controller.
	c.navigate(chromedp.Navigate(base + "/account"))
	c.do(chromedp.Click(chromedp.ID("test-connection")))
	c.waitFor("a successful connection test", `document.getElementById("test-result").textContent.startsWith("OK")`)
	c.do(chromedp.SendKeys(chromedp.ID("test-token"), "wrong-token"))
	c.do(chromedp.Click(chromedp.ID("test-connection")))
	c.waitFor("a failed connection test", `document.getElementById("test-result").textContent.startsWith("Failed (401)")`)

	// The failed test fetch is the one expected error: Chromium logs a 401.
	var unexpected []string
	for _, p := range c.problems() {
		if !strings.Contains(p, "401") {
			unexpected = append(unexpected, p)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("the console has errors or CSP violations:\n%s", strings.Join(unexpected, "\n"))
	}
}

// TestBrowserReportsCSPViolations proves the console check above can
// fail: an inline script under the dashboard's own CSP is reported.
func TestBrowserReportsCSPViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	e := newAPI(t, envConfig{noRun: true})
	csp := e.do(t, "GET", "/healthz", nil).header.Get("Content-Security-Policy")
	if csp == "" {
		t.Fatal("no CSP on the dashboard's responses")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>x</title><link rel="icon" href="data:,"><p>inline</p><script>document.title = "ran"</script>`))
	}))
	t.Cleanup(srv.Close)
	c := newChrome(t)
	c.navigate(chromedp.Navigate(srv.URL + "/"))
	deadline := time.Now().Add(20 * time.Second)
	for len(c.problems()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(c.problems()) == 0 {
		t.Fatalf("an inline script under the CSP was not reported; console:\n%s", c.console())
	}
	if got := c.eval(`document.title`); got == "ran" {
		t.Error("the inline script ran despite the CSP")
	}
}
