package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/agent/scriptedtest"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// sshWorld is a Service whose only sandbox host, a fake msb, is reached
// through an SSH transport.
type sshWorld struct {
	svc   *app.Service
	store app.Store
	fake  *msbtest.Host
	ctx   context.Context
}

func newSSHWorld(t *testing.T, tr sandbox.Transport) *sshWorld {
	t.Helper()
	fake := msbtest.New(t, "node")
	store, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := sandbox.NewFleet(sandbox.FleetConfig{
		Hosts:    []sandbox.HostSpec{{Name: "ssh", Transport: tr, MSBPath: fake.Path, MaxBoxes: 4}},
		Defaults: defaults(), Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(fleet, sandbox.RuntimeConfig{
		AgentCommand: agentInBox,
		Install:      map[string]string{agentInBox: scriptedtest.Binary(t)},
		BundleDir:    filepath.Join(t.TempDir(), "bundles"),
	}, nil)
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb, Logger: slog.New(slog.DiscardHandler)}, app.Config{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(app.WithActor(bg, app.OperatorActor), 120*time.Second)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; store.Close() })
	return &sshWorld{svc: svc, store: store, fake: fake, ctx: ctx}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (w *sshWorld) run(t *testing.T, id app.RunID) app.Run {
	t.Helper()
	var r app.Run
	if err := w.store.View(w.ctx, func(tx app.Tx) error {
		var err error
		r, err = tx.GetRun(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitRecords waits until the run has stored n agent records.
func (w *sshWorld) waitRecords(t *testing.T, d app.Delegation, n int) {
	t.Helper()
	waitFor(t, w.ctx, fmt.Sprintf("%d agent records", n), func() bool {
		evs, _ := w.svc.Events(w.ctx, d.Session.ID, 0, 5000)
		got := 0
		for _, e := range evs {
			if e.Type == app.EventAgent {
				got++
			}
		}
		return got >= n
	})
}

// waitEnd waits until the run ended and returns it.
func (w *sshWorld) waitEnd(t *testing.T, id app.RunID) app.Run {
	t.Helper()
	var r app.Run
	waitFor(t, w.ctx, "the run to end", func() bool {
		r = w.run(t, id)
		return r.State.Terminal()
	})
	return r
}

// checkRecords checks the stored agent records are the lines the agent
// wrote in the box, each once and in order, and that the agent was
// launched once (one turn folder, one conversation invoked once).
func (w *sshWorld) checkRecords(t *testing.T, d app.Delegation, atLeast int) {
	t.Helper()
	evs, err := w.svc.Events(w.ctx, d.Session.ID, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Type == app.EventAgent {
			got = append(got, string(e.Data))
		}
	}
	v, err := w.svc.Session(w.ctx, d.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	box := v.Session.Box.Name
	out, stderr, code := w.fake.Run("exec", box, "--", "sh", "-c", "cat "+inbox.RunsDir+"/*/events.ndjson")
	if code != 0 {
		t.Fatalf("read the agent's stream: %s", stderr)
	}
	var want []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	if len(want) < atLeast || len(got) != len(want) {
		t.Fatalf("stored %d agent records; the agent wrote %d", len(got), len(want))
	}
	for i := range want {
		var a, b any
		if json.Unmarshal([]byte(got[i]), &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	out, _, _ = w.fake.Run("exec", box, "--", "sh", "-c", "ls "+inbox.RunsDir+"; cat "+inbox.Home+"/.scripted-agent/*.json")
	if n := strings.Count(out, string(d.Run.ID)); n != 1 {
		t.Fatalf("turn folders and state: %s", out)
	}
	if !strings.Contains(out, `"turns": 1`) && !strings.Contains(out, `"turns":1`) {
		t.Fatalf("the agent was invoked more than once: %s", out)
	}
}

// TestFaultSSHDropsLoseNothing is the fault suite's SSH case
// (docs/reliability.md): a run whose only host is reached over SSH has its
// connection cut again and again while the agent writes, both while a
// command's output streams back and right after a command was sent (the
// client cannot tell whether it ran). The run still finishes with every
// record of the agent's stream stored once, in order, and the agent
// launched once.
func TestFaultSSHDropsLoseNothing(t *testing.T) {
	srv := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr, err := sandbox.NewSSHTransport(sandbox.SSHConfig{
		User: "test", Addr: srv.Addr, Signer: srv.ClientKey.Signer, KnownHostsFile: srv.KnownHostsFile,
		ReconnectBackoff: 10 * time.Millisecond, MaxReconnectDelay: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	w := newSSHWorld(t, tr)
	d, err := w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "#!asb-script\n" + strings.Repeat("emit 12\nsleep 250ms\n", 10) + "say finished"})
	if err != nil {
		t.Fatal(err)
	}
	// Cut the connection each time the run made progress (so that it can
	// make some), up to a dozen times: every other cut lands right after
	// a command was sent, the others wherever the traffic is.
	var cuts int
	var lastOffset int64 = -1
	var r app.Run
	waitFor(t, w.ctx, "the run to end under cuts", func() bool {
		r = w.run(t, d.Run.ID)
		if r.State == app.StateRunning && r.AgentOffset != lastOffset && cuts < 12 {
			lastOffset = r.AgentOffset
			if cuts%2 == 0 {
				srv.DropAfterNextExec()
			} else {
				srv.DropConnections()
			}
			cuts++
		}
		return r.State.Terminal()
	})
	if r.State != app.StateDone {
		t.Fatalf("run %s: %s", r.State, r.Error)
	}
	if cuts < 6 || srv.Connections() < 4 {
		t.Fatalf("only %d connections after %d cuts: the cuts did not bite", srv.Connections(), cuts)
	}
	w.checkRecords(t, d, 120)
	t.Logf("%d cuts, %d connections", cuts, srv.Connections())
}

// link is a TCP forwarder in front of an SSH server that can be taken
// down (listener closed, connections cut: the host is unreachable) and
// brought back on the same address.
type link struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newLink(t *testing.T, target string) *link {
	l := &link{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	l.up()
	t.Cleanup(l.down)
	return l
}

func (l *link) up() {
	l.t.Helper()
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		l.t.Fatal(err)
	}
	l.mu.Lock()
	l.ln, l.addr = ln, ln.Addr().String()
	l.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", l.target)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns[c], l.conns[s] = true, true
			l.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

func (l *link) down() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		c.Close()
	}
	l.conns = map[net.Conn]bool{}
}

// TestFaultHostDownMidRun: the host of a running run becomes unreachable
// and comes back. The run is not stuck in silence: it says in a
// run.notice that it cannot reach the host and is retrying, and once the
// host answers it finishes with every record stored once, in order.
func TestFaultHostDownMidRun(t *testing.T) {
	srv := sshtest.NewServer(t, sshtest.ServerOptions{})
	l := newLink(t, srv.Addr)
	known := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(l.addr)}, srv.HostKey.Signer.PublicKey())
	if err := os.WriteFile(known, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := sandbox.NewSSHTransport(sandbox.SSHConfig{
		User: "test", Addr: l.addr, Signer: srv.ClientKey.Signer, KnownHostsFile: known,
		DialTimeout: time.Second, ReconnectBackoff: 10 * time.Millisecond, MaxReconnectDelay: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	w := newSSHWorld(t, tr)
	d, err := w.svc.Delegate(w.ctx, app.DelegateRequest{Task: "#!asb-script\nemit 10\nsleep 2s\nemit 10\nsay finished"})
	if err != nil {
		t.Fatal(err)
	}
	w.waitRecords(t, d, 5)
	l.down()
	waitFor(t, w.ctx, "a notice that the host cannot be reached", func() bool {
		evs, _ := w.svc.Events(w.ctx, d.Session.ID, 0, 5000)
		for _, e := range evs {
			if e.Type == app.EventRunNotice && strings.Contains(string(e.Data), "retrying") {
				return true
			}
		}
		return false
	})
	l.up()
	r := w.waitEnd(t, d.Run.ID)
	if r.State != app.StateDone {
		t.Fatalf("run %s: %s", r.State, r.Error)
	}
	w.checkRecords(t, d, 20)
}
