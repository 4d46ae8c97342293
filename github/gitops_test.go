package github

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
)

func TestRedact(t *testing.T) {
	tok := "ghs_secretsecret"
	in := "fatal: https://x-access-token:" + tok + "@example.com/a.git AUTHORIZATION: basic " + basicHeader(tok)
	out := redact(in, tok, basicHeader(tok))
	if strings.Contains(out, tok) || strings.Contains(out, basicHeader(tok)) {
		t.Fatalf("not redacted: %s", out)
	}
}

func TestGitErrorClasses(t *testing.T) {
	for detail, code := range map[string]string{
		"fatal: unable to access 'x': The requested URL returned error: 502": app.EUNAVAILABLE,
		"fatal: unable to access 'x': The requested URL returned error: 429": app.ERATELIMIT,
		" ! [rejected] main -> main (non-fast-forward)":                      app.ECONFLICT,
		"remote: Permission denied. The requested URL returned error: 403":   app.EFORBIDDEN,
		"fatal: couldn't find remote ref nope":                               app.ENOTFOUND,
	} {
		if got := app.ErrorCode(gitError(os.ErrInvalid, "git x", detail)); got != code {
			t.Errorf("%q: %s, want %s", detail, got, code)
		}
	}
}

func TestBundlePrerequisites(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b")
	os.WriteFile(p, []byte("# v2 git bundle\n-0123456789012345678901234567890123456789 base\nabcdefabcdefabcdefabcdefabcdefabcdefabcd HEAD\n\nPACK"), 0o600)
	got, err := bundlePrerequisites(p)
	if err != nil || len(got) != 1 || got[0] != "0123456789012345678901234567890123456789" {
		t.Fatalf("%v %v", got, err)
	}
	os.WriteFile(p, []byte("not a bundle\n"), 0o600)
	if _, err := bundlePrerequisites(p); app.ErrorCode(err) != app.EINVALID {
		t.Fatal(err)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{"Crash on empty input!": "crash-on-empty-input", "": "task", "ÄÖ": "task",
		strings.Repeat("abc ", 30): "abc-abc-abc-abc-abc-abc-abc-abc-abc-abc"} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
