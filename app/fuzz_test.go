package app_test

import (
	"path"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
)

// FuzzWorkspacePath: a path from a caller (the files routes, MCP) is
// either refused with EINVALID or comes back clean, absolute and inside
// /workspace — never outside it, never one of asb's own state files
// (the question file aside), and validating it again changes nothing.
// The seed corpus in testdata/fuzz/FuzzWorkspacePath holds escape
// attempts.
func FuzzWorkspacePath(f *testing.F) {
	for _, s := range []string{
		"", "src/main.go", "/workspace", "/workspace/", "../etc/passwd", "/workspace/../etc", "/workspace/a/../../x",
		"/workspacex/y", "//workspace/a", "/./workspace/a", ".agent.events", "/workspace/.agent.question",
		"/workspace/.agent.question/x", "a/./b//c/", "\x00", "/workspace/a\x00b", "..", "./..", "/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, err := app.WorkspacePath(p)
		if err != nil {
			if app.ErrorCode(err) != app.EINVALID {
				t.Fatalf("%q: error %v is not EINVALID", p, err)
			}
			return
		}
		if clean != "/workspace" && !strings.HasPrefix(clean, "/workspace/") {
			t.Fatalf("%q → %q, outside /workspace", p, clean)
		}
		if path.Clean(clean) != clean || strings.ContainsRune(clean, 0) {
			t.Fatalf("%q → %q, not clean", p, clean)
		}
		for _, el := range strings.Split(clean, "/") {
			if el == ".." {
				t.Fatalf("%q → %q climbs", p, clean)
			}
		}
		rest := strings.TrimPrefix(clean, "/workspace/")
		if strings.HasPrefix(rest, ".agent.") && rest != ".agent.question" && !strings.HasPrefix(rest, ".agent.question/") {
			t.Fatalf("%q → %q, asb's own state", p, clean)
		}
		// Validating it again changes nothing.
		if again, err := app.WorkspacePath(clean); err != nil || again != clean {
			t.Fatalf("%.200q → %.200q → %.200q %v", p, clean, again, err)
		}
	})
}

// FuzzParseRepo: an accepted "owner/name" is exactly owner + "/" + name,
// both ASCII, neither an option ("-x") nor a path step ("." or ".."),
// within GitHub's lengths, and accepted again; a refusal is EINVALID with
// a bounded message.
func FuzzParseRepo(f *testing.F) {
	for _, s := range []string{
		"acme/widgets", "octo-org/hello.world", "a/b/c", "-x/y", "x/-y", "x/..", "x/.", "/x", "x/", "ü/x",
		"x/y z", "x/y\n", "Codertocat/Hello-World", "a_b/c_d.e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		owner, name, err := app.ParseRepo(s)
		if err != nil {
			// The message quotes the input, clipped: a huge input is not
			// echoed back whole.
			if app.ErrorCode(err) != app.EINVALID || len(app.ErrorMessage(err)) > 600 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if owner+"/"+name != s {
			t.Fatalf("%q split into %q and %q", s, owner, name)
		}
		if len(owner) == 0 || len(owner) > 39 || len(name) == 0 || len(name) > 100 {
			t.Fatalf("%q: lengths %d/%d", s, len(owner), len(name))
		}
		if owner[0] == '-' || name[0] == '-' || name == "." || name == ".." || strings.Contains(owner, ".") {
			t.Fatalf("%q: an option or a path step", s)
		}
		for _, c := range s {
			if c >= 0x80 || c <= ' ' || strings.ContainsRune(`"'\$;&|<>()*?[]{}~`+"`", c) {
				t.Fatalf("%q: character %q", s, c)
			}
		}
		if o2, n2, err := app.ParseRepo(owner + "/" + name); err != nil || o2 != owner || n2 != name {
			t.Fatalf("%q not accepted again: %v", s, err)
		}
	})
}

// FuzzCheckRef: an accepted git ref cannot be read as an option, climb
// with "..", name a reflog ("@{"), end in ".lock", or carry a character
// that git or a shell would treat specially.
func FuzzCheckRef(f *testing.F) {
	for _, s := range []string{
		"main", "refs/pull/1/head", "v1.2.3", "feature/x+y", "-main", "a..b", "a//b", "a/", "/a", "x.lock", "x.",
		"a@{1}", "a b", "a~1", "a^", "a:b", "HEAD", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if app.CheckRef(s) != nil {
			return
		}
		if s == "" || len(s) > 200 || s[0] == '-' || s[0] == '/' || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".lock") ||
			strings.HasSuffix(s, ".") || strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{") {
			t.Fatalf("accepted %q", s)
		}
		for _, c := range s {
			if c >= 0x80 || c <= ' ' || strings.ContainsRune(`~^:?*[\"'$;&|<>(){}`+"`", c) {
				t.Fatalf("accepted %q with %q", s, c)
			}
		}
	})
}

// FuzzParseSessionID: an accepted id is the prefix and 1 to 40 lower-case
// letters or digits, so it can never carry a path, an option or a quote.
func FuzzParseSessionID(f *testing.F) {
	for _, s := range []string{string(app.NewSessionID()), "ses_", "ses_A", "ses_../x", "run_abc", "ses_" + strings.Repeat("a", 41)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := app.ParseSessionID(s)
		if err != nil {
			return
		}
		rest, ok := strings.CutPrefix(string(id), "ses_")
		if !ok || string(id) != s || len(rest) == 0 || len(rest) > 40 || strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Fatalf("accepted %q", s)
		}
	})
}
