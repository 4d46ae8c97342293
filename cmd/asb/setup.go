package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
)

func loadConfig(env *environment) (*config.Config, error) {
	path := env.dotenv
	if path == "" {
		path = ".env"
	}
	cfg, err := config.Load(env.environ, path)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// commandConfig loads the configuration for a subcommand; when it is not
// valid it prints every problem, and the caller exits with code 2.
func commandConfig(env *environment) (*config.Config, bool) {
	cfg, err := loadConfig(env)
	if err != nil {
		printConfigError(env.stderr, err)
		return nil, false
	}
	return cfg, true
}

// printConfigError lists every configuration problem, one per line.
func printConfigError(w io.Writer, err error) {
	fmt.Fprintln(w, "asb: the configuration is not valid:")
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.TrimSpace(line) != "" {
			fmt.Fprintf(w, "  - %s\n", line)
		}
	}
	fmt.Fprintln(w, "See docs/configuration.md for every variable and what it accepts.")
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func dbPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "asb.sqlite") }

func ensureDataDir(cfg *config.Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data folder %s: %w", cfg.DataDir, err)
	}
	return nil
}

// keyCheckName holds a sealed known value: opening it proves the key in
// use is the one the database's secrets were sealed with.
const keyCheckName = "asb/key-check"

var keyCheckPlain = []byte("asb secrets key check v1")

// openKeyring loads SECRETS_KEY or data/secrets.key (creating the file on
// first start when create is true) and verifies it against the database.
func openKeyring(ctx context.Context, cfg *config.Config, store app.Store, create bool) (k *seal.Keyring, keyFile string, created bool, err error) {
	key := cfg.SecretsKeyBytes()
	if key == nil {
		keyFile = filepath.Join(cfg.DataDir, "secrets.key")
		if !create {
			if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
				return nil, keyFile, false, nil
			}
		}
		key, created, err = seal.LoadOrCreateKeyFile(keyFile)
		if err != nil {
			return nil, keyFile, false, err
		}
	}
	k, err = seal.New(key)
	if err != nil {
		return nil, keyFile, created, err
	}
	err = store.Tx(ctx, func(tx app.Tx) error {
		sealed, ok, err := tx.GetSecret(keyCheckName)
		if err != nil {
			return err
		}
		if !ok {
			if !create {
				return nil
			}
			sealed, err := k.Seal(keyCheckPlain, keyCheckName)
			if err != nil {
				return err
			}
			return tx.PutSecret(keyCheckName, sealed)
		}
		plain, err := k.Open(sealed, keyCheckName)
		if err != nil || !bytes.Equal(plain, keyCheckPlain) {
			return errors.New("the secrets key does not match the one this database was sealed with: restore the original SECRETS_KEY or data/secrets.key (see docs/runbook.md)")
		}
		return nil
	})
	return k, keyFile, created, err
}

// operatorToken returns MCP_HTTP_TOKEN, or the token in data/operator.token,
// generating that file (mode 0600) on first start. path is "" when the
// token comes from the environment.
func operatorToken(cfg *config.Config, create bool) (token, path string, created bool, err error) {
	if cfg.OperatorToken.IsSet() {
		return cfg.OperatorToken.Reveal(), "", false, nil
	}
	path = filepath.Join(cfg.DataDir, "operator.token")
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 {
			return "", path, false, fmt.Errorf("%s holds no usable token (want at least 16 characters); delete it to generate a new one", path)
		}
		return tok, path, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		if errors.Is(err, fs.ErrNotExist) {
			return "", path, false, nil
		}
		return "", path, false, fmt.Errorf("read operator token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", path, false, err
	}
	tok := "asb_" + hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return operatorToken(cfg, false)
		}
		return "", path, false, fmt.Errorf("write operator token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", path, false, fmt.Errorf("write operator token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", path, false, fmt.Errorf("write operator token: %w", err)
	}
	return tok, path, true, nil
}

func openStore(ctx context.Context, cfg *config.Config) (*sqlite.Store, error) {
	if err := ensureDataDir(cfg); err != nil {
		return nil, err
	}
	// Create the file owner-only before SQLite does; its -wal and -shm
	// files inherit the mode.
	f, err := os.OpenFile(dbPath(cfg), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create database file: %w", err)
	}
	f.Close()
	return sqlite.Open(ctx, dbPath(cfg))
}
