package seal_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/app/sqlite"
)

func keyring(t *testing.T, b byte) *seal.Keyring {
	t.Helper()
	k, err := seal.New(bytes.Repeat([]byte{b}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := keyring(t, 1)
	for _, plain := range [][]byte{nil, []byte("ghp_token"), bytes.Repeat([]byte{0, 255}, 5000)} {
		sealed, err := k.Seal(plain, "github/token/octo")
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Open(sealed, "github/token/octo")
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		again, _ := k.Seal(plain, "github/token/octo")
		if bytes.Equal(again, sealed) {
			t.Fatal("two seals of the same value are identical: nonce reused")
		}
	}
}

func TestOpenFailsClearly(t *testing.T) {
	k := keyring(t, 1)
	sealed, _ := k.Seal([]byte("ghp_token"), "a")
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	cases := map[string]func() ([]byte, error){
		"wrong key":   func() ([]byte, error) { return keyring(t, 2).Open(sealed, "a") },
		"wrong label": func() ([]byte, error) { return k.Open(sealed, "b") },
		"tampered":    func() ([]byte, error) { return k.Open(tampered, "a") },
		"truncated":   func() ([]byte, error) { return k.Open(sealed[:5], "a") },
	}
	for name, open := range cases {
		got, err := open()
		if err == nil || got != nil {
			t.Fatalf("%s: opened to %q", name, got)
		}
		if !errors.Is(err, seal.ErrCannotOpen) || app.ErrorCode(err) != app.EINTERNAL {
			t.Fatalf("%s: error %v is not the clear one", name, err)
		}
		if strings.Contains(err.Error(), "ghp_token") {
			t.Fatalf("%s: error leaks the plaintext", name)
		}
	}
}

func TestSealedValueNeverInDatabaseFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	k := keyring(t, 7)
	plain := []byte("ghp_VERYsecretTOKENvalue1234567890")
	sealed, _ := k.Seal(plain, "github/token/octo")
	if err := store.Tx(ctx, func(tx app.Tx) error { return tx.PutSecret("github/token/octo", sealed) }); err != nil {
		t.Fatal(err)
	}
	var back []byte
	if err := store.View(ctx, func(tx app.Tx) error {
		back, _, err = tx.GetSecret("github/token/octo")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := k.Open(back, "github/token/octo"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("read back: %q %v", got, err)
	}
	store.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "asb.sqlite*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, plain) || bytes.Contains(b, []byte("VERYsecret")) {
			t.Fatalf("%s contains the plaintext", f)
		}
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secrets.key")
	key, created, err := seal.LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != seal.KeySize {
		t.Fatalf("create: %v %v %d", created, err, len(key))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	again, created, err := seal.LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("reload: %v %v", created, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := seal.LoadOrCreateKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable key accepted: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	hexKey := strings.Repeat("ab", 32)
	if k, err := seal.ParseKey(hexKey); err != nil || len(k) != 32 {
		t.Fatalf("hex: %v", err)
	}
	if k, err := seal.ParseKey("q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="); err != nil || len(k) != 32 {
		t.Fatalf("base64: %v", err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("zz", 32), "c2hvcnQ="} {
		if _, err := seal.ParseKey(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Fatalf("error echoes the key: %v", err)
		}
	}
}
