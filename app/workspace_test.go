package app_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

func TestDelegateShipsAnUploadedWorkspaceOnce(t *testing.T) {
	ws := apptest.NewFakeWorkspaces()
	sb := apptest.NewFakeSandbox()
	var mu sync.Mutex
	var specs []app.BoxSpec
	sb.EnsureBoxErr = func(spec app.BoxSpec) error {
		mu.Lock()
		specs = append(specs, spec)
		mu.Unlock()
		return nil
	}
	// The agent commits in the uploaded tree: with no repository to push
	// to, nothing is published and the run still succeeds.
	sb.Bundles = func(box app.BoxRef, sources []app.Source) []app.Bundle {
		var out []app.Bundle
		for _, src := range sources {
			out = append(out, app.Bundle{Source: src, Path: "/tmp/x.bundle", Commits: []string{"abc"}})
		}
		return out
	}
	forge := &apptest.FakeForge{}
	store := apptest.NewMemStore()
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb, Forge: forge, Workspaces: ws}, app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	alice := app.WithActor(ctx, app.Actor{Account: "alice", Name: "alice"})
	bob := app.WithActor(ctx, app.Actor{Account: "bob", Name: "bob"})

	if _, err := svc.StageWorkspace(ctx, strings.NewReader("tar")); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("upload without a caller: %v", err)
	}
	id, err := svc.StageWorkspace(alice, strings.NewReader("tar"))
	if err != nil {
		t.Fatal(err)
	}
	// Bob cannot use Alice's upload, and nothing starts.
	if _, err := svc.Delegate(bob, app.DelegateRequest{Task: "t", Sources: []app.Source{{Workspace: id}}}); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("another owner's workspace: %v", err)
	}
	for _, bad := range []app.Source{{Workspace: "../../etc"}, {Workspace: id, Repo: "acme/api"}, {Workspace: id, Ref: "main"}} {
		if _, err := svc.Delegate(alice, app.DelegateRequest{Task: "t", Sources: []app.Source{bad}}); app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("source %+v: %v", bad, err)
		}
	}
	if views, _ := svc.Fleet(app.WithActor(ctx, app.OperatorActor), app.FleetFilter{}); len(views) != 0 {
		t.Fatalf("refused delegations created %d sessions", len(views))
	}

	req := app.DelegateRequest{Task: "fix it", Sources: []app.Source{{Workspace: id}}}
	d, err := svc.Delegate(alice, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.Sources[0].LocalPath != "" {
		t.Fatal("Delegate wrote the controller path into the caller's request")
	}
	src := d.Session.Sources[0]
	if src.LocalPath != ws.Path(id) || src.Workspace != id || src.Dir != "work" {
		t.Fatalf("session source %+v", src)
	}
	waitFor(t, "the run to finish", func() bool {
		v, err := svc.Session(alice, d.Session.ID)
		return err == nil && v.Current != nil && v.Current.State.Terminal()
	})
	if v, _ := svc.Session(alice, d.Session.ID); v.Current.State != app.StateDone || len(forge.Calls()) != 0 {
		t.Fatalf("run %s (%s), %d publish calls", v.Current.State, v.Current.Error, len(forge.Calls()))
	}
	mu.Lock()
	shipped := specs[0].Sources[0].LocalPath
	mu.Unlock()
	if shipped != ws.Path(id) {
		t.Fatalf("the box was asked for %q", shipped)
	}
	if !slices.Contains(ws.Released(), id) {
		t.Fatalf("the workspace was not deleted once the box had it: %v", ws.Released())
	}
	// Used once.
	if _, err := svc.Delegate(alice, app.DelegateRequest{Task: "again", Sources: []app.Source{{Workspace: id}}}); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("second use: %v", err)
	}
}

func TestWorkspacesNeedTheirPort(t *testing.T) {
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: apptest.NewFakeSandbox()}, app.Config{})
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	if _, err := svc.StageWorkspace(ctx, strings.NewReader("x")); app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("upload without a store: %v", err)
	}
	if _, err := svc.Delegate(ctx, app.DelegateRequest{Task: "t", Sources: []app.Source{{Workspace: app.NewWorkspaceID()}}}); app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("delegate naming a workspace without a store: %v", err)
	}
}
