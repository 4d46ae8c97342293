package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// TestDelegateLocalSource checks source and workspace on delegate: local
// without an uploaded tree tells the caller how to get one, bad
// combinations name their field, and an uploaded tree becomes the task's
// only source.
func TestDelegateLocalSource(t *testing.T) {
	ws := apptest.NewFakeWorkspaces()
	box := apptest.NewFakeSandbox()
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: box, Workspaces: ws}, app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	cs := connect(t, NewServer(Options{Service: svc, DefaultActor: &app.OperatorActor, WaitTimeout: 2 * time.Second}))

	id, err := svc.StageWorkspace(app.WithActor(ctx, app.OperatorActor), strings.NewReader("a tar"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args  map[string]any
		field string
		says  string
	}{
		{map[string]any{"task": "t", "source": "local"}, "source", "WORKSPACE_DIR"},
		{map[string]any{"task": "t", "source": "svn"}, "source", "local or git"},
		{map[string]any{"task": "t", "workspace": "/etc/passwd"}, "workspace", "ws_"},
		{map[string]any{"task": "t", "workspace": id, "source": "git"}, "workspace", "local"},
		{map[string]any{"task": "t", "workspace": id, "repo": "acme/api"}, "repo", "leave repo"},
		{map[string]any{"task": "t", "workspace": id, "ref": "main"}, "ref", "leave ref"},
	}
	for _, c := range cases {
		res, text, _ := call(t, cs, "delegate", c.args)
		if !res.IsError || !strings.Contains(text, "invalid "+c.field) || !strings.Contains(text, c.says) {
			t.Errorf("%v: err=%v %q, want a tool error on %s saying %q", c.args, res.IsError, text, c.field, c.says)
		}
	}
	// Someone else's (or an invented) id is not found.
	res, text, _ := call(t, cs, "delegate", map[string]any{"task": "t", "workspace": app.NewWorkspaceID()})
	if !res.IsError || !strings.Contains(text, "not found") {
		t.Fatalf("invented workspace: %v %s", res.IsError, text)
	}

	res, text, out := call(t, cs, "delegate", map[string]any{"task": "fix the bug", "source": "local", "workspace": id})
	mustOK(t, res, text)
	sid, _ := out["session"].(string)
	v, err := svc.Session(app.WithActor(ctx, app.OperatorActor), app.SessionID(sid))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Session.Sources) != 1 || v.Session.Sources[0].Workspace != id || v.Session.Sources[0].LocalPath != ws.Path(id) {
		t.Fatalf("sources %+v", v.Session.Sources)
	}
}
