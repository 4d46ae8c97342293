package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	asbmcp "github.com/asb-dev/asb/mcp"
	"github.com/asb-dev/asb/sandbox/workspace"
	"github.com/asb-dev/asb/web"
)

const (
	aliceToken = "asb_alice_token_0123456789abcdef"
	bobToken   = "asb_bob_token_0123456789abcdefgh"
)

var (
	alice = app.Actor{Account: "alice", Name: "alice"}
	bob   = app.Actor{Account: "bob", Name: "bob"}
)

func actorFor(token string) (app.Actor, bool) {
	switch token {
	case aliceToken:
		return alice, true
	case bobToken:
		return bob, true
	}
	return app.Actor{}, false
}

// workspaceServer is the real HTTP surface (JSON routes and /mcp) over a
// Service with the real workspace store, for two callers.
func workspaceServer(t *testing.T, maxBytes int64) (string, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "workspaces")
	store, err := workspace.NewStore(root, workspace.Options{Limits: workspace.Limits{MaxBytes: maxBytes}})
	if err != nil {
		t.Fatal(err)
	}
	svc := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: apptest.NewFakeSandbox(), Workspaces: store}, app.Config{})
	verify := func(_ context.Context, tok string) (app.Actor, error) {
		if a, ok := actorFor(tok); ok {
			return a, nil
		}
		return app.Actor{}, app.Errorf(app.EUNAUTHORIZED, "invalid token")
	}
	h := web.New(web.Options{
		Service: svc,
		Authenticator: web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
			tok, _ := web.BearerToken(r)
			return verify(r.Context(), tok)
		}),
		MutationsPerMinute: 10000,
		MCP:                asbmcp.NewHTTPHandler(asbmcp.NewServer(asbmcp.Options{Service: svc, WaitTimeout: time.Second}), verify, asbmcp.HTTPOptions{}),
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, root
}

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	return buf.Bytes()
}

func postWorkspace(t *testing.T, base, token, ctype string, body io.Reader) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/workspaces", body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /workspaces: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]string
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func TestWorkspaceRoute(t *testing.T) {
	base, root := workspaceServer(t, 1<<20)
	small := tarOf(t, map[string]string{"main.go": "package main\n"})

	if code, _ := postWorkspace(t, base, "", "application/x-tar", bytes.NewReader(small)); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", code)
	}
	if code, _ := postWorkspace(t, base, "wrong-token-0123456789", "application/x-tar", bytes.NewReader(small)); code != http.StatusUnauthorized {
		t.Fatalf("with a wrong token: %d", code)
	}
	if code, _ := postWorkspace(t, base, aliceToken, "application/json", bytes.NewReader(small)); code != http.StatusUnsupportedMediaType {
		t.Fatalf("as JSON: %d", code)
	}
	// Above the cap: 413, whether the stream is one huge file or just long.
	huge := tarOf(t, map[string]string{"big.bin": strings.Repeat("x", 2<<20)})
	if code, out := postWorkspace(t, base, aliceToken, "application/x-tar", bytes.NewReader(huge)); code != http.StatusRequestEntityTooLarge || !strings.Contains(out["error"], "larger than") {
		t.Fatalf("above the cap: %d %v", code, out)
	}
	if code, out := postWorkspace(t, base, aliceToken, "application/x-tar", bytes.NewReader(tarOf(t, map[string]string{"../x": "x"}))); code != http.StatusBadRequest {
		t.Fatalf("a hostile archive: %d %v", code, out)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("refused uploads left %v", left)
	}

	code, out := postWorkspace(t, base, aliceToken, "application/x-tar", bytes.NewReader(small))
	id := out["workspace"]
	if code != http.StatusCreated || app.CheckWorkspaceID(id) != nil {
		t.Fatalf("upload: %d %v", code, out)
	}

	// Bob cannot delegate on Alice's upload; Alice can, once.
	delegate := func(token string) (bool, string) {
		t.Helper()
		client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &sdkmcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: tokenTransport(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"task": "fix it", "workspace": id}})
		if err != nil {
			t.Fatal(err)
		}
		return res.IsError, res.Content[0].(*sdkmcp.TextContent).Text
	}
	if isErr, text := delegate(bobToken); !isErr || !strings.Contains(text, "not found") {
		t.Fatalf("bob used alice's workspace: %v %s", isErr, text)
	}
	if isErr, text := delegate(aliceToken); isErr || !strings.Contains(text, "Delegated. session=") {
		t.Fatalf("alice's delegation: %v %s", isErr, text)
	}
	if isErr, text := delegate(aliceToken); !isErr || !strings.Contains(text, "not found") {
		t.Fatalf("a second use: %v %s", isErr, text)
	}
}

type tokenTransport string

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(t))
	return http.DefaultTransport.RoundTrip(r)
}
