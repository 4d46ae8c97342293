// Package seal encrypts values at rest with AES-256-GCM. It implements
// app.Secrets. The key comes from SECRETS_KEY or from a key file that is
// generated on first start with mode 0600.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/asb-dev/asb/app"
)

// KeySize is the AES-256 key length.
const KeySize = 32

// version prefixes every sealed value so the format can change later.
const version byte = 1

// Keyring seals and opens values under one key.
type Keyring struct {
	aead cipher.AEAD
}

var _ app.Secrets = (*Keyring)(nil)

// New returns a keyring for a 32-byte key.
func New(key []byte) (*Keyring, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return &Keyring{aead: aead}, nil
}

// ParseKey decodes a key given as 64 hex characters or as base64 of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	// Never echo the value: it is the key.
	return nil, errors.New("want 64 hex characters or base64 of 32 bytes (e.g. `openssl rand -hex 32`)")
}

// LoadOrCreateKeyFile reads the key file at path, or creates it with a
// fresh random key (mode 0600) when it does not exist. created reports
// whether a new key was written.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("key file %s: %w", path, err)
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			return nil, false, fmt.Errorf("key file %s is readable by others (mode %04o); run: chmod 600 %s", path, fi.Mode().Perm(), path)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read key file: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("generate key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create key folder: %w", err)
	}
	// O_EXCL: two processes starting at once must not both write a key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateKeyFile(path)
		}
		return nil, false, fmt.Errorf("create key file: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, fmt.Errorf("write key file: %w", err)
	}
	return key, true, nil
}

// Seal encrypts plaintext, binding it to label (authenticated, not secret).
func (k *Keyring) Seal(plaintext []byte, label string) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plaintext)+k.aead.Overhead())
	out = append(out, version)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plaintext, []byte(label)), nil
}

// ErrCannotOpen means a sealed value does not open under this key and
// label: the key changed, or the value was damaged or moved.
var ErrCannotOpen = errors.New("cannot decrypt a stored secret: SECRETS_KEY (or data/secrets.key) is not the key it was sealed with, or the value is damaged")

// Open decrypts a value sealed with the same key and label.
func (k *Keyring) Open(sealed []byte, label string) ([]byte, error) {
	ns := k.aead.NonceSize()
	if len(sealed) < 1+ns+k.aead.Overhead() || sealed[0] != version {
		return nil, app.WrapError(app.EINTERNAL, ErrCannotOpen, "a stored secret is damaged")
	}
	plain, err := k.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(label))
	if err != nil {
		return nil, app.WrapError(app.EINTERNAL, ErrCannotOpen, "a stored secret cannot be decrypted with the configured key")
	}
	return plain, nil
}
