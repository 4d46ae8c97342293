package web_test

import (
	"strings"
	"testing"

	"github.com/asb-dev/asb/web"
)

func TestScryptHasher(t *testing.T) {
	h := web.ScryptHasher{N: 1 << 10}
	const pw = "correct horse battery"
	a, err := h.Hash(pw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Hash(pw)
	if a == b {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if strings.Contains(a, pw) || !strings.HasPrefix(a, "scrypt$1024$8$1$") {
		t.Fatalf("hash = %q", a)
	}
	if ok, err := h.Verify(a, pw); !ok || err != nil {
		t.Fatalf("Verify(right) = %v %v", ok, err)
	}
	if ok, err := h.Verify(a, pw+"x"); ok || err != nil {
		t.Fatalf("Verify(wrong) = %v %v", ok, err)
	}
	parts := strings.Split(a, "$")
	for _, bad := range []string{"", "plain", "scrypt$1$2$3", "scrypt$x$8$1$" + parts[4] + "$" + parts[5],
		"scrypt$1073741824$8$1$" + parts[4] + "$" + parts[5], // a cost that would take the machine's memory
		"scrypt$1024$8$1$!!$" + parts[5]} {
		if ok, err := h.Verify(bad, pw); ok || err == nil {
			t.Errorf("Verify(%q) = %v %v, want an error", bad, ok, err)
		}
	}
}
