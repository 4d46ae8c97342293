package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unsafe"
)

// treeFS is a filesystem the copy engine reads from and writes to: the host
// (plain paths) or a box's root (paths resolved inside it).
type treeFS interface {
	Lstat(p string) (os.FileInfo, error)
	Stat(p string) (os.FileInfo, error)
	ReadDirNames(p string) ([]string, error)
	Open(p string) (*os.File, error)
	Create(p string, mode os.FileMode) (*os.File, error)
	Mkdir(p string, mode os.FileMode) error
	Symlink(target, p string) error
	Readlink(p string) (string, error)
	Remove(p string) error
}

// hostFS is the host filesystem.
type hostFS struct{}

func (hostFS) Lstat(p string) (os.FileInfo, error) { return os.Lstat(p) }
func (hostFS) Stat(p string) (os.FileInfo, error)  { return os.Stat(p) }
func (hostFS) ReadDirNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}
func (hostFS) Open(p string) (*os.File, error) { return os.Open(p) }
func (hostFS) Create(p string, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err == nil {
		_ = f.Chmod(mode)
	}
	return f, err
}
func (hostFS) Mkdir(p string, mode os.FileMode) error {
	if err := os.Mkdir(p, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}
func (hostFS) Symlink(target, p string) error    { return os.Symlink(target, p) }
func (hostFS) Readlink(p string) (string, error) { return os.Readlink(p) }
func (hostFS) Remove(p string) error             { return os.Remove(p) }

// guestFS resolves every path inside a box's root with openat2
// RESOLVE_IN_ROOT, so absolute and `..` symlinks created by the guest stay
// inside the box, exactly as they would in the guest's own view.
type guestFS struct {
	root *os.File // O_PATH directory fd of /proc/<init>/root
}

func openGuestFS(initPid int) (*guestFS, error) {
	fd, err := syscall.Open(fmt.Sprintf("/proc/%d/root", initPid), oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open sandbox root: %w", err)
	}
	return &guestFS{root: os.NewFile(uintptr(fd), "guest-root")}, nil
}

func (g *guestFS) Close() error { return g.root.Close() }

const (
	oPath               = 0x200000 // O_PATH (asm-generic value; missing from package syscall)
	sysOpenat2          = 437      // same number on every Linux architecture
	resolveNoMagiclinks = 0x02
	resolveInRoot       = 0x10
)

type openHow struct {
	flags   uint64
	mode    uint64
	resolve uint64
}

func (g *guestFS) openat2(p string, flags int, mode uint32) (*os.File, error) {
	rel := strings.TrimLeft(path.Clean("/"+p), "/")
	if rel == "" {
		rel = "."
	}
	bp, err := syscall.BytePtrFromString(rel)
	if err != nil {
		return nil, err
	}
	how := openHow{flags: uint64(flags | syscall.O_CLOEXEC), mode: uint64(mode), resolve: resolveInRoot | resolveNoMagiclinks}
	for {
		r, _, e := syscall.Syscall6(sysOpenat2, g.root.Fd(), uintptr(unsafe.Pointer(bp)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 {
			return nil, &os.PathError{Op: "open", Path: p, Err: e}
		}
		return os.NewFile(r, p), nil
	}
}

// parent opens the directory holding p and returns a host path that names
// p's last component inside it without following it.
func (g *guestFS) parent(p string) (string, func(), error) {
	clean := path.Clean("/" + p)
	dir, err := g.openat2(path.Dir(clean), oPath|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), path.Base(clean)), func() { dir.Close() }, nil
}

func (g *guestFS) Lstat(p string) (os.FileInfo, error) {
	if path.Clean("/"+p) == "/" {
		return g.root.Stat()
	}
	q, done, err := g.parent(p)
	if err != nil {
		return nil, err
	}
	defer done()
	return os.Lstat(q)
}

func (g *guestFS) Stat(p string) (os.FileInfo, error) {
	f, err := g.openat2(p, oPath, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

func (g *guestFS) ReadDirNames(p string) ([]string, error) {
	f, err := g.openat2(p, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

func (g *guestFS) Open(p string) (*os.File, error) { return g.openat2(p, syscall.O_RDONLY, 0) }

func (g *guestFS) Create(p string, mode os.FileMode) (*os.File, error) {
	f, err := g.openat2(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, uint32(mode.Perm()))
	if err == nil {
		_ = f.Chmod(mode)
	}
	return f, err
}

func (g *guestFS) Mkdir(p string, mode os.FileMode) error {
	q, done, err := g.parent(p)
	if err != nil {
		return err
	}
	defer done()
	if err := os.Mkdir(q, mode); err != nil {
		return err
	}
	return os.Chmod(q, mode)
}

func (g *guestFS) Symlink(target, p string) error {
	q, done, err := g.parent(p)
	if err != nil {
		return err
	}
	defer done()
	return os.Symlink(target, q)
}

func (g *guestFS) Readlink(p string) (string, error) {
	q, done, err := g.parent(p)
	if err != nil {
		return "", err
	}
	defer done()
	return os.Readlink(q)
}

func (g *guestFS) Remove(p string) error {
	q, done, err := g.parent(p)
	if err != nil {
		return err
	}
	defer done()
	return os.Remove(q)
}

// copier copies trees between two treeFS. With confine set (copy-out to the
// host), symlinks whose target would leave the destination tree are skipped.
type copier struct {
	src, dst treeFS
	confine  bool
	dstTop   string
}

// copyEntry copies src path sp to dst path dp recursively, keeping file modes
// (& 0o7777) and copying symlinks as symlinks.
func (c *copier) copyEntry(sp, dp string, fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return c.copyLink(sp, dp)
	case fi.IsDir():
		return c.copyDir(sp, dp, fi.Mode())
	case fi.Mode().IsRegular():
		return c.copyFile(sp, dp, fi.Mode())
	}
	return nil // sockets, fifos and devices are not copied
}

func (c *copier) copyLink(sp, dp string) error {
	target, err := c.src.Readlink(sp)
	if err != nil {
		return err
	}
	if c.confine && escapes(c.dstTop, dp, target) {
		warnf("skipping symlink %s -> %s: target is outside the destination", sp, target)
		return nil
	}
	if err := c.dst.Symlink(target, dp); errors.Is(err, os.ErrExist) {
		_ = c.dst.Remove(dp)
		return c.dst.Symlink(target, dp)
	} else if err != nil {
		return err
	}
	return nil
}

// escapes reports whether a symlink at dp pointing to target resolves outside top.
func escapes(top, dp, target string) bool {
	if filepath.IsAbs(target) {
		return true
	}
	resolved := filepath.Join(filepath.Dir(dp), target)
	rel, err := filepath.Rel(top, resolved)
	return err != nil || rel == ".." || strings.HasPrefix(rel, "../")
}

func (c *copier) copyDir(sp, dp string, mode os.FileMode) error {
	if err := mkdirAll(c.dst, dp, mode.Perm()|0o700); err != nil {
		return err
	}
	names, err := c.src.ReadDirNames(sp)
	if err != nil {
		return err
	}
	for _, n := range names {
		cfi, err := c.src.Lstat(joinPath(sp, n))
		if err != nil {
			return err
		}
		if err := c.copyEntry(joinPath(sp, n), joinPath(dp, n), cfi); err != nil {
			return err
		}
	}
	return chmodDir(c.dst, dp, mode)
}

func chmodDir(fs treeFS, p string, mode os.FileMode) error {
	switch f := fs.(type) {
	case hostFS:
		return os.Chmod(p, modeBits(mode))
	case *guestFS:
		d, err := f.openat2(p, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Chmod(modeBits(mode))
	}
	return nil
}

// modeBits keeps permission, setuid/setgid and sticky bits (& 0o7777).
func modeBits(m os.FileMode) os.FileMode {
	return m & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
}

func (c *copier) copyFile(sp, dp string, mode os.FileMode) error {
	in, err := c.src.Open(sp)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := c.dst.Create(dp, modeBits(mode))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	_ = out.Chmod(modeBits(mode))
	return out.Close()
}

// mkdirAll is create_dir_all on a treeFS.
func mkdirAll(fs treeFS, p string, mode os.FileMode) error {
	if fi, err := fs.Stat(p); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
	}
	parent := filepath.Dir(p)
	if parent != p {
		if err := mkdirAll(fs, parent, 0o755); err != nil {
			return err
		}
	}
	if err := fs.Mkdir(p, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// joinPath joins without cleaning away a relative host prefix like "./".
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
