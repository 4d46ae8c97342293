package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// endpoint is one side of `msb copy`: a local path (box == "") or
// SANDBOX:/absolute/path.
type endpoint struct {
	box  string
	path string
}

// parseEndpoint implements commands/copy.rs endpoint parsing.
func parseEndpoint(v string) (endpoint, error) {
	if isLocalPath(v) || v == "." || v == ".." {
		return endpoint{path: v}, nil
	}
	name, p, ok := strings.Cut(v, ":")
	if !ok {
		return endpoint{path: v}, nil
	}
	if !strings.HasPrefix(p, "/") {
		return endpoint{}, fmt.Errorf("ambiguous copy endpoint `%s`; use SANDBOX:/absolute/path for sandbox paths or prefix local paths with ./", v)
	}
	if err := validateName(name); err != nil {
		return endpoint{}, err
	}
	return endpoint{box: name, path: p}, nil
}

// cmdCopy implements `msb copy|cp [-q] SOURCE DESTINATION`.
func cmdCopy(args []string) error {
	p, err := copySpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) < 2 {
		return usageErr("copy", "the following required arguments were not provided:\n  <SOURCE>\n  <DESTINATION>")
	}
	src, err := parseEndpoint(p.pos[0])
	if err != nil {
		return err
	}
	dst, err := parseEndpoint(p.pos[1])
	if err != nil {
		return err
	}
	if src.box == "" && dst.box == "" {
		return fmt.Errorf("msb copy requires at least one sandbox endpoint (SANDBOX:/path)")
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	sessions := map[string]*session{}
	err = a.locked(func() error { return a.openCopySessions(sessions, src.box, dst.box) })
	if err == nil {
		err = copyBetween(sessions, src, dst)
	}
	_ = a.locked(func() error {
		for _, s := range sessions {
			a.closeSession(s, false)
		}
		return nil
	})
	return err
}

func (a *app) openCopySessions(sessions map[string]*session, names ...string) error {
	for _, n := range names {
		if n == "" || sessions[n] != nil {
			continue
		}
		s, err := a.openSession(n)
		if err != nil {
			return err
		}
		sessions[n] = s
	}
	return nil
}

// copyBetween performs the copy once both sides are reachable.
func copyBetween(sessions map[string]*session, src, dst endpoint) error {
	srcFS, closeSrc, err := endpointFS(sessions, src)
	if err != nil {
		return err
	}
	defer closeSrc()
	dstFS, closeDst, err := endpointFS(sessions, dst)
	if err != nil {
		return err
	}
	defer closeDst()
	fi, err := srcFS.Stat(src.path)
	if err != nil {
		return fsError(src, "stat", err)
	}
	target := copyTarget(dstFS, dst.path, src.path)
	c := &copier{src: srcFS, dst: dstFS, confine: dst.box == "", dstTop: target}
	if fi.IsDir() {
		// Directories are created with their parents (create_dir_all).
		if err := c.copyDir(src.path, target, fi.Mode()); err != nil {
			return fsError(dst, "write", err)
		}
		return nil
	}
	// Single files never get missing parents created.
	if err := c.copyFile(src.path, target, fi.Mode()); err != nil {
		return fsError(dst, "open", err)
	}
	return nil
}

// copyTarget applies the docker-cp destination rule: a DST ending in `/` or
// naming an existing directory receives DST/<basename(SRC)>.
func copyTarget(fs treeFS, dst, src string) string {
	base := path.Base(path.Clean(src))
	if strings.HasSuffix(dst, "/") {
		return joinPath(dst, base)
	}
	if fi, err := fs.Stat(dst); err == nil && fi.IsDir() {
		return joinPath(dst, base)
	}
	return dst
}

func endpointFS(sessions map[string]*session, e endpoint) (treeFS, func(), error) {
	if e.box == "" {
		return hostFS{}, func() {}, nil
	}
	g, err := openGuestFS(sessions[e.box].rt.InitPid)
	if err != nil {
		return nil, nil, err
	}
	return g, func() { g.Close() }, nil
}

// fsError renders failures like msb: host errors carry the context message
// (`stat /no/such`), sandbox errors the agent's io::Error.
func fsError(e endpoint, op string, err error) error {
	var errno error = err
	var pe *os.PathError
	if errors.As(err, &pe) {
		errno = pe.Err
	}
	if e.box == "" {
		if op == "stat" {
			return fmt.Errorf("stat %s", e.path)
		}
		return fmt.Errorf("%s %s: %s", op, e.path, rustIOError(errno))
	}
	return fmt.Errorf("sandbox fs error: %s: %s", op, rustIOError(errno))
}
