package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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
	"github.com/asb-dev/asb/sandbox/sshtest"
)

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
	fake := msbtest.New(t, "node")
	store, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
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
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()

	d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "#!asb-script\n" + strings.Repeat("emit 12\nsleep 250ms\n", 10) + "say finished"})
	if err != nil {
		t.Fatal(err)
	}
	// Cut the connection each time the run made progress (so that it can
	// make some), up to a dozen times: every other cut lands right after
	// a command was sent, the others wherever the traffic is.
	var cuts int
	var lastOffset int64 = -1
	var r app.Run
	for {
		if err := store.View(ctx, func(tx app.Tx) error {
			var err error
			r, err = tx.GetRun(d.Run.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if r.State.Terminal() {
			break
		}
		if r.State == app.StateRunning && r.AgentOffset != lastOffset && cuts < 12 {
			lastOffset = r.AgentOffset
			if cuts%2 == 0 {
				srv.DropAfterNextExec()
			} else {
				srv.DropConnections()
			}
			cuts++
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the run never ended: %s", r.State)
		case <-time.After(30 * time.Millisecond):
		}
	}
	if r.State != app.StateDone {
		t.Fatalf("run %s: %s", r.State, r.Error)
	}
	if cuts < 6 || srv.Connections() < 4 {
		t.Fatalf("only %d connections after %d cuts: the cuts did not bite", srv.Connections(), cuts)
	}

	evs, err := svc.Events(ctx, d.Session.ID, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Type == app.EventAgent {
			got = append(got, string(e.Data))
		}
	}
	v, err := svc.Session(ctx, d.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	box := v.Session.Box.Name
	out, stderr, code := fake.Run("exec", box, "--", "sh", "-c", "cat "+inbox.RunsDir+"/*/events.ndjson")
	if code != 0 {
		t.Fatalf("read the agent's stream: %s", stderr)
	}
	var want []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	if len(want) < 120 || len(got) != len(want) {
		t.Fatalf("stored %d agent records; the agent wrote %d", len(got), len(want))
	}
	for i := range want {
		var a, b any
		if json.Unmarshal([]byte(got[i]), &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	// One launch: one turn folder, one conversation invoked once.
	out, _, _ = fake.Run("exec", box, "--", "sh", "-c", "ls "+inbox.RunsDir+"; cat "+inbox.Home+"/.scripted-agent/*.json")
	if n := strings.Count(out, string(d.Run.ID)); n != 1 {
		t.Fatalf("turn folders and state: %s", out)
	}
	if !strings.Contains(out, `"turns": 1`) && !strings.Contains(out, `"turns":1`) {
		t.Fatalf("the agent was invoked more than once: %s", out)
	}
	t.Logf("%d cuts, %d connections, %d records", cuts, srv.Connections(), len(got))
}
