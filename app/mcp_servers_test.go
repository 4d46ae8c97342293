package app_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
)

const mcpSecret = "Bearer mcp-secret-value-never-in-clear"

func TestCheckMCPServer(t *testing.T) {
	ok := app.MCPServerInput{Name: "docs", URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": mcpSecret}}
	if err := app.CheckMCPServer(ok); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := range app.MaxMCPHeaders + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	for name, in := range map[string]app.MCPServerInput{
		"empty name":          {URL: ok.URL},
		"name with slash":     {Name: "a/b", URL: ok.URL},
		"name with markup":    {Name: "<b>", URL: ok.URL},
		"long name":           {Name: strings.Repeat("a", 65), URL: ok.URL},
		"no url":              {Name: "x"},
		"ftp url":             {Name: "x", URL: "ftp://example.com/mcp"},
		"javascript url":      {Name: "x", URL: "javascript:alert(1)"},
		"relative url":        {Name: "x", URL: "/mcp"},
		"credentials in url":  {Name: "x", URL: "https://user:pw@example.com/mcp"},
		"fragment":            {Name: "x", URL: "https://example.com/mcp#x"},
		"long url":            {Name: "x", URL: "https://example.com/" + strings.Repeat("a", 2048)},
		"bad header name":     {Name: "x", URL: ok.URL, Headers: map[string]string{"Bad Header": "v"}},
		"newline in value":    {Name: "x", URL: ok.URL, Headers: map[string]string{"X-A": "a\r\nX-B: b"}},
		"huge value":          {Name: "x", URL: ok.URL, Headers: map[string]string{"X-A": strings.Repeat("v", app.MaxMCPHeaderValue+1)}},
		"too many headers":    {Name: "x", URL: ok.URL, Headers: many},
		"empty header name":   {Name: "x", URL: ok.URL, Headers: map[string]string{"": "v"}},
		"newline secret echo": {Name: "x", URL: ok.URL, Headers: map[string]string{"Authorization": mcpSecret + "\n"}},
	} {
		err := app.CheckMCPServer(in)
		if app.ErrorCode(err) != app.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "mcp-secret") {
			t.Errorf("%s: the error echoes the header value: %v", name, err)
		}
	}
}

func TestMCPServersAreSealedAndOwnerScoped(t *testing.T) {
	h := newIDHarness(t)
	m, err := h.svc.AddMCPServer(as("acc_a"), app.MCPServerInput{Name: "docs", URL: "https://docs.example.com/mcp",
		Headers: map[string]string{"Authorization": mcpSecret, "X-Team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "mcp_") || m.Owner != "acc_a" || strings.Join(m.HeaderNames, ",") != "Authorization,X-Team" {
		t.Fatalf("added = %+v", m)
	}
	if bytes.Contains(h.dump(t), []byte("mcp-secret")) {
		t.Fatal("a header value is stored in clear")
	}
	if _, err := h.svc.AddMCPServer(as("acc_b"), app.MCPServerInput{Name: "docs", URL: "https://b.example.com/mcp"}); err != nil {
		t.Fatal(err)
	}
	// The same name again replaces, keeping the id.
	re, err := h.svc.AddMCPServer(as("acc_a"), app.MCPServerInput{Name: "DOCS", URL: "https://docs.example.com/v2"})
	if err != nil || re.ID != m.ID {
		t.Fatalf("replace = %+v %v", re, err)
	}
	mine, err := h.svc.MCPServers(as("acc_a"))
	if err != nil || len(mine) != 1 || mine[0].URL != "https://docs.example.com/v2" || len(mine[0].HeaderNames) != 0 {
		t.Fatalf("acc_a sees %+v %v", mine, err)
	}
	all, err := h.svc.MCPServers(app.WithActor(context.Background(), app.OperatorActor))
	if err != nil || len(all) != 2 {
		t.Fatalf("operator sees %+v %v", all, err)
	}
	// Another owner's server is not found, and stays.
	if err := h.svc.RemoveMCPServer(as("acc_b"), m.ID); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("acc_b removes acc_a's server: %v", err)
	}
	if err := h.svc.RemoveMCPServer(as("acc_a"), "../etc"); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("bad id: %v", err)
	}
	if err := h.svc.RemoveMCPServer(as("acc_a"), m.ID); err != nil {
		t.Fatal(err)
	}
	if mine, _ := h.svc.MCPServers(as("acc_a")); len(mine) != 0 {
		t.Fatalf("after remove: %+v", mine)
	}
	if _, err := h.svc.MCPServers(context.Background()); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("no actor: %v", err)
	}
}

func TestMCPServersPerOwnerAreBounded(t *testing.T) {
	h := newIDHarness(t)
	for i := range app.MaxMCPServers {
		if _, err := h.svc.AddMCPServer(as("acc_a"), app.MCPServerInput{Name: fmt.Sprintf("s%d", i), URL: "https://example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.svc.AddMCPServer(as("acc_a"), app.MCPServerInput{Name: "one-more", URL: "https://example.com/mcp"})
	if app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("past the bound: %v", err)
	}
}

func TestMCPServersNeedASealer(t *testing.T) {
	svc := app.NewService(app.Deps{Store: newIDHarness(t).store}, app.Config{})
	_, err := svc.AddMCPServer(as("acc_a"), app.MCPServerInput{Name: "x", URL: "https://example.com/mcp"})
	if app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("without a sealer: %v", err)
	}
}

func TestGitHubReposListsTheCallersPushableRepos(t *testing.T) {
	h := newIDHarness(t)
	for _, tok := range []string{tokAlice, tokBob} {
		if _, err := h.svc.AddGitHubToken(as("acc_a"), tok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.svc.AddGitHubToken(as("acc_b"), tokAlice2); err != nil {
		t.Fatal(err)
	}
	got, err := h.svc.GitHubRepos(as("acc_a"))
	if err != nil || strings.Join(got, ",") != "acme/api,alice/site,bob/tools" {
		t.Fatalf("acc_a's repos = %v %v", got, err)
	}
	// A token GitHub no longer takes is skipped; the others still answer.
	h.prober.Revoke(tokBob)
	if got, err = h.svc.GitHubRepos(as("acc_a")); err != nil || strings.Join(got, ",") != "acme/api,alice/site" {
		t.Fatalf("after revoking bob's token = %v %v", got, err)
	}
	// Only the caller's own accounts count.
	if got, err = h.svc.GitHubRepos(as("acc_c")); err != nil || len(got) != 0 {
		t.Fatalf("acc_c = %v %v", got, err)
	}
}

// TestRunsGetTheirOwnersMCPServers runs a task for the operator while
// another owner also stored a server: the launch carries the operator's
// servers with their headers opened, and the box's egress opens their
// https hosts, and nothing of the other owner's.
func TestRunsGetTheirOwnersMCPServers(t *testing.T) {
	store, sb := apptest.NewMemStore(), apptest.NewFakeSandbox()
	keys, err := seal.New(bytes.Repeat([]byte{5}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	var specs []app.BoxSpec
	sb.EnsureBoxErr = func(spec app.BoxSpec) error {
		specs = append(specs, spec)
		return nil
	}
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb, Forge: &apptest.FakeForge{}, Secrets: keys}, app.Config{PollInterval: time.Millisecond})
	op := app.WithActor(context.Background(), app.OperatorActor)
	for _, in := range []app.MCPServerInput{
		{Name: "docs", URL: "https://Docs.Example.com/mcp", Headers: map[string]string{"Authorization": mcpSecret}},
		{Name: "local", URL: "http://10.0.0.5:8080/mcp"},
		{Name: "odd-port", URL: "https://tools.example.com:8443/mcp"},
	} {
		if _, err := svc.AddMCPServer(op, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.AddMCPServer(as("acc_other"), app.MCPServerInput{Name: "theirs", URL: "https://theirs.example.com/mcp"}); err != nil {
		t.Fatal(err)
	}
	runOneTask(t, op, svc, app.DelegateRequest{Task: "use the docs", AllowDomains: []string{"pkg.example.org"}})
	launches := sb.Launches()
	if len(launches) != 1 {
		t.Fatalf("launches = %d", len(launches))
	}
	var names []string
	for _, m := range launches[0].MCPServers {
		names = append(names, m.Name)
		if m.Name == "docs" && (m.URL != "https://Docs.Example.com/mcp" || m.Headers["Authorization"] != mcpSecret) {
			t.Errorf("docs server at launch = %+v", m)
		}
	}
	if strings.Join(names, ",") != "docs,local,odd-port" {
		t.Fatalf("servers at launch = %v", names)
	}
	if len(specs) == 0 || strings.Join(specs[0].AllowDomains, ",") != "pkg.example.org,docs.example.com" {
		t.Fatalf("box egress = %+v", specs)
	}
}

// TestAnUnopenableMCPServerIsLeftOut moves a server's sealed headers to
// another row: they no longer open (the label binds them to their row),
// and the run is launched without that server instead of failing.
func TestAnUnopenableMCPServerIsLeftOut(t *testing.T) {
	store, sb := apptest.NewMemStore(), apptest.NewFakeSandbox()
	keys, err := seal.New(bytes.Repeat([]byte{6}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb, Forge: &apptest.FakeForge{}, Secrets: keys}, app.Config{PollInterval: time.Millisecond})
	op := app.WithActor(context.Background(), app.OperatorActor)
	good, err := svc.AddMCPServer(op, app.MCPServerInput{Name: "good", URL: "https://good.example.com/mcp", Headers: map[string]string{"X-Key": "k1"}})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := svc.AddMCPServer(op, app.MCPServerInput{Name: "moved", URL: "https://moved.example.com/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Tx(context.Background(), func(tx app.Tx) error {
		_, sealed, err := tx.GetMCPServer(good.ID)
		if err != nil {
			return err
		}
		return tx.PutMCPServer(moved, sealed)
	})
	if err != nil {
		t.Fatal(err)
	}
	id := runOneTask(t, op, svc, app.DelegateRequest{Task: "go"})
	v, _ := svc.Session(op, id)
	launches := sb.Launches()
	if v.Runs[0].State != app.StateDone || len(launches) != 1 || len(launches[0].MCPServers) != 1 || launches[0].MCPServers[0].Name != "good" {
		t.Fatalf("run %s, launches %+v", v.Runs[0].State, launches)
	}
}

// runOneTask runs the service until the one task req delegates (as op's
// actor) has ended, and returns its session.
func runOneTask(t *testing.T, op context.Context, svc *app.Service, req app.DelegateRequest) app.SessionID {
	t.Helper()
	ctx, cancel := context.WithCancel(op)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	d, err := svc.Delegate(op, req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to end", func() bool {
		v, err := svc.Session(op, d.Session.ID)
		return err == nil && v.Runs[0].State.Terminal()
	})
	return d.Session.ID
}
