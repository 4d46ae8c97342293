package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/agent/scriptedtest"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

const agentInBox = inbox.ToolDir + "/bin/scripted-agent"

// e2e is a Service over a real fleet of one fake-msb host, with the
// scripted agent installed in every box.
type e2e struct {
	svc   *app.Service
	store app.Store
	sb    *sandbox.Sandbox
	fake  *msbtest.Host
	ctx   context.Context
	stop  func()
}

func newE2E(t *testing.T, dbPath string, fake *msbtest.Host) *e2e {
	t.Helper()
	store, err := sqlite.Open(bg, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := sandbox.NewFleet(sandbox.FleetConfig{
		Hosts:    []sandbox.HostSpec{{Name: "local", Transport: sandbox.NewLocalTransport(nil), MSBPath: fake.Path, MaxBoxes: 10}},
		Defaults: defaults(), Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(fleet, sandbox.RuntimeConfig{
		AgentCommand: agentInBox,
		Install:      map[string]string{agentInBox: scriptedtest.Binary(t)},
		AgentSecrets: map[string]string{"ANTHROPIC_API_KEY": "sk-model-key-never-in-argv"},
		BundleDir:    filepath.Join(filepath.Dir(dbPath), "bundles"),
	}, nil)
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb, Secrets: e2eKeys(t), Logger: slog.New(slog.DiscardHandler)}, app.Config{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(app.WithActor(bg, app.OperatorActor))
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	e := &e2e{svc: svc, store: store, sb: sb, fake: fake, ctx: ctx}
	e.stop = func() {
		cancel()
		<-done
		store.Close()
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			e.stop()
		}
	})
	return e
}

func (e *e2e) wait(t *testing.T, id app.RunID, want app.RunState) app.Run {
	t.Helper()
	var r app.Run
	deadline := time.Now().Add(60 * time.Second)
	for {
		_ = e.store.View(bg, func(tx app.Tx) error {
			var err error
			r, err = tx.GetRun(id)
			return err
		})
		if r.State == want {
			return r
		}
		if r.State.Terminal() || time.Now().After(deadline) {
			evs, _ := e.svc.Events(e.ctx, r.SessionID, 0, 1000)
			var b strings.Builder
			for _, ev := range evs {
				fmt.Fprintf(&b, "  %d %s %s\n", ev.ID, ev.Type, ev.Data)
			}
			t.Fatalf("run %s is %s (%s), want %s; events:\n%s", id, r.State, r.Error, want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gitRepo makes a repository with one commit, readable by everyone.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asb-repo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		git(t, dir, args...)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\n"), 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestAgentRunsEndToEndInABox(t *testing.T) {
	fake := msbtest.New(t, "node")
	e := newE2E(t, filepath.Join(t.TempDir(), "asb.sqlite"), fake)
	repo := gitRepo(t)
	task := strings.Join([]string{
		"Add a greeting.",
		"#!asb-script",
		"say starting",
		"todo write the file; commit it",
		`write hello.txt hello world\n`,
		"commit add hello",
		"ask Should the greeting be loud?",
		"env DB_PASSWORD",
		`write hello.txt HELLO WORLD\n`,
		"commit make it loud",
		"say done",
	}, "\n")
	d, err := e.svc.Delegate(e.ctx, app.DelegateRequest{Task: task, Sources: []app.Source{{Dir: "demo", LocalPath: repo}}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.wait(t, d.Run.ID, app.StateWaiting)
	if r.Question != "Should the greeting be loud?" {
		t.Fatalf("question = %q", r.Question)
	}
	v, _ := e.svc.Session(e.ctx, d.Session.ID)
	if v.Session.AgentSessionID == "" || v.Session.Box.IsZero() {
		t.Fatalf("session after first turn: %+v", v.Session)
	}
	// The box idle-stops while the question waits; the answer starts it again.
	if _, stderr, code := fake.Run("stop", v.Session.Box.Name); code != 0 {
		t.Fatal(stderr)
	}
	const secret = "hunter2-one-step-secret"
	if _, err := e.svc.Answer(e.ctx, d.Session.ID, "yes, loud", map[string]string{"DB_PASSWORD": secret}); err != nil {
		t.Fatal(err)
	}
	r = e.wait(t, d.Run.ID, app.StateDone)
	if r.Turn != 2 || r.Usage.Turns == 0 {
		t.Fatalf("done run: %+v", r)
	}
	evs, err := e.svc.Events(e.ctx, d.Session.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var agentText strings.Builder
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), secret) {
			t.Fatalf("the one-step secret is stored in event %d", ev.ID)
		}
		if ev.Type == app.EventAgent {
			agentText.Write(ev.Data)
		}
	}
	for _, want := range []string{"starting", "TodoWrite", "hello.txt", "DB_PASSWORD"} {
		if !strings.Contains(agentText.String(), want) {
			t.Errorf("agent events lack %q", want)
		}
	}
	// The secret reached the answered turn (the agent saw it set).
	if !strings.Contains(agentText.String(), fmt.Sprintf("%d", len(secret))) {
		t.Errorf("the agent did not see DB_PASSWORD in the answered turn:\n%s", agentText.String())
	}

	// A follow-up continues the same conversation in the same folder.
	f, err := e.svc.FollowUp(e.ctx, d.Session.ID, "#!asb-script\nrun pwd\necho-prompt", app.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(t, f.Run.ID, app.StateDone)
	v, _ = e.svc.Session(e.ctx, d.Session.ID)
	fevs, _ := e.svc.Events(e.ctx, d.Session.ID, evs[len(evs)-1].ID, 1000)
	var follow strings.Builder
	for _, ev := range fevs {
		follow.Write(ev.Data)
	}
	if !strings.Contains(follow.String(), "/workspace/demo") || !strings.Contains(follow.String(), v.Session.AgentSessionID) {
		t.Fatalf("follow-up did not resume in /workspace/demo with session %s:\n%s", v.Session.AgentSessionID, follow.String())
	}

	// Files: listed, read, and confined.
	files, err := e.svc.Files(e.ctx, d.Session.ID, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range files {
		names = append(names, fi.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "hello.txt") {
		t.Fatalf("files = %v", names)
	}
	var buf bytes.Buffer
	if err := e.svc.ReadFile(e.ctx, d.Session.ID, "demo/hello.txt", 1<<20, &buf); err != nil || buf.String() != "HELLO WORLD\n" {
		t.Fatalf("read hello.txt: %q %v", buf.String(), err)
	}
	box := v.Session.Box.Name
	fake.Run("exec", box, "--", "ln", "-s", "/etc/passwd", "/workspace/demo/escape")
	if err := e.svc.ReadFile(e.ctx, d.Session.ID, "demo/escape", 1<<20, &buf); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("symlink escape: %v", err)
	}

	// The agent's commits come out as a bundle on top of the shipped base.
	bundles, err := e.sb.Collect(bg, v.Session.Box, v.Session.Sources)
	if err != nil || len(bundles) != 1 || len(bundles[0].Commits) != 2 {
		t.Fatalf("collect = %+v %v", bundles, err)
	}
	git(t, repo, "fetch", "-q", bundles[0].Path, "HEAD:refs/heads/agent")
	if log := git(t, repo, "log", "--format=%s", "main..agent"); log != "make it loud\nadd hello" {
		t.Fatalf("bundle commits: %q", log)
	}

	// Teardown removes the box; the events stay readable.
	if _, err := e.svc.Teardown(e.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	if len(fake.Boxes()) != 0 {
		t.Fatalf("boxes after teardown: %v", fake.Boxes())
	}
	after, err := e.svc.Events(e.ctx, d.Session.ID, 0, 10000)
	if err != nil || len(after) < len(evs) {
		t.Fatalf("events after teardown: %d (%v)", len(after), err)
	}
	// The model key travelled on stdin only: no process argv on the host saw it.
	if out, _ := exec.Command("sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").Output(); strings.Contains(string(out), "sk-model-key") {
		t.Fatal("the model key is in some process's argv")
	}
}

// The controller is killed while the agent runs; a new controller over
// the same database re-attaches the run, which finishes with every record
// stored once.
func TestRunReattachesAfterControllerCrash(t *testing.T) {
	fake := msbtest.New(t, "node")
	dir := t.TempDir()
	e := newE2E(t, filepath.Join(dir, "asb.sqlite"), fake)
	task := "#!asb-script\nemit 20\nsleep 1500ms\nemit 20\nsay finished"
	d, err := e.svc.Delegate(e.ctx, app.DelegateRequest{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, _ := e.svc.Events(e.ctx, d.Session.ID, 0, 1000)
		n := 0
		for _, ev := range evs {
			if ev.Type == app.EventAgent {
				n++
			}
		}
		if n >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never got going")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.stop() // no clean shutdown of the run: the worker just stops

	e2 := newE2E(t, filepath.Join(dir, "asb.sqlite"), fake)
	e2.wait(t, d.Run.ID, app.StateDone)
	evs, err := e2.svc.Events(e2.ctx, d.Session.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var lines []string
	for _, ev := range evs {
		if ev.Type != app.EventAgent {
			continue
		}
		if seen[string(ev.Data)] {
			t.Fatalf("record stored twice: %s", ev.Data)
		}
		seen[string(ev.Data)] = true
		lines = append(lines, string(ev.Data))
	}
	// Read the agent's own stream from the box and compare.
	v, _ := e2.svc.Session(e2.ctx, d.Session.ID)
	out, _, _ := fake.Run("exec", v.Session.Box.Name, "--", "sh", "-c", "cat "+inbox.RunsDir+"/*/events.ndjson")
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(l) != "" {
			want = append(want, strings.TrimSpace(l))
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("stored %d records, the agent wrote %d", len(lines), len(want))
	}
	for i := range want {
		if !jsonEqual(lines[i], want[i]) {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

func jsonEqual(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }

// The co-pilot answers while the driver keeps working, in its own lane,
// and follow-up asks continue its thread.
func TestAskLaneRunsBesideTheDriver(t *testing.T) {
	fake := msbtest.New(t, "node")
	e := newE2E(t, filepath.Join(t.TempDir(), "asb.sqlite"), fake)
	d, err := e.svc.Delegate(e.ctx, app.DelegateRequest{Task: "#!asb-script\nsay working\nsleep 3s\nsay driver done"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(t, d.Run.ID, app.StateRunning)
	for {
		v, _ := e.svc.Session(e.ctx, d.Session.ID)
		if v.Session.AgentSessionID != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ans, err := e.svc.Ask(e.ctx, d.Session.ID, "#!asb-script\nrun pwd\nenv ASK_LANE\nsay the driver is working", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Answer, "the driver is working") || ans.TimedOut {
		t.Fatalf("answer = %+v", ans)
	}
	// The driver was not paused: it is still running its own turn.
	if r := e.wait(t, d.Run.ID, app.StateRunning); r.Turn != 1 {
		t.Fatalf("driver turn changed: %+v", r)
	}
	v, _ := e.svc.Session(e.ctx, d.Session.ID)
	if v.Session.AskSessionID == "" || v.Session.AskSessionID == v.Session.AgentSessionID {
		t.Fatalf("co-pilot thread %q vs driver %q", v.Session.AskSessionID, v.Session.AgentSessionID)
	}
	// The co-pilot ran in /ask with ASK_LANE set; its record is an event.
	evs, _ := e.svc.Events(e.ctx, d.Session.ID, 0, 1000)
	var asked bool
	for _, ev := range evs {
		if ev.Type == app.EventAsk {
			asked = true
		}
	}
	if !asked {
		t.Fatal("no ask event")
	}
	ans2, err := e.svc.Ask(e.ctx, d.Session.ID, "and now?", false)
	if err != nil || ans2.Answer == "" {
		t.Fatalf("second ask: %+v %v", ans2, err)
	}
	v2, _ := e.svc.Session(e.ctx, d.Session.ID)
	if v2.Session.AskSessionID != v.Session.AskSessionID {
		t.Fatalf("follow-up ask started a new thread: %s → %s", v.Session.AskSessionID, v2.Session.AskSessionID)
	}
	e.wait(t, d.Run.ID, app.StateDone)
}
