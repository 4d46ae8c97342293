package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/scrypt"

	"github.com/asb-dev/asb/app"
)

// ScryptHasher implements app.PasswordHasher with scrypt. Hashes are
// self-describing ("scrypt$N$r$p$salt$key", base64 without padding), so
// the cost can be raised later and old hashes still verify.
type ScryptHasher struct {
	// N is the CPU/memory cost (a power of two); 0 means DefaultScryptN.
	N int
}

// DefaultScryptN is scrypt's recommended interactive cost (2^15, 32 MiB with r=8).
const DefaultScryptN = 1 << 15

const (
	scryptR      = 8
	scryptP      = 1
	scryptKeyLen = 32
	// scryptMaxN bounds the cost read from a stored hash, so a tampered
	// row cannot make one sign-in take the machine's memory.
	scryptMaxN = 1 << 20
)

var _ app.PasswordHasher = ScryptHasher{}

var b64 = base64.RawStdEncoding

// Hash implements app.PasswordHasher.
func (h ScryptHasher) Hash(password string) (string, error) {
	n := h.N
	if n == 0 {
		n = DefaultScryptN
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key, err := scrypt.Key([]byte(password), salt, n, scryptR, scryptP, scryptKeyLen)
	if err != nil {
		return "", fmt.Errorf("scrypt: %w", err)
	}
	return fmt.Sprintf("scrypt$%d$%d$%d$%s$%s", n, scryptR, scryptP, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify implements app.PasswordHasher, comparing in constant time.
func (h ScryptHasher) Verify(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "scrypt" {
		return false, fmt.Errorf("not an scrypt hash")
	}
	var cost [3]int
	for i := range cost {
		v, err := strconv.Atoi(parts[1+i])
		if err != nil || v < 1 {
			return false, fmt.Errorf("bad scrypt parameter")
		}
		cost[i] = v
	}
	if cost[0] > scryptMaxN || cost[1] > 32 || cost[2] > 16 {
		return false, fmt.Errorf("scrypt parameters out of range")
	}
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false, fmt.Errorf("bad scrypt encoding")
	}
	got, err := scrypt.Key([]byte(password), salt, cost[0], cost[1], cost[2], len(want))
	if err != nil {
		return false, fmt.Errorf("scrypt: %w", err)
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
