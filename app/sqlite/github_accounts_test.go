package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/app/sqlite"
)

// The database files never hold a stored GitHub token in clear, and the
// sealed token survives a reopen.
func TestGitHubTokenSealedOnDisk(t *testing.T) {
	const tok = "ghp_diskTESTTESTTESTTESTTESTTESTTESTTES1"
	dir := t.TempDir()
	path := filepath.Join(dir, "asb.sqlite")
	ctx := app.WithActor(context.Background(), app.OperatorActor)
	keys, err := seal.New(bytes.Repeat([]byte{4}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	prober := apptest.NewFakeProber()
	prober.Add(tok, app.GitHubIdentity{Login: "octodisk", Scopes: []string{"repo"}}, "acme/api")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	svc := app.NewService(app.Deps{Store: s, Sandbox: apptest.NewFakeSandbox(), Secrets: keys, GitHub: prober}, app.Config{})
	if _, err := svc.AddGitHubToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	sawLogin := false
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte("diskTEST")) {
			t.Fatalf("%s holds the token in clear", e.Name())
		}
		sawLogin = sawLogin || bytes.Contains(b, []byte("octodisk"))
	}
	if !sawLogin {
		t.Fatal("the account was not written to the database files")
	}

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	svc = app.NewService(app.Deps{Store: s, Sandbox: apptest.NewFakeSandbox(), Secrets: keys, GitHub: prober}, app.Config{})
	got, ok, err := svc.GitHubToken(ctx, "octodisk")
	if err != nil || !ok || got != tok {
		t.Fatalf("after reopen: ok %v err %v", ok, err)
	}
}
