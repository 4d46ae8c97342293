package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
)

// bringBack brings the agent's commits on an uploaded working tree back
// into the local repository it came from, as a branch of its own, when a
// run of a session this bridge delegated with the tree finishes.
type bringBack struct {
	w  *WorkspaceUpload
	hc *http.Client

	mu sync.Mutex
	// shipped holds the sessions this bridge created with the working tree:
	// only their commits belong in it.
	shipped map[string]bool
	// brought is what bringing a run's commits back said, so a repeated
	// status of a finished run neither downloads nor fetches again.
	brought map[string]string
}

// after looks at a forwarded tool result: it remembers a session started
// with the working tree and, when a run of such a session is done, brings
// its commits back and says so in the result's text.
func (b *bringBack) after(ctx context.Context, tool string, shipped bool, res *sdkmcp.CallToolResult) {
	if res == nil || res.IsError {
		return
	}
	text, tc := resultText(res)
	if tc == nil {
		return
	}
	if tool == "delegate" && shipped {
		if sid := delegatedSession(text); sid != "" {
			b.mu.Lock()
			b.shipped[sid] = true
			b.mu.Unlock()
		}
	}
	if tool != "delegate" && tool != "resume" && tool != "status" {
		return
	}
	d, ok := parseDone(text)
	if !ok {
		return
	}
	b.mu.Lock()
	mine := b.shipped[d.Session]
	note, seen := b.brought[d.Run]
	b.mu.Unlock()
	if !mine || len(d.Bundles) == 0 {
		return
	}
	if !seen {
		var ok bool
		note, ok = b.bring(ctx, d)
		if ok {
			b.mu.Lock()
			b.brought[d.Run] = note
			b.mu.Unlock()
		}
	}
	tc.Text += "\n\n" + note
}

// bring downloads each bundle of a finished run and fetches it as a local
// branch. It reports whether all of them came back.
func (b *bringBack) bring(ctx context.Context, d doneRun) (string, bool) {
	var notes []string
	all := true
	for _, bi := range d.Bundles {
		branch := "asb/" + d.Session
		if len(d.Bundles) > 1 {
			branch += "-" + bi.Dir
		}
		if err := b.fetchOne(ctx, d.Run, bi.Dir, branch); err != nil {
			all = false
			notes = append(notes, fmt.Sprintf("Could not bring the agent's %d commit(s) back into %s: %v. "+
				"They stay on the controller: call status({session:%q}) to try again.", len(bi.Commits), b.w.Dir, err, d.Session))
			continue
		}
		notes = append(notes, fmt.Sprintf("The agent's %d commit(s) are on your local branch %s (`git log %s`; merge or cherry-pick them). "+
			"Your checked-out branch and working tree are unchanged.", len(bi.Commits), branch, branch))
	}
	return strings.Join(notes, "\n"), all
}

// fetchOne downloads one bundle, bounded, into a temporary file and hands
// it to Fetch.
func (b *bringBack) fetchOne(ctx context.Context, run, dir, branch string) error {
	max := b.w.MaxBundleBytes
	if max <= 0 {
		max = DefaultMaxBundleBytes
	}
	u := b.w.BundleURL + "?" + url.Values{"run": {run}, "dir": {dir}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("download the commits: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return fmt.Errorf("the controller answered %d: %s", resp.StatusCode, e.Error)
	}
	if resp.ContentLength > max {
		return fmt.Errorf("the commits are %d bytes, more than the %d bytes this bridge downloads", resp.ContentLength, max)
	}
	f, err := os.CreateTemp("", "asb-*.bundle")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, io.LimitReader(resp.Body, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download the commits: %w", err)
	}
	if n > max {
		return fmt.Errorf("the commits are more than the %d bytes this bridge downloads", max)
	}
	return b.w.Fetch(ctx, f.Name(), branch)
}

// resultText returns the text of a tool result's first text content.
func resultText(res *sdkmcp.CallToolResult) (string, *sdkmcp.TextContent) {
	for _, c := range res.Content {
		if tc, ok := c.(*sdkmcp.TextContent); ok {
			return tc.Text, tc
		}
	}
	return "", nil
}

var (
	// delegateHead is how delegate's text names the session it created.
	delegateHead = regexp.MustCompile(`^Delegated\. session=(ses_[a-z0-9]{1,40})\b`)
	// doneHead is the first line of a finished run in render's wording.
	doneHead = regexp.MustCompile(`(?m)^run:done — session=(ses_[a-z0-9]{1,40}) run=(run_[a-z0-9]{1,40})(?: |$)`)
)

func delegatedSession(text string) string {
	if m := delegateHead.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// doneRun is what a run:done text says about a finished run.
type doneRun struct {
	Session string
	Run     string
	Bundles []app.BundleInfo
}

// parseDone reads a delegate, resume or status text as render formats it:
// the first "run:done — session=… run=…" line, and the last "result:"
// line, which render always writes after the agent's summary on a done
// run, so a summary cannot stand in for either. Bundles with a malformed
// folder are dropped.
func parseDone(text string) (doneRun, bool) {
	m := doneHead.FindStringSubmatchIndex(text)
	if m == nil {
		return doneRun{}, false
	}
	d := doneRun{Session: text[m[2]:m[3]], Run: text[m[4]:m[5]]}
	const marker = "\n\nresult: "
	i := strings.LastIndex(text, marker)
	if i < m[1] {
		return d, true
	}
	line, _, _ := strings.Cut(text[i+len(marker):], "\n")
	var r app.PublishResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return d, true
	}
	for _, bi := range r.Bundles {
		if app.CheckDirName(bi.Dir) == nil && len(bi.Commits) > 0 {
			d.Bundles = append(d.Bundles, bi)
		}
	}
	return d, true
}
