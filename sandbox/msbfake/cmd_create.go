package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

func alreadyExists(name string) error {
	return fmt.Errorf("sandbox already exists: sandbox '%s' already exists; remove it, start the stopped sandbox, or recreate with .replace()", name)
}

// freshName picks an unused generated name.
func (a *app) freshName() string {
	for {
		n := generateName()
		if a.st.Sandboxes[n] == nil {
			return n
		}
	}
}

// createBox resolves the image (or snapshot), lays out the guest root,
// applies rootfs patches and records the sandbox. The caller boots it.
func (a *app) createBox(name string, o *createOpts, ephemeral bool, snap *Snapshot) (*Sandbox, error) {
	image, policy := o.image, o.cfg.PullPolicy
	var ref string
	var err error
	if snap != nil {
		image = snap.Image
		ref, err = a.ensureSnapshotImage(snap, policy)
	} else {
		ref, err = a.ensureImage(image, policy)
	}
	if err != nil {
		return nil, err
	}
	b := &Sandbox{Name: name, Image: image, ImageRef: ref, Status: statusStopped, CreatedAt: a.now,
		UpdatedAt: a.now, Ephemeral: ephemeral, Config: o.cfg}
	if err := checkSecrets(b); err != nil {
		return nil, err
	}
	if err := a.layoutRoot(b, snap); err != nil {
		_ = removeTree(a.boxDir(name))
		return nil, err
	}
	b.ID = a.st.NextID
	a.st.NextID++
	if snap != nil {
		b.FromSnapshot = snap.Name
	}
	a.st.Sandboxes[name] = b
	return b, nil
}

func (a *app) layoutRoot(b *Sandbox, snap *Snapshot) error {
	dir := a.boxDir(b.Name)
	if err := removeTree(dir); err != nil { // leftovers of a box that lost its record
		return err
	}
	root := a.boxRoot(b.Name)
	if snap != nil {
		src := filepath.Join(snap.Path, "root")
		fi, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("snapshot artifact is missing: %s", src)
		}
		c := &copier{src: hostFS{}, dst: hostFS{}}
		if err := c.copyEntry(src, root, fi); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
	}
	if err := ensureSkeleton(root); err != nil {
		return err
	}
	return applyPatches(root, b.Config.Patches)
}

// applyPatches applies rootfs patches with `replace: false`: a destination
// that already exists in the image layer is refused (sandbox/patch.rs).
func applyPatches(root string, patches []Patch) error {
	for _, p := range patches {
		if err := applyPatch(root, p); err != nil {
			return err
		}
	}
	return nil
}

func applyPatch(root string, p Patch) error {
	host := hostViewOf(root, p.Dst)
	readOnly := !strings.HasPrefix(host, root)
	switch p.Kind {
	case "mkdir":
		if readOnly {
			return patchReadOnly(p.Dst)
		}
		return mkdirAll(hostFS{}, host, 0o755)
	case "rm":
		if readOnly {
			return patchReadOnly(p.Dst)
		}
		return removeTree(host)
	case "script":
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return fmt.Errorf("patch failed: %w", err)
		}
		return os.WriteFile(host, []byte(p.Body), 0o755)
	}
	if _, err := os.Lstat(host); err == nil {
		return fmt.Errorf("patch failed: path exists in image layer: '%s' (set replace to allow)", p.Dst)
	}
	if readOnly {
		return patchReadOnly(p.Dst)
	}
	fi, err := os.Stat(p.Src)
	if err != nil {
		return fmt.Errorf("stat %s", p.Src)
	}
	if err := mkdirAll(hostFS{}, filepath.Dir(host), 0o755); err != nil {
		return fmt.Errorf("patch failed: %w", err)
	}
	c := &copier{src: hostFS{}, dst: hostFS{}}
	if err := c.copyEntry(p.Src, host, fi); err != nil {
		return fmt.Errorf("patch failed: %w", err)
	}
	return nil
}

// patchReadOnly: the fake's image layer under /usr and /etc is the host's,
// mounted read-only, so it cannot be patched.
func patchReadOnly(dst string) error {
	return fmt.Errorf("patch failed: path is inside a read-only image directory of the fake: '%s'", dst)
}

// cmdCreate implements `msb create [SandboxOpts] IMAGE`: boot idle, print the
// name only when it was generated.
func cmdCreate(args []string) error {
	p, err := createSpec.parse(args)
	if err != nil {
		return err
	}
	o, err := parseSandboxOpts(p)
	if err != nil {
		return err
	}
	if o.image == "" {
		return fmt.Errorf("invalid config: no image specified (pass IMAGE or set `image` in --conf)")
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	backendNotice()
	generated := ""
	err = a.locked(func() error {
		name, err := a.claimName(o)
		if err != nil {
			return err
		}
		if o.name == "" {
			generated = name
		}
		b, err := a.createBox(name, o, false, nil)
		if err != nil {
			return err
		}
		return a.boot(b, nil)
	})
	if err == nil && generated != "" {
		fmt.Println(generated)
	}
	return err
}

// claimName checks the name before anything else (msb fails fast on a
// conflicting sandbox before pulling) and applies --replace.
func (a *app) claimName(o *createOpts) (string, error) {
	if o.name == "" {
		return a.freshName(), nil
	}
	if b := a.st.Sandboxes[o.name]; b != nil {
		if !o.replace {
			return "", alreadyExists(o.name)
		}
		a.killRuntime(b)
		a.deleteBox(b)
	}
	return o.name, nil
}

// readStdin reads our stdin to EOF, as the buffered exec path does before the
// command starts. A terminal is never read (msb would attach instead).
func readStdin() []byte {
	if isTerminal(0) {
		return nil
	}
	data, _ := io.ReadAll(os.Stdin)
	return data
}

func isTerminal(fd int) bool {
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}
