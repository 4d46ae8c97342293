package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

// TestBridgeShipsTheWorkspaceOnlyWhenAsked drives the stdio bridge with a
// working tree configured: calls that name GitHub repositories or no task
// go through untouched, "delegate this" uploads the tree (with the token,
// as a tar stream) and names it, and failures come back as tool errors.
func TestBridgeShipsTheWorkspaceOnlyWhenAsked(t *testing.T) {
	ws := apptest.NewFakeWorkspaces()
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: apptest.NewFakeSandbox(), Workspaces: ws},
		app.Config{PollInterval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()

	const token = "bridge-token-0123456789"
	var refuse atomic.Bool
	var uploads atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("/mcp", NewHTTPHandler(NewServer(Options{Service: svc, WaitTimeout: time.Second}),
		func(_ context.Context, tok string) (app.Actor, error) {
			if tok != token {
				return app.Actor{}, errors.New("bad token")
			}
			return app.OperatorActor, nil
		}, HTTPOptions{}))
	// A stand-in for web's POST /workspaces over the same Service.
	mux.HandleFunc("POST /workspaces", func(w http.ResponseWriter, r *http.Request) {
		uploads.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("Content-Type") != "application/x-tar" {
			http.Error(w, `{"error":"bad upload request"}`, http.StatusBadRequest)
			return
		}
		if refuse.Load() {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, `{"error":"the workspace is larger than 10 bytes (WORKSPACE_MAX_BYTES)"}`)
			return
		}
		id, err := svc.StageWorkspace(app.WithActor(r.Context(), app.OperatorActor), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"workspace":"`+id+`"}`)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()

	var prepared atomic.Int32
	var prepareErr atomic.Value
	bridge, closeRemote, err := Bridge(ctx, BridgeOptions{Endpoint: ts.URL + "/mcp", Token: token, Version: "test",
		Workspace: &WorkspaceUpload{URL: ts.URL + "/workspaces", Dir: "/home/me/project",
			Prepare: func(context.Context) (Tree, error) {
				prepared.Add(1)
				if e, _ := prepareErr.Load().(string); e != "" {
					return Tree{}, errors.New(e)
				}
				return Tree{Files: 3, Bytes: 3 << 20, Write: func(_ context.Context, w io.Writer) error {
					_, err := io.WriteString(w, "pretend this is a tar stream")
					return err
				}}, nil
			}}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeRemote()
	cs := connect(t, bridge)
	sources := func(out map[string]any) []app.Source {
		t.Helper()
		v, err := svc.Session(app.WithActor(ctx, app.OperatorActor), app.SessionID(out["session"].(string)))
		if err != nil {
			t.Fatal(err)
		}
		return v.Session.Sources
	}

	// Named repositories, source git, or no task: no upload.
	res, text, out := call(t, cs, "delegate", map[string]any{"task": "t", "repo": "acme/api"})
	mustOK(t, res, text)
	if src := sources(out); len(src) != 1 || src[0].Repo != "acme/api" {
		t.Fatalf("repo delegation sources %+v", src)
	}
	res, text, out = call(t, cs, "delegate", map[string]any{"task": "t", "source": "git"})
	mustOK(t, res, text)
	if src := sources(out); len(src) != 0 {
		t.Fatalf("source git without repo is task-only, got %+v", src)
	}
	res, text, _ = call(t, cs, "delegate", map[string]any{"source": "local"})
	if res.IsError || !strings.Contains(text, "Which task") {
		t.Fatalf("no task: %v %s", res.IsError, text)
	}
	res, text, _ = call(t, cs, "delegate", map[string]any{"task": "t", "source": "local", "repo": "acme/api"})
	if !res.IsError || !strings.Contains(text, "invalid repo") || !strings.Contains(text, "/home/me/project") {
		t.Fatalf("local with a repo: %v %s", res.IsError, text)
	}
	if n := prepared.Load(); n != 0 {
		t.Fatalf("the tree was listed %d times for calls that do not ship it", n)
	}

	// "Delegate this": uploaded, named, and the session works on it.
	res, text, out = call(t, cs, "delegate", map[string]any{"task": "fix the failing test"})
	mustOK(t, res, text)
	src := sources(out)
	if len(src) != 1 || app.CheckWorkspaceID(src[0].Workspace) != nil || src[0].LocalPath != ws.Path(src[0].Workspace) {
		t.Fatalf("local delegation sources %+v", src)
	}
	res, text, _ = call(t, cs, "delegate", map[string]any{"task": "again", "source": "local"})
	mustOK(t, res, text)
	if n := uploads.Load(); n != 2 {
		t.Fatalf("%d uploads, want one per local delegation", n)
	}

	// Failures are tool errors that say what happened.
	prepareErr.Store("/home/me/project is not inside a git repository")
	res, text, _ = call(t, cs, "delegate", map[string]any{"task": "t"})
	if !res.IsError || !strings.Contains(text, "not inside a git repository") {
		t.Fatalf("listing failure: %v %s", res.IsError, text)
	}
	prepareErr.Store("")
	refuse.Store(true)
	res, text, _ = call(t, cs, "delegate", map[string]any{"task": "t"})
	if !res.IsError || !strings.Contains(text, "413") || !strings.Contains(text, "WORKSPACE_MAX_BYTES") {
		t.Fatalf("refused upload: %v %s", res.IsError, text)
	}
}
