// Package workspace moves an IDE's working tree to the controller: Pack
// (run by `asb mcp`) lists what git would commit plus the repository
// itself and writes it as a tar stream; Extract unpacks such a stream on
// the controller without letting it write anywhere else; Store keeps the
// unpacked trees per owner until a delegation ships one into a box.
package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/asb-dev/asb/app"
)

// Limits bound one working tree.
type Limits struct {
	// MaxBytes caps the tar stream (headers and padding included).
	MaxBytes int64
	// MaxEntries caps files, folders and symlinks together.
	MaxEntries int
	// MaxNameBytes caps one entry's path (and a symlink's target).
	MaxNameBytes int
}

// DefaultLimits fit a large repository with its history.
var DefaultLimits = Limits{MaxBytes: 100 << 20, MaxEntries: 200_000, MaxNameBytes: 1024}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = DefaultLimits.MaxNameBytes
	}
	return l
}

// errTooLarge is what the capped reader returns past MaxBytes.
var errTooLarge = errors.New("workspace stream over its cap")

type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a stream that ends exactly at the cap from
		// one that goes on.
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// Extract unpacks a tar stream into dst, an existing empty folder. Only
// regular files, folders and symlinks are accepted, each at a clean
// relative path that goes through no symlink; modes keep their permission
// bits (the exec bit matters) but never setuid, setgid or sticky. Symlinks
// are stored as they are and never followed here. An unsafe or malformed
// archive is EINVALID and one over the caps ETOOLARGE; on error dst may
// hold part of the tree, and the caller removes it.
func Extract(r io.Reader, dst string, l Limits) error {
	l = l.withDefaults()
	capped := &cappedReader{r: r, left: l.MaxBytes}
	tr := tar.NewReader(capped)
	seen := map[string]bool{}
	entries := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if entries == 0 {
				return app.Errorf(app.EINVALID, "the workspace archive is empty")
			}
			// Padding after the end marker is normal (tar writes whole
			// records); it still counts against the cap.
			if _, err := io.Copy(io.Discard, capped); err != nil {
				return streamError(err, l)
			}
			return nil
		}
		if err != nil {
			return streamError(err, l)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata for the whole archive; nothing to write
		}
		entries++
		if entries > l.MaxEntries {
			return app.Errorf(app.ETOOLARGE, "the workspace has more than %d entries", l.MaxEntries)
		}
		rel, err := entryPath(hdr.Name, l.MaxNameBytes)
		if err != nil {
			return err
		}
		if rel == "." {
			continue // the root folder itself
		}
		if err := checkParents(dst, rel); err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = extractDir(target, rel, hdr.Mode)
		case tar.TypeReg, tar.TypeRegA:
			if seen[rel] {
				return app.Errorf(app.EINVALID, "the workspace archive has %q twice", clipName(rel))
			}
			err = extractFile(tr, target, hdr, l)
		case tar.TypeSymlink:
			if seen[rel] {
				return app.Errorf(app.EINVALID, "the workspace archive has %q twice", clipName(rel))
			}
			if len(hdr.Linkname) == 0 || len(hdr.Linkname) > l.MaxNameBytes || strings.ContainsRune(hdr.Linkname, 0) {
				return app.Errorf(app.EINVALID, "symlink %q has an empty or overlong target", clipName(rel))
			}
			err = os.Symlink(hdr.Linkname, target)
		default:
			return app.Errorf(app.EINVALID, "%q is a %s; a workspace holds only files, folders and symlinks", clipName(rel), typeName(hdr.Typeflag))
		}
		if err != nil {
			return writeError(rel, err, l)
		}
		seen[rel] = true
	}
}

// entryPath validates an entry's name and returns it cleaned and relative.
func entryPath(name string, max int) (string, error) {
	if name == "" || len(name) > max {
		return "", app.Errorf(app.EINVALID, "an entry name is empty or longer than %d bytes", max)
	}
	if !utf8.ValidString(name) || strings.ContainsRune(name, 0) || strings.Contains(name, "\\") {
		return "", app.Errorf(app.EINVALID, "entry %q has a name that is not clean UTF-8", clipName(name))
	}
	if strings.HasPrefix(name, "/") {
		return "", app.Errorf(app.EINVALID, "entry %q has an absolute path", clipName(name))
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if part == ".." {
			return "", app.Errorf(app.EINVALID, "entry %q climbs out with ..", clipName(name))
		}
	}
	return path.Clean(name), nil
}

// checkParents makes sure every folder above rel is a real folder inside
// dst, creating missing ones, so that no entry is written through a
// symlink (a link to / followed by a file "link/etc/x" would otherwise
// land outside).
func checkParents(dst, rel string) error {
	dir := dst
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", part, err)
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return app.Errorf(app.EINVALID, "entry %q goes through a symlink", clipName(rel))
		case !fi.IsDir():
			return app.Errorf(app.EINVALID, "entry %q is under a file", clipName(rel))
		}
	}
	return nil
}

func extractDir(target, rel string, mode int64) error {
	perm := fs.FileMode(mode)&0o777 | 0o700 // asb must be able to fill and delete it
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.Mkdir(target, perm)
	case err != nil:
		return err
	case !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0:
		return app.Errorf(app.EINVALID, "folder %q is also a file or symlink in the archive", clipName(rel))
	}
	return os.Chmod(target, perm)
}

func extractFile(tr io.Reader, target string, hdr *tar.Header, l Limits) error {
	if hdr.Size < 0 || hdr.Size > l.MaxBytes {
		return app.Errorf(app.ETOOLARGE, "file %q is larger than the workspace cap of %d bytes", clipName(hdr.Name), l.MaxBytes)
	}
	// O_EXCL never follows or reuses an existing name, symlinks included.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(hdr.Mode)&0o777|0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return app.Errorf(app.EINVALID, "the workspace archive has %q twice", clipName(hdr.Name))
		}
		return err
	}
	_, err = io.Copy(f, tr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func streamError(err error, l Limits) error {
	if errors.Is(err, errTooLarge) {
		return app.Errorf(app.ETOOLARGE, "the workspace is larger than %d bytes (WORKSPACE_MAX_BYTES)", l.MaxBytes)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) {
		return app.WrapError(app.EINVALID, err, "the workspace archive is not a complete tar stream")
	}
	return fmt.Errorf("read the workspace archive: %w", err)
}

func writeError(rel string, err error, l Limits) error {
	var ae *app.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, errTooLarge) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader) {
		return streamError(err, l)
	}
	if errors.Is(err, fs.ErrExist) {
		return app.Errorf(app.EINVALID, "the workspace archive has %q twice", clipName(rel))
	}
	return fmt.Errorf("write %s: %w", rel, err)
}

func typeName(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "named pipe"
	default:
		return fmt.Sprintf("tar entry of type %q", t)
	}
}

func clipName(s string) string {
	if len(s) > 120 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}
