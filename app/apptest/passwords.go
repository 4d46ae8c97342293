package apptest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"github.com/asb-dev/asb/app"
)

// FakeHasher is a fast app.PasswordHasher for tests: a salted SHA-256,
// never the password in clear. Production uses scrypt (web.ScryptHasher).
type FakeHasher struct {
	// Verifies counts Verify calls (each costs a real hasher real time).
	Verifies atomic.Int64
	salt     atomic.Int64
}

var _ app.PasswordHasher = (*FakeHasher)(nil)

func (h *FakeHasher) digest(salt, pw string) string {
	d := sha256.Sum256([]byte(salt + ":" + pw))
	return hex.EncodeToString(d[:])
}

func (h *FakeHasher) Hash(pw string) (string, error) {
	salt := hex.EncodeToString([]byte{byte(h.salt.Add(1))})
	return "fake$" + salt + "$" + h.digest(salt, pw), nil
}

func (h *FakeHasher) Verify(encoded, pw string) (bool, error) {
	h.Verifies.Add(1)
	parts := strings.Split(encoded, "$")
	if len(parts) != 3 || parts[0] != "fake" {
		return false, app.Errorf(app.EINTERNAL, "not a fake hash")
	}
	return h.digest(parts[1], pw) == parts[2], nil
}
