package app_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
)

func TestWorkspacePath(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "/workspace",
		"api/main.go":                "/workspace/api/main.go",
		"/workspace/api/../api/x":    "/workspace/api/x",
		"/workspace/":                "/workspace",
		"/workspace/.agent.question": "/workspace/.agent.question",
	} {
		if got, err := app.WorkspacePath(in); err != nil || got != want {
			t.Errorf("%q → %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"../etc/passwd", "/etc/passwd", "/workspace/../root/.ssh", "/workspacefoo", "a\x00b",
		"/workspace/.agent.runs/x/events.ndjson", ".agent.task"} {
		if _, err := app.WorkspacePath(bad); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func TestAskContinuesTheCoPilotThread(t *testing.T) {
	var seen []app.AskRequest
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.AskFn = func(req app.AskRequest) (app.AskAnswer, error) {
			seen = append(seen, req)
			return app.AskAnswer{Answer: "it edits main.go", AgentSessionID: "ask-thread-1"}, nil
		}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "work"})
	h.waitState(t, d.Run.ID, app.StateDone)
	if _, err := h.svc.Ask(h.ctx, d.Session.ID, "what is it doing?", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Ask(h.ctx, d.Session.ID, "and then?", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Ask(h.ctx, d.Session.ID, "fresh start", true); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0].ResumeAskSession != "" || seen[1].ResumeAskSession != "ask-thread-1" || seen[2].ResumeAskSession != "" || seen[0].Timeout <= 0 {
		t.Fatalf("asks = %+v", seen)
	}
	var asks int
	for _, e := range h.events(t, d.Session.ID) {
		if e.Type == app.EventAsk {
			asks++
		}
	}
	if asks != 3 {
		t.Fatalf("%d ask events", asks)
	}
	if _, err := h.svc.Ask(h.ctx, d.Session.ID, " ", false); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("empty question: %v", err)
	}
}

func TestFilesAreConfinedToTheWorkspace(t *testing.T) {
	h := newHarness(t, func(sb *apptest.FakeSandbox) {
		sb.Files = map[string]string{"/workspace/api/main.go": "package main\n", "/workspace/notes.txt": "hi"}
	})
	d, _ := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "work"})
	h.waitState(t, d.Run.ID, app.StateDone)
	list, err := h.svc.Files(h.ctx, d.Session.ID, "")
	if err != nil || len(list) != 2 || list[0].Name != "api" || !list[0].Dir || list[1].Name != "notes.txt" {
		t.Fatalf("list = %+v %v", list, err)
	}
	var buf bytes.Buffer
	if err := h.svc.ReadFile(h.ctx, d.Session.ID, "api/main.go", 1<<20, &buf); err != nil || buf.String() != "package main\n" {
		t.Fatalf("read = %q %v", buf.String(), err)
	}
	if err := h.svc.ReadFile(h.ctx, d.Session.ID, "../../etc/passwd", 1<<20, &buf); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("escape: %v", err)
	}
	if _, err := h.svc.Teardown(h.ctx, d.Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Files(h.ctx, d.Session.ID, ""); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("files after teardown: %v", err)
	}
}

func TestThreadLookupAndTrackingComment(t *testing.T) {
	h := newHarness(t, nil)
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/api", Number: 3, PullRequest: true, CommentID: 9}
	d, err := h.svc.Delegate(h.ctx, app.DelegateRequest{Task: "x", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := h.svc.SessionForThread(h.ctx, origin.ThreadKey())
	if err != nil || !ok || v.Session.ID != d.Session.ID {
		t.Fatalf("SessionForThread = %v %v %v", v.Session.ID, ok, err)
	}
	if _, ok, _ := h.svc.SessionForThread(h.ctx, "github:acme/api#4"); ok {
		t.Fatal("found a session for another thread")
	}
	other := app.WithActor(context.Background(), app.Actor{Account: "eve", Name: "eve"})
	if _, ok, _ := h.svc.SessionForThread(other, origin.ThreadKey()); ok {
		t.Fatal("another account saw the thread's session")
	}
	if err := h.svc.SetTrackingComment(h.ctx, d.Run.ID, 4242); err != nil {
		t.Fatal(err)
	}
	if r := h.run(t, d.Run.ID); r.Origin.TrackingCommentID != 4242 || r.Origin.CommentID != 9 {
		t.Fatalf("origin = %+v", r.Origin)
	}
}
