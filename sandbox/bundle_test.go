package sandbox_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox"
)

// TestOpenBundleStaysInTheBundleFolder checks that OpenBundle opens the
// bundles Collect wrote by base name and nothing else: no path, no file
// outside the folder, no symlink out of it.
func TestOpenBundleStaysInTheBundleFolder(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bundles")
	if err := os.MkdirAll(filepath.Join(dir, "sub.bundle"), 0o700); err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{
		filepath.Join(dir, "asb-s-1-work-abc.bundle"): "BUNDLE",
		filepath.Join(root, "secret.bundle"):          "SECRET",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret.bundle"), filepath.Join(dir, "link.bundle")); err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New(nil, sandbox.RuntimeConfig{BundleDir: dir}, nil)

	rc, size, err := sb.OpenBundle("asb-s-1-work-abc.bundle")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "BUNDLE" || size != 6 {
		t.Fatalf("bundle %q size %d", body, size)
	}
	for name, code := range map[string]string{
		"../secret.bundle": app.EINVALID,
		"/etc/passwd":      app.EINVALID,
		"notes.txt":        app.EINVALID,
		"gone.bundle":      app.ENOTFOUND,
		"link.bundle":      app.ENOTFOUND,
		"sub.bundle":       app.ENOTFOUND,
	} {
		rc, _, err := sb.OpenBundle(name)
		if err == nil {
			rc.Close()
		}
		if app.ErrorCode(err) != code {
			t.Errorf("OpenBundle(%q) = %v, want %s", name, err, code)
		}
	}
}
