package main

import (
	"context"
	"strings"
	"testing"
)

func TestUserCommand(t *testing.T) {
	dir := t.TempDir()
	run1 := func(args ...string) (int, string, string) {
		env, out, errOut := testEnv(t, dir, "AUTH_MODE=saas")
		code := run(context.Background(), env, append([]string{"user"}, args...))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run1("add", "ann", "--email", "ann@example.com", "--github", "ann-gh")
	if code != 0 || !inviteRe.MatchString(out) || !strings.Contains(out, "added ann (admin)") {
		t.Fatalf("add = %d %q %q (the first account is admin)", code, out, errOut)
	}
	first := inviteRe.FindString(out)
	if code, out, _ = run1("add", "bob"); code != 0 || strings.Contains(out, "(admin)") {
		t.Fatalf("second add = %d %q", code, out)
	}
	if code, _, errOut = run1("add", "bob"); code != 1 || !strings.Contains(errOut, "taken") {
		t.Fatalf("duplicate = %d %q", code, errOut)
	}
	if code, out, _ = run1("token", "ann"); code != 0 || inviteRe.FindString(out) == first || !inviteRe.MatchString(out) {
		t.Fatalf("token = %d %q", code, out)
	}
	if code, out, _ = run1("plan", "bob", "pro"); code != 0 || !strings.Contains(out, "bob: pro") {
		t.Fatalf("plan pro = %d %q", code, out)
	}
	if code, out, _ = run1("plan", "bob", "extend", "3"); code != 0 || !strings.Contains(out, "bob: pro") {
		t.Fatalf("extend = %d %q", code, out)
	}
	if code, out, _ = run1("list"); code != 0 || !strings.Contains(out, "ann") || !strings.Contains(out, "bob") {
		t.Fatalf("list = %d %q", code, out)
	}
	for _, bad := range [][]string{{}, {"add"}, {"plan", "bob", "gold"}, {"plan", "bob", "extend", "-1"}, {"frobnicate"}} {
		if code, _, _ := run1(bad...); code != 2 {
			t.Errorf("user %v = %d, want 2 (usage)", bad, code)
		}
	}
	if code, _, errOut := run1("token", "nobody"); code != 1 || !strings.Contains(errOut, "no user") {
		t.Errorf("token for a missing user = %d %q", code, errOut)
	}
}
