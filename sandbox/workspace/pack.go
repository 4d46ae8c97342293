package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Tree is a working tree ready to be packed: what git would commit from
// it (tracked files with their uncommitted changes, and untracked files
// that .gitignore does not exclude) plus the .git folder, so history and
// the current branch travel and the agent's commits can be bundled back.
type Tree struct {
	Root    string
	entries []entry
	// Files counts regular files and symlinks; Bytes is the tar stream's size.
	Files int
	Bytes int64
}

type entry struct {
	rel  string // slash-separated, relative to Root
	info fs.FileInfo
}

// List collects the tree at dir, which must be inside a git repository;
// the repository's top folder is what is listed. A folder that is not a
// repository is refused: without .gitignore nothing says what must stay
// on this machine (keys, .env files, build output).
func List(ctx context.Context, dir string, l Limits) (*Tree, error) {
	l = l.withDefaults()
	root, err := Root(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	t := &Tree{Root: root}
	seen := map[string]bool{}
	add := func(rel string) error {
		if seen[rel] {
			return nil
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted in the working tree: the deletion travels too
		}
		if err != nil {
			return err
		}
		switch {
		case fi.Mode().IsRegular(), fi.Mode()&fs.ModeSymlink != 0:
			t.Files++
		case fi.IsDir():
		default:
			return nil // sockets, pipes, devices mean nothing in a box
		}
		if len(rel) > l.MaxNameBytes {
			return fmt.Errorf("%s: the path is longer than %d bytes", rel, l.MaxNameBytes)
		}
		seen[rel] = true
		t.entries = append(t.entries, entry{rel: rel, info: fi})
		t.Bytes += tarSize(fi)
		if len(t.entries) > l.MaxEntries {
			return fmt.Errorf("the working tree has more than %d entries", l.MaxEntries)
		}
		if t.Bytes > l.MaxBytes {
			return fmt.Errorf("the working tree is more than %.1f MiB, above WORKSPACE_MAX_BYTES (%.1f MiB); add build output to .gitignore or raise the limit on the controller", mib(t.Bytes), mib(l.MaxBytes))
		}
		return nil
	}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		if err := add(rel); err != nil {
			return nil, err
		}
	}
	err = filepath.WalkDir(filepath.Join(root, ".git"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return add(filepath.ToSlash(rel))
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", filepath.Join(root, ".git"), err)
	}
	// Parents before children, for a tidy archive.
	sort.Slice(t.entries, func(i, j int) bool { return t.entries[i].rel < t.entries[j].rel })
	t.Bytes += 1024 // the end-of-archive blocks
	return t, nil
}

// Root returns the top folder of the git repository that holds dir, or
// says why that tree cannot be shipped.
func Root(ctx context.Context, dir string) (string, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("git is not installed; it is needed to list %s", dir)
		}
		return "", fmt.Errorf("%s is not inside a git repository; run git init there (asb ships what git would commit, so .gitignore decides what leaves this machine)", dir)
	}
	root := strings.TrimRight(string(top), "\n")
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s has no .git folder (a linked worktree or a submodule); point WORKSPACE_DIR at the main checkout", root)
	}
	return root, nil
}

// Pack writes the tree as a tar stream. A file that changes size while it
// is packed fails the pack rather than ship a torn copy.
func (t *Tree) Pack(ctx context.Context, w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range t.entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.packOne(tw, e); err != nil {
			return err
		}
	}
	return tw.Close()
}

func (t *Tree) packOne(tw *tar.Writer, e entry) error {
	full := filepath.Join(t.Root, filepath.FromSlash(e.rel))
	hdr := &tar.Header{Name: e.rel, Mode: int64(e.info.Mode().Perm()), ModTime: e.info.ModTime().Truncate(time.Second)}
	switch {
	case e.info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, e.rel+"/"
		return tw.WriteHeader(hdr)
	case e.info.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(full)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
		return tw.WriteHeader(hdr)
	}
	f, err := os.Open(full)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != e.info.Size() {
		return fmt.Errorf("%s changed while it was packed; try again", e.rel)
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("%s: %w (did it change while it was packed?)", e.rel, err)
	}
	return nil
}

// tarSize is what one entry adds to the stream: a header block (two with
// a PAX record for a long name) and the content padded to 512 bytes.
func tarSize(fi fs.FileInfo) int64 {
	n := int64(1024)
	if fi.Mode().IsRegular() {
		n += (fi.Size() + 511) / 512 * 512
	}
	return n
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// git runs a read-only git command in dir and returns its stdout.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// No prompts, no pager, nothing from the user's environment that
	// changes where git looks.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GIT_DIR" && k != "GIT_WORK_TREE" && k != "GIT_INDEX_FILE" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
