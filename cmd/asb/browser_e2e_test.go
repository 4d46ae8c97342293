package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/asb-dev/asb/github/githubtest"
	"github.com/asb-dev/asb/web/browsertest"
)

// browserTask is the run the browser starts: the scripted agent waits
// (bounded) for a flag the test drops into the box once the session page
// is open, so its events can only arrive live; it tries to read the MCP
// servers' headers (the guard hook denies it); then it asks, and the
// answer lets it finish.
const browserTask = `Check the build and ask before going on.
#!asb-script
run i=0; while [ ! -f release-flag ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo released after $i polls
say the build looks fine
run cat /workspace/.agent.runs/*/asb-mcp-servers.json
ask Should I also update the changelog?
say updating the changelog as told`

// TestBrowserDashboardAgainstTheRealStack drives the dashboard of a real
// `asb serve` (one local fake-msb host, the scripted agent in the box, the
// hook binary, a fake GitHub) in headless Chromium: sign in with the
// token; store a GitHub token and an MCP server on the integrations page;
// the new-run page offers the token's repositories; start a run that
// asks, see its events arrive without a reload, answer it at phone width,
// see it finish; follow up; pin; tear down with confirmation; remove the
// MCP server and the GitHub account. The console has no error or CSP
// violation throughout.
func TestBrowserDashboardAgainstTheRealStack(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	srv := githubtest.New(t, githubtest.Options{PollInterval: 1})
	srv.AddUser("octo")
	srv.SetProfile("octo", "Octo Cat", "")
	srv.AddOrg("acme", "octo")
	srv.AddRepo(githubtest.RepoSpec{Owner: "octo", Name: "api", Private: true})
	srv.CreateRepo("acme", "web", nil)
	srv.SetPermission("acme/web", "octo", "write")
	ghToken := srv.AddToken("octo", "repo", "read:org")
	const mcpSecret = "Bearer browser-mcp-secret-0123"

	st, stop := serveWithGitHub(t, srv)
	defer stop()
	fake, dataDir, logs, addr := st.fake, st.dataDir, st.logs, st.addr
	base := "http://" + addr
	c := browsertest.New(t, "dashboard-e2e")
	wait := func(what, expr string) { t.Helper(); c.WaitFor(what, expr, 60*time.Second) }

	// Sign in through the gate.
	c.Navigate(chromedp.Navigate(base + "/dashboard"))
	wait("the gate", `location.pathname === "/" && !!document.getElementById("token")`)
	c.Do(chromedp.SendKeys(chromedp.ID("token"), e2eToken))
	c.Navigate(chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)))
	wait("the fleet", `location.pathname === "/dashboard" && document.querySelector("h1").textContent === "Fleet"`)

	// Integrations: a GitHub token, probed against the fake GitHub.
	c.Navigate(chromedp.Navigate(base + "/integrations"))
	c.Do(chromedp.SendKeys(chromedp.ID("gh-token"), ghToken))
	c.Navigate(chromedp.Click(chromedp.ID("gh-add")))
	wait("the stored account", `document.querySelector(".notice") && document.querySelector(".notice").textContent.includes("Added GitHub account octo (organisations: acme") &&
		document.querySelector("#github-accounts td").textContent.includes("octo")`)
	// An MCP server with a secret header; a bad URL is refused next to its field first.
	c.Do(chromedp.SendKeys(chromedp.ID("mcp-name"), "docs"))
	c.Do(chromedp.SendKeys(chromedp.ID("mcp-url"), "ftp://docs.example.com/mcp"))
	c.Do(chromedp.SendKeys(chromedp.ID("mcp-headers"), "Authorization: "+mcpSecret))
	c.Navigate(chromedp.Click(chromedp.ID("mcp-add")))
	wait("the URL error", `!!document.getElementById("mcp-url-error") && document.getElementById("mcp-headers").value === ""`)
	c.Do(chromedp.Evaluate[chromedp.Void](`document.getElementById("mcp-url").value = ""`))
	c.Do(chromedp.SendKeys(chromedp.ID("mcp-url"), "https://docs.example.com/mcp"))
	c.Do(chromedp.SendKeys(chromedp.ID("mcp-headers"), "Authorization: "+mcpSecret))
	c.Navigate(chromedp.Click(chromedp.ID("mcp-add")))
	wait("the stored MCP server", `!!document.querySelector("#mcp-servers tr[data-server]") && document.getElementById("mcp-servers").textContent.includes("Authorization")`)
	if strings.Contains(c.Eval(`document.documentElement.outerHTML`), "browser-mcp-secret") {
		t.Fatal("the MCP header value is in the page")
	}
	c.Screenshot("integrations-desktop.png")

	// New run: the picker offers what the stored token can push to.
	c.Navigate(chromedp.Navigate(base + "/new"))
	wait("the repository picker", `[...document.querySelectorAll("#repo-list option")].map(o => o.value).join(",") === "acme/web,octo/api"`)
	c.Do(chromedp.SendKeys(chromedp.ID("task"), browserTask))
	c.Navigate(chromedp.Click(chromedp.ID("start")))
	wait("the session page", `location.pathname.startsWith("/s/ses_") && !!document.getElementById("live")`)

	// Live: release the agent only now; its events and question appear without a reload.
	c.Do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = "yes"`))
	waitUntil(t, "the agent's box to take the flag", 60*time.Second, func() bool {
		for _, b := range fake.Boxes() {
			if _, _, code := fake.Run("exec", b, "--", "sh", "-c", "test -d /workspace && touch /workspace/release-flag"); code == 0 {
				return true
			}
		}
		return false
	})
	wait("the released tool call", `document.getElementById("thread").textContent.includes("released after")`)
	wait("the guard's denial", `document.getElementById("thread").textContent.includes("asb-mcp-servers.json (a credential file")`)
	wait("the question", `!!document.getElementById("answer-form") && document.querySelector(".question-text").textContent.includes("also update the changelog")`)
	wait("the waiting state", `document.getElementById("session-state").textContent.includes("waiting")`)
	if got := c.Eval(`String(window.__sameDocument)`); got != "yes" {
		t.Fatalf("the page reloaded to show live events (marker %q)", got)
	}
	sessionPath := c.Eval(`location.pathname`)
	c.Screenshot("e2e-session-waiting-desktop.png")

	// Answer at phone width.
	c.Do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	c.Navigate(chromedp.Navigate(base + sessionPath))
	wait("the answer box", `!!document.getElementById("answer")`)
	if w := c.Eval(`String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("at 390px the session page is %spx wide (scrolls sideways)", w)
	}
	c.Do(chromedp.SendKeys(chromedp.ID("answer"), "yes, please"))
	c.Screenshot("e2e-session-waiting-phone.png")
	c.Navigate(chromedp.Click(chromedp.ID("answer-submit")))
	wait("the finished run", `document.getElementById("session-state").textContent.trim() === "done" && document.getElementById("thread").textContent.includes("updating the changelog as told")`)
	c.Screenshot("e2e-session-done-phone.png")
	c.Navigate(chromedp.Navigate(base + "/integrations"))
	c.Screenshot("integrations-phone.png")

	// Follow-up, pin and teardown at desktop width.
	c.Do(chromedp.EmulateViewport(1280, 900))
	c.Navigate(chromedp.Navigate(base + sessionPath))
	c.Do(chromedp.SendKeys(chromedp.ID("message"), "#!asb-script\nsay the follow-up is done"))
	c.Navigate(chromedp.Click(chromedp.ID("followup-submit")))
	wait("the follow-up's result", `document.getElementById("thread").textContent.includes("the follow-up is done") && document.getElementById("session-state").textContent.trim() === "done"`)
	c.Navigate(chromedp.Click(chromedp.ID("pin-button")))
	wait("the pinned notice", `document.querySelector(".notice") && document.querySelector(".notice").textContent.startsWith("Pinned") && document.getElementById("pin-button").textContent === "Unpin"`)
	c.Navigate(chromedp.Click(chromedp.ID("teardown-link")))
	wait("the confirmation page", `!!document.getElementById("teardown-confirm")`)
	c.Do(chromedp.Click(chromedp.ID("confirm")))
	c.Navigate(chromedp.Click(chromedp.ID("teardown-confirm")))
	wait("the closed session", `document.getElementById("session-state").textContent.trim() === "closed"`)
	waitUntil(t, "the box to be removed", 60*time.Second, func() bool { return len(fake.Boxes()) == 0 })
	c.Screenshot("e2e-session-closed-desktop.png")

	// Remove the MCP server and the GitHub account, each confirmed.
	for _, sel := range []string{`#mcp-servers form button`, `#github-accounts form button`} {
		c.Navigate(chromedp.Navigate(base + "/integrations"))
		c.Navigate(chromedp.Click(chromedp.CSS(sel)))
		wait("the removal question", `!!document.getElementById("remove-confirm")`)
		c.Navigate(chromedp.Click(chromedp.ID("remove-confirm")))
		wait("the removal", `document.querySelector(".notice") && document.querySelector(".notice").textContent === "Removed."`)
	}
	if !strings.Contains(c.PageText(), "No GitHub account stored yet") || !strings.Contains(c.PageText(), "No MCP server yet") {
		t.Fatalf("after removing both:\n%s", c.PageText())
	}
	// The refused MCP form is the one expected error: Chromium logs its 400.
	var unexpected []string
	refused := 0
	for _, p := range c.Problems() {
		if strings.Contains(p, "status of 400") && refused == 0 {
			refused++
			continue
		}
		unexpected = append(unexpected, p)
	}
	if len(unexpected) > 0 {
		t.Errorf("the console has errors or CSP violations:\n%s", strings.Join(unexpected, "\n"))
	}
	stop()
	for _, secret := range []string{ghToken, "browser-mcp-secret"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a secret reached the log: %q", secret)
		}
		filepath.Walk(dataDir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
					t.Errorf("a secret is stored in clear in %s", p)
				}
			}
			return nil
		})
	}
}
