package mcp

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
)

func TestGHTokenAdd(t *testing.T) {
	const tok = "ghp_mcpTESTTESTTESTTESTTESTTESTTESTTEST1"
	keys, err := seal.New(bytes.Repeat([]byte{5}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	prober := apptest.NewFakeProber()
	prober.Add(tok, app.GitHubIdentity{Login: "alice", Orgs: []string{"acme", "tools"}, Scopes: []string{"repo"}}, "acme/api")
	store := apptest.NewMemStore()
	svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox(), Secrets: keys, GitHub: prober}, app.Config{})
	cs := connect(t, NewServer(Options{Service: svc, DefaultActor: &app.OperatorActor}))

	res, text, out := call(t, cs, "gh_token_add", map[string]any{"token": tok, "repo": "acme/api"})
	mustOK(t, res, text)
	want := "Stored GitHub account 'alice' (classic). orgs: acme, tools. scopes: repo. Confirmed access to acme/api. It will be used automatically for repos it can access."
	if text != want {
		t.Fatalf("text = %q\nwant %q", text, want)
	}
	if out["login"] != "alice" || out["canPush"] != true || !strings.HasPrefix(out["account"].(string), "gha_") {
		t.Fatalf("structured = %v", out)
	}
	res, text, out = call(t, cs, "gh_token_add", map[string]any{"token": tok, "repo": "acme/other"})
	mustOK(t, res, text)
	if !strings.Contains(text, "NOTE: this token could NOT push to acme/other.") || out["canPush"] != false {
		t.Fatalf("no access: %q %v", text, out)
	}
	if list, _ := svc.GitHubAccounts(app.WithActor(context.Background(), app.OperatorActor)); len(list) != 1 {
		t.Fatalf("accounts = %+v, want alice once", list)
	}

	res, text, _ = call(t, cs, "gh_token_add", map[string]any{"token": ""})
	mustOK(t, res, text)
	if text != "No token provided." {
		t.Fatalf("empty token: %q", text)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"token": "ghp_revokedRRRRRRRRRRRRRRRRRRRRRRRRRRRRR"}, "invalid or expired"},
		{map[string]any{"token": "not a token; rm -rf /"}, "invalid token"},
		{map[string]any{"token": tok, "repo": "../etc"}, "invalid repo"},
	} {
		res, text, _ := call(t, cs, "gh_token_add", c.args)
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%v: error %v %q, want %q", c.args, res.IsError, text, c.want)
		}
		if tk, _ := c.args["token"].(string); strings.Contains(text, tk) {
			t.Errorf("the reply echoes the token: %q", text)
		}
	}
	if strings.Contains(text, tok) {
		t.Fatal("a reply holds the token")
	}
}

func TestDelegateGitHubAccountChoosesPusher(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, NewServer(Options{Service: e.svc, DefaultActor: &app.OperatorActor}))
	res, text, _ := call(t, cs, "delegate", map[string]any{"task": "fix it", "repo": "acme/api", "githubAccount": "bob; rm"})
	if !res.IsError || !strings.Contains(text, "invalid githubAccount") {
		t.Fatalf("bad login: %v %q", res.IsError, text)
	}
	res, text, out := call(t, cs, "delegate", map[string]any{"task": "fix it", "repo": "acme/api", "githubAccount": "bob"})
	mustOK(t, res, text)
	v, err := e.svc.Session(app.WithActor(context.Background(), app.OperatorActor), app.SessionID(out["session"].(string)))
	if err != nil || v.Session.Origin.GitHubAccount != "bob" || v.Session.Origin.Kind != app.OriginMCP {
		t.Fatalf("origin = %+v, %v; want the chosen login recorded for GitHubPusher", v.Session.Origin, err)
	}
}
