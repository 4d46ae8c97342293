package workspace_test

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/workspace"
)

// ent is one tar entry of a test archive.
type ent struct {
	name, link, body string
	typ              byte
	mode             int64
	size             int64 // overrides len(body) in the header when set
}

func file(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }

func archive(t *testing.T, es ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body))}
		if e.size != 0 {
			h.Size = e.size
		}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("header %s: %v", e.name, err)
		}
		if e.typ == tar.TypeReg && e.size == 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil && !strings.Contains(err.Error(), "missed writing") {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// listTree returns every path under dir, relative, with a "/" for folders
// and "@" for symlinks.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			rel += "@"
		case d.IsDir():
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	return out
}

func TestExtractRefusesHostileArchives(t *testing.T) {
	small := workspace.Limits{MaxBytes: 64 << 10, MaxEntries: 5, MaxNameBytes: 200}
	many := []ent{}
	for i := range 6 {
		many = append(many, file(strings.Repeat("f", i+1), "x"))
	}
	cases := []struct {
		name    string
		entries []ent
		raw     []byte // used instead of entries when set
		limits  workspace.Limits
		code    string
		msg     string
	}{
		{name: "dot-dot", entries: []ent{file("../escaped", "pwned")}, code: app.EINVALID, msg: "climbs out"},
		{name: "dot-dot inside", entries: []ent{file("a/../../escaped", "pwned")}, code: app.EINVALID, msg: "climbs out"},
		{name: "absolute", entries: []ent{file("/tmp/escaped", "pwned")}, code: app.EINVALID, msg: "absolute"},
		{name: "write through a symlink", entries: []ent{
			{name: "link", link: "..", typ: tar.TypeSymlink, mode: 0o777},
			file("link/escaped", "pwned"),
		}, code: app.EINVALID, msg: "through a symlink"},
		{name: "write through an absolute symlink", entries: []ent{
			{name: "d/link", link: "/", typ: tar.TypeSymlink, mode: 0o777},
			file("d/link/tmp/escaped", "pwned"),
		}, code: app.EINVALID, msg: "through a symlink"},
		{name: "replace a symlink by a file", entries: []ent{
			{name: "link", link: "../escaped", typ: tar.TypeSymlink, mode: 0o777},
			file("link", "pwned"),
		}, code: app.EINVALID, msg: "twice"},
		{name: "hard link", entries: []ent{{name: "h", link: "/etc/passwd", typ: tar.TypeLink}}, code: app.EINVALID, msg: "hard link"},
		{name: "character device", entries: []ent{{name: "null", typ: tar.TypeChar, mode: 0o666}}, code: app.EINVALID, msg: "character device"},
		{name: "block device", entries: []ent{{name: "sda", typ: tar.TypeBlock, mode: 0o666}}, code: app.EINVALID, msg: "block device"},
		{name: "fifo", entries: []ent{{name: "p", typ: tar.TypeFifo, mode: 0o666}}, code: app.EINVALID, msg: "named pipe"},
		{name: "huge file", entries: []ent{file("big", strings.Repeat("x", 100<<10))}, limits: small, code: app.ETOOLARGE, msg: "larger than"},
		{name: "huge declared size", entries: []ent{{name: "big", typ: tar.TypeReg, mode: 0o644, size: 1 << 40}}, limits: small, code: app.ETOOLARGE},
		{name: "too many entries", entries: many, limits: small, code: app.ETOOLARGE, msg: "more than 5 entries"},
		{name: "long name", entries: []ent{file(strings.Repeat("n", 201), "x")}, limits: small, code: app.EINVALID, msg: "longer than"},
		{name: "truncated", raw: archive(t, file("a", strings.Repeat("x", 4096)))[:1024], code: app.EINVALID, msg: "not a complete tar"},
		{name: "not a tar", raw: bytes.Repeat([]byte("garbage!"), 200), code: app.EINVALID},
		{name: "empty", raw: archive(t), code: app.EINVALID, msg: "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dst := filepath.Join(base, "dst")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			raw := c.raw
			if raw == nil {
				raw = archive(t, c.entries...)
			}
			err := workspace.Extract(bytes.NewReader(raw), dst, c.limits)
			if err == nil {
				t.Fatalf("accepted; tree: %v", listTree(t, dst))
			}
			if got := app.ErrorCode(err); got != c.code || !strings.Contains(app.ErrorMessage(err), c.msg) {
				t.Fatalf("error %v (code %s), want %s containing %q", err, got, c.code, c.msg)
			}
			if strings.Contains(app.ErrorMessage(err), base) {
				t.Fatalf("the message names a controller path: %s", app.ErrorMessage(err))
			}
			// Nothing was written next to dst, or anywhere it could reach.
			if got := listTree(t, base); len(got) > 0 && got[0] != "dst/" {
				t.Fatalf("written outside dst: %v", got)
			}
			for _, p := range listTree(t, base) {
				if strings.Contains(p, "escaped") && !strings.HasSuffix(p, "@") {
					t.Fatalf("an escaping file exists: %s", p)
				}
			}
			if _, err := os.Stat("/tmp/escaped"); err == nil {
				t.Fatal("/tmp/escaped was written")
			}
		})
	}
}

func TestExtractKeepsTheTree(t *testing.T) {
	dst := t.TempDir()
	raw := archive(t,
		ent{name: "./", typ: tar.TypeDir, mode: 0o755},
		file("README.md", "hello\n"),
		ent{name: "bin/run.sh", body: "#!/bin/sh\necho hi\n", typ: tar.TypeReg, mode: 0o4755},
		ent{name: "docs/", typ: tar.TypeDir, mode: 0o500},
		file("docs/a.txt", "a"),
		ent{name: "latest", link: "docs/a.txt", typ: tar.TypeSymlink, mode: 0o777},
		ent{name: "outside", link: "/etc/passwd", typ: tar.TypeSymlink, mode: 0o777},
	)
	if err := workspace.Extract(bytes.NewReader(raw), dst, workspace.Limits{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "bin/", "bin/run.sh", "docs/", "docs/a.txt", "latest@", "outside@"}
	if got := listTree(t, dst); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tree %v, want %v", got, want)
	}
	fi, err := os.Stat(filepath.Join(dst, "bin/run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&fs.ModeSetuid != 0 {
		t.Fatalf("run.sh mode %v (want 0755, exec kept, setuid dropped): %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "docs")); fi.Mode().Perm()&0o700 != 0o700 {
		t.Fatalf("docs/ is %v: asb could not clean it up", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(dst, "outside")); l != "/etc/passwd" {
		t.Fatalf("symlink target %q", l)
	}
}

func TestExtractAcceptsAStreamExactlyAtTheCap(t *testing.T) {
	raw := archive(t, file("a", strings.Repeat("x", 3000)))
	if err := workspace.Extract(bytes.NewReader(raw), t.TempDir(), workspace.Limits{MaxBytes: int64(len(raw))}); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	err := workspace.Extract(bytes.NewReader(append(raw, 0)), t.TempDir(), workspace.Limits{MaxBytes: int64(len(raw))})
	if app.ErrorCode(err) != app.ETOOLARGE {
		t.Fatalf("one byte over the cap: %v", err)
	}
}
