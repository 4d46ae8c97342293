package sqlite_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/app/sqlite"
)

// The App created by the manifest flow survives a restart, is unreadable
// in the database files, and only opens with the key that sealed it.
func TestGitHubAppIsStoredSealed(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "asb.sqlite")
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	keys, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := app.LoadGitHubApp(ctx, store, keys); ok || err != nil {
		t.Fatalf("empty database: ok %v err %v", ok, err)
	}
	creds := app.GitHubAppCredentials{AppID: 4242, Slug: "acme-agent", ClientID: "Iv1.client",
		ClientSecret: "client-secret-canary-1", WebhookSecret: "webhook-secret-canary-2",
		PrivateKeyPEM: "-----BEGIN RSA PRIVATE KEY-----\npem-canary-3\n-----END RSA PRIVATE KEY-----\n"}
	if err := app.SaveGitHubApp(ctx, store, keys, creds); err != nil {
		t.Fatal(err)
	}
	if err := app.SaveGitHubApp(ctx, store, keys, app.GitHubAppCredentials{AppID: 1}); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("incomplete credentials: %v", err)
	}
	store.Close()

	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, canary := range []string{"client-secret-canary-1", "webhook-secret-canary-2", "pem-canary-3"} {
			if bytes.Contains(b, []byte(canary)) {
				t.Fatalf("%s holds %s in clear", filepath.Base(path+suffix), canary)
			}
		}
	}

	store, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	got, ok, err := app.LoadGitHubApp(ctx, store, keys)
	if err != nil || !ok || got != creds {
		t.Fatalf("after restart: ok %v err %v, %+v", ok, err, got.AppID)
	}
	audit, err := app.NewService(app.Deps{Store: store}, app.Config{}).Audit(app.WithActor(ctx, app.OperatorActor), 10)
	if err != nil || len(audit) != 1 || audit[0].Action != "github.app.created" || audit[0].Target != "acme-agent" {
		t.Fatalf("audit %+v %v", audit, err)
	}
	other := make([]byte, 32)
	rand.Read(other)
	otherKeys, _ := seal.New(other)
	if _, _, err := app.LoadGitHubApp(ctx, store, otherKeys); err == nil {
		t.Fatal("a different key opened the stored App")
	}
}
