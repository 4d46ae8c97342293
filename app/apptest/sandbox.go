package apptest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
)

// Script says what a launched agent turn does in a FakeSandbox.
type Script struct {
	// Records are emitted one per poll, in order.
	Records []string
	// AgentSessionID is reported once the first record is out.
	AgentSessionID string
	// Question makes the turn end by asking it.
	Question string
	ExitCode int
	Result   *app.AgentResult
	// Hold, when not nil, keeps the agent "running" after its records
	// until the channel is closed.
	Hold chan struct{}
}

// FakeSandbox is an in-memory app.Sandbox whose agent turns follow
// scripts. Its boxes and agents outlive any Service using it, like real
// boxes outlive a controller crash.
type FakeSandbox struct {
	// ScriptFor returns the script of a launched turn. The default emits
	// one assistant record and exits 0.
	ScriptFor func(t app.Turn) Script
	// EnsureBoxErr, when set, is returned by EnsureBox.
	EnsureBoxErr func(spec app.BoxSpec) error
	// Bundles returns what Collect finds; nil means nothing.
	Bundles func(box app.BoxRef, sources []app.Source) []app.Bundle
	// AskFn answers co-pilot questions; the default echoes the question.
	AskFn func(req app.AskRequest) (app.AskAnswer, error)
	// Files maps a workspace path to its content; a folder lists the
	// entries under it.
	Files map[string]string
	// BundleFiles maps a bundle name (as Collect reported it) to its
	// content, for OpenBundle.
	BundleFiles map[string]string

	mu       sync.Mutex
	boxes    map[app.SessionID]app.BoxRef
	removed  []app.BoxRef
	killed   []app.TurnRef
	launches []app.Turn
	turns    map[app.TurnRef]*fakeTurn
	nboxes   int
}

type fakeTurn struct {
	script  Script
	emitted int
	killed  bool
}

var _ app.Sandbox = (*FakeSandbox)(nil)

// NewFakeSandbox returns a sandbox with no boxes.
func NewFakeSandbox() *FakeSandbox {
	return &FakeSandbox{boxes: map[app.SessionID]app.BoxRef{}, turns: map[app.TurnRef]*fakeTurn{}}
}

func (f *FakeSandbox) EnsureBox(ctx context.Context, spec app.BoxSpec) (app.BoxRef, error) {
	if f.EnsureBoxErr != nil {
		if err := f.EnsureBoxErr(spec); err != nil {
			return app.BoxRef{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.boxes[spec.Session]; ok {
		return b, nil
	}
	f.nboxes++
	b := app.BoxRef{Host: "fake", Name: fmt.Sprintf("asb-%s", spec.Session)}
	f.boxes[spec.Session] = b
	return b, nil
}

func (f *FakeSandbox) Launch(ctx context.Context, box app.BoxRef, t app.Turn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.turns[t.TurnRef]; ok {
		return nil // idempotent per (run, turn)
	}
	f.launches = append(f.launches, t)
	script := Script{Records: []string{`{"type":"assistant","message":{"content":[{"type":"text","text":"working"}]}}`}}
	if f.ScriptFor != nil {
		f.mu.Unlock()
		script = f.ScriptFor(t)
		f.mu.Lock()
	}
	f.turns[t.TurnRef] = &fakeTurn{script: script}
	return nil
}

func (f *FakeSandbox) Poll(ctx context.Context, box app.BoxRef, ref app.TurnRef, offset int64) (app.Progress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.turns[ref]
	if !ok {
		return app.Progress{}, app.Errorf(app.ENOTFOUND, "turn %s/%d was never launched", ref.RunID, ref.Turn)
	}
	// Find the record at offset: offsets are cumulative line lengths.
	var pos int64
	idx := 0
	for idx < len(t.script.Records) && pos < offset {
		pos += int64(len(t.script.Records[idx])) + 1
		idx++
	}
	if pos != offset {
		return app.Progress{}, app.Errorf(app.EINTERNAL, "offset %d is not a record boundary", offset)
	}
	p := app.Progress{Offset: offset}
	if idx < len(t.script.Records) && !t.killed {
		rec := t.script.Records[idx]
		p.Records = [][]byte{[]byte(rec)}
		p.Offset = offset + int64(len(rec)) + 1
		idx++
		if idx > t.emitted {
			t.emitted = idx
		}
	}
	if idx > 0 {
		p.AgentSessionID = t.script.AgentSessionID
	}
	if idx >= len(t.script.Records) || t.killed {
		held := false
		if t.script.Hold != nil && !t.killed {
			select {
			case <-t.script.Hold:
			default:
				held = true
			}
		}
		if !held {
			p.Exited = true
			p.ExitCode = t.script.ExitCode
			p.Question = t.script.Question
			if t.killed {
				p.ExitCode = 137
			}
			if len(p.Records) > 0 || offset == 0 {
				p.Result = t.script.Result
			}
		}
	}
	return p, nil
}

func (f *FakeSandbox) Collect(ctx context.Context, box app.BoxRef, sources []app.Source) ([]app.Bundle, error) {
	if f.Bundles == nil {
		return nil, nil
	}
	return f.Bundles(box, sources), nil
}

func (f *FakeSandbox) OpenBundle(name string) (io.ReadCloser, int64, error) {
	if err := app.CheckBundleName(name); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	body, ok := f.BundleFiles[name]
	f.mu.Unlock()
	if !ok {
		return nil, 0, app.Errorf(app.ENOTFOUND, "bundle %s not found", name)
	}
	return io.NopCloser(strings.NewReader(body)), int64(len(body)), nil
}

func (f *FakeSandbox) Kill(ctx context.Context, box app.BoxRef, ref app.TurnRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, ref)
	if t, ok := f.turns[ref]; ok {
		t.killed = true
	}
	return nil
}

func (f *FakeSandbox) Remove(ctx context.Context, box app.BoxRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, b := range f.boxes {
		if b == box {
			delete(f.boxes, s)
		}
	}
	f.removed = append(f.removed, box)
	return nil
}

func (f *FakeSandbox) Ask(ctx context.Context, box app.BoxRef, req app.AskRequest) (app.AskAnswer, error) {
	if f.AskFn != nil {
		return f.AskFn(req)
	}
	thread := req.ResumeAskSession
	if thread == "" {
		thread = "ask-" + box.Name
	}
	return app.AskAnswer{Answer: "you asked: " + req.Question, AgentSessionID: thread}, nil
}

func (f *FakeSandbox) ListFiles(ctx context.Context, box app.BoxRef, dir string) ([]app.FileInfo, error) {
	var out []app.FileInfo
	seen := map[string]bool{}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for p, content := range f.Files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, app.FileInfo{Name: name, Path: prefix + name, Dir: isDir, Size: int64(len(content))})
	}
	if len(out) == 0 {
		if _, ok := f.Files[dir]; !ok {
			return nil, app.Errorf(app.ENOTFOUND, "%s does not exist", dir)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *FakeSandbox) ReadFile(ctx context.Context, box app.BoxRef, p string, max int64, w io.Writer) error {
	content, ok := f.Files[p]
	if !ok {
		return app.Errorf(app.ENOTFOUND, "%s does not exist", p)
	}
	if int64(len(content)) > max {
		return app.Errorf(app.ETOOLARGE, "%s is %d bytes; the limit is %d", p, len(content), max)
	}
	_, err := io.WriteString(w, content)
	return err
}

// Launches returns every distinct turn launched, in order.
func (f *FakeSandbox) Launches() []app.Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.launches)
}

// Removed returns the boxes removed.
func (f *FakeSandbox) Removed() []app.BoxRef {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// Killed returns the turns killed.
func (f *FakeSandbox) Killed() []app.TurnRef {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.killed)
}

// BoxesBooted counts boxes created.
func (f *FakeSandbox) BoxesBooted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nboxes
}

// FakeForge records Publish calls; PublishFn decides the outcome.
type FakeForge struct {
	PublishFn func(req app.PublishRequest) (app.PublishResult, error)
	mu        sync.Mutex
	calls     []app.PublishRequest
}

var _ app.Forge = (*FakeForge)(nil)

func (f *FakeForge) Publish(ctx context.Context, req app.PublishRequest) (app.PublishResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	if f.PublishFn != nil {
		return f.PublishFn(req)
	}
	return app.PublishResult{Branch: "agent/" + string(req.Run.ID)}, nil
}

// Calls returns the Publish requests seen.
func (f *FakeForge) Calls() []app.PublishRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// FakeClock is a manual clock. After fires when Advance moves time past
// its deadline.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

var _ app.Clock = (*FakeClock)(nil)

// NewFakeClock starts at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves time forward and fires due timers.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// Waiters counts pending timers, so a test can wait until code blocks on the clock.
func (c *FakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}
