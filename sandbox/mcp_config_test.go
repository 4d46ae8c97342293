package sandbox_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

func e2eKeys(t *testing.T) *seal.Keyring {
	t.Helper()
	keys, err := seal.New(bytes.Repeat([]byte{9}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestOwnersMCPServersReachTheirBoxOnly stores MCP servers for two owners
// and runs a turn for one: the agent is started with --mcp-config naming a
// file that holds exactly its owner's servers, headers included; the
// headers are never in the agent's environment, and the file is gone once
// the agent exits. The headers are never in its command line either.
func TestOwnersMCPServersReachTheirBoxOnly(t *testing.T) {
	fake := msbtest.New(t, "node")
	e := newE2E(t, filepath.Join(t.TempDir(), "asb.sqlite"), fake)
	// The operator owns the session (sessions need an account row); it may
	// list every owner's servers, but its box gets only its own.
	alice := app.WithActor(context.Background(), app.OperatorActor)
	bob := app.WithActor(context.Background(), app.Actor{Account: "acc_bob", Name: "bob"})
	const secret = "Bearer alice-mcp-secret-0123456789"
	if _, err := e.svc.AddMCPServer(alice, app.MCPServerInput{Name: "docs", URL: "https://docs.example.com/mcp",
		Headers: map[string]string{"Authorization": secret}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AddMCPServer(bob, app.MCPServerInput{Name: "bobs-tracker", URL: "https://tracker.example.com/mcp",
		Headers: map[string]string{"Authorization": "Bearer bob-secret-value"}}); err != nil {
		t.Fatal(err)
	}
	task := strings.Join([]string{
		"#!asb-script",
		"echo-flags",
		"run cat /workspace/.agent.runs/run_*-1/asb-mcp-servers.json",
		`run tr '\0' ' ' < /proc/$PPID/cmdline`,
		"env ASB_MCP_CONFIG",
	}, "\n")
	d, err := e.svc.Delegate(alice, app.DelegateRequest{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(t, d.Run.ID, app.StateDone)
	evs, err := e.svc.Events(alice, d.Session.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, ev := range evs {
		if ev.Type == app.EventAgent {
			out.Write(ev.Data)
		}
	}
	got := out.String()
	if !strings.Contains(got, "--mcp-config /workspace/.agent.runs/"+string(d.Run.ID)+"-1/asb-mcp-servers.json -p") {
		t.Errorf("the agent's command line lacks --mcp-config with the turn's file:\n%s", got)
	}
	for _, want := range []string{`mcpServers`, `"docs"`, `https://docs.example.com/mcp`, secret, `mcp__docs`, "ASB_MCP_CONFIG is not set"} {
		if !strings.Contains(got, strings.ReplaceAll(want, `"`, `\"`)) && !strings.Contains(got, want) {
			t.Errorf("the agent's events lack %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"bobs-tracker", "bob-secret-value", "tracker.example.com"} {
		if strings.Contains(got, never) {
			t.Errorf("another owner's server reached alice's box: %q", never)
		}
	}
	// The file lived only as long as the agent.
	v, _ := e.svc.Session(alice, d.Session.ID)
	if stdout, _, code := fake.Run("exec", v.Session.Box.Name, "--", "sh", "-c", "ls /workspace/.agent.runs/*-1/"); code != 0 || strings.Contains(stdout, "asb-mcp-servers.json") || !strings.Contains(stdout, "events.ndjson") {
		t.Fatalf("turn folder after exit (code %d): %s", code, stdout)
	}
}
