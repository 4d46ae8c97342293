package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// guestPath is the PATH every box starts with (like a typical OCI image).
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageCmd is the CMD every fake image carries (alpine's), used by `run`
// without `-- CMD` and by `exec` without a command.
var imageCmd = []string{"/bin/sh"}

// bootTimeout bounds how long boot waits for the box's pid namespace to come up.
const bootTimeout = 10 * time.Second

// skeletonDirs are the writable top-level directories of every guest root;
// the image layer "contains" them, so --copy-dir onto them is refused.
var skeletonDirs = []string{"root", "home", "tmp", "var", "run", "opt", "srv", "mnt", "media", "proc", "dev", "usr", "etc"}

// hostRODirs are the host directories shown read-only in every box.
var hostRODirs = []string{"usr", "etc"}

// hostLinkNames are top-level names that are usr-merge symlinks on the host
// (bin → usr/bin …); the guest root gets the same symlink or a read-only bind.
var hostLinkNames = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// ensureSkeleton lays out an empty guest root the first time a box boots.
func ensureSkeleton(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("create guest root: %w", err)
	}
	for _, d := range skeletonDirs {
		p := filepath.Join(root, d)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("create guest %s: %w", d, err)
		}
		// chmod after mkdir: the umask must not weaken /tmp's sticky 1777.
		switch d {
		case "tmp":
			_ = os.Chmod(p, os.ModeSticky|0o777)
		case "root":
			_ = os.Chmod(p, 0o700)
		}
	}
	for _, n := range hostLinkNames {
		if err := mirrorHostLink(root, n); err != nil {
			return err
		}
	}
	return nil
}

func mirrorHostLink(root, name string) error {
	fi, err := os.Lstat("/" + name)
	if err != nil {
		return nil
	}
	p := filepath.Join(root, name)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink("/" + name)
		if err != nil {
			return fmt.Errorf("read host /%s: %w", name, err)
		}
		return os.Symlink(target, p)
	}
	return os.Mkdir(p, 0o755)
}

// bootFailure renders the structured `failed to start` block (exit 1).
func bootFailure(name, stage, msg string) error {
	return &cliError{code: 1, text: fmt.Sprintf("error: failed to start %q\n  → %s: %s\n  → run `msb logs --source system %s` for full diagnostics\n", name, stage, msg, name)}
}

// boot starts the box's long-lived bwrap. With startup nil the box boots idle
// (`sleep infinity` as pid 2); otherwise startup is pid 2 and the box stops
// when it exits, like msb ≥0.6.7 `run -d`.
func (a *app) boot(b *Sandbox, startup []string) error {
	if a.knobs.matches(knobBootFail, b.Name) {
		a.markDown(b, statusCrashed, "boot failure")
		return bootFailure(b.Name, "boot", "simulated VM boot failure ("+knobBootFail+")")
	}
	if err := checkSecrets(b); err != nil {
		return err
	}
	root := a.boxRoot(b.Name)
	if err := ensureSkeleton(root); err != nil {
		return err
	}
	cwd := "/"
	if startup != nil && b.Config.Workdir != "" {
		cwd = b.Config.Workdir
		if !guestDirExists(root, cwd) {
			a.markDown(b, statusStopped, "startup failed")
			return bootFailure(b.Name, "startup command", fmt.Sprintf("bad cwd: chdir %q: No such file or directory (os error 2) (ENOENT)", cwd))
		}
	}
	cmdArgv := startup
	if cmdArgv == nil {
		cmdArgv = []string{"sleep", "infinity"}
	}
	rt, err := a.spawnBwrap(b, cwd, cmdArgv, startup == nil)
	if err != nil {
		a.markDown(b, statusCrashed, "boot failure")
		return bootFailure(b.Name, "boot", err.Error())
	}
	rt.StartupCmd = startup != nil
	rt.OwnNet = b.Config.Network.isolated()
	t := a.now
	b.Runtime, b.Status, b.StopReason = rt, statusRunning, ""
	b.StartedAt, b.LastActivityAt, b.StoppedAt = &t, &t, nil
	b.UpdatedAt = a.now
	if rt.InitPid == 0 {
		// The startup command already finished: the VM shut down at once.
		a.markDown(b, statusStopped, "completed")
	}
	return nil
}

// checkSecrets enforces that every --secret env var is exported at start.
func checkSecrets(b *Sandbox) error {
	for _, s := range b.Config.Secrets {
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return fmt.Errorf("invalid config: secret %s: host environment variable %s is not set", s.Env, s.Env)
		}
		if v == "" {
			return fmt.Errorf("invalid config: secret %s: host environment variable %s is empty", s.Env, s.Env)
		}
	}
	return nil
}

// guestDirExists checks a guest directory from the host before boot.
func guestDirExists(root, p string) bool {
	fi, err := os.Stat(hostViewOf(root, p))
	return err == nil && fi.IsDir()
}

// hostViewOf maps a guest path to where it lives on the host for a stopped
// box: /usr and /etc come from the host, everything else from the guest root.
func hostViewOf(root, p string) string {
	clean := filepath.Clean("/" + p)
	for _, d := range append(append([]string{}, hostRODirs...), hostLinkNames...) {
		if clean == "/"+d || strings.HasPrefix(clean, "/"+d+"/") {
			return clean
		}
	}
	return filepath.Join(root, clean)
}

// bwrapArgs builds the command line of a box's long-lived bwrap.
func (a *app) bwrapArgs(b *Sandbox, cwd string, argv []string) ([]string, error) {
	root := a.boxRoot(b.Name)
	args := []string{"--bind", root, "/"}
	for _, d := range hostRODirs {
		args = append(args, "--ro-bind", "/"+d, "/"+d)
	}
	for _, n := range hostLinkNames {
		if fi, err := os.Lstat("/" + n); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", "/"+n, "/"+n)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	for _, m := range b.Config.Mounts {
		src := m.Source
		if m.Kind == "named" {
			src = filepath.Join(a.home, "volumes", m.Source)
			if err := os.MkdirAll(src, 0o755); err != nil {
				return nil, fmt.Errorf("create volume %s: %w", m.Source, err)
			}
		}
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, src, m.Dest)
	}
	host := b.Config.Hostname
	if host == "" {
		host = b.Name
	}
	args = append(args, "--unshare-pid", "--unshare-uts", "--unshare-ipc", "--hostname", host)
	if b.Config.Network.isolated() {
		args = append(args, "--unshare-net")
	}
	if os.Geteuid() != 0 {
		args = append(args, "--unshare-user", "--uid", "0", "--gid", "0")
	}
	args = append(args, "--chdir", cwd, "--")
	return append(args, argv...), nil
}

// spawnBwrap starts bwrap in its own session, detached from our stdio (an
// SSH session would otherwise wait for it), and waits until the box's pid
// namespace has its init and pid 2. A startup command runs under a small
// supervisor (this binary, inherited as fd 3) that records on fd 4 when the
// command ends, so that a finished command (Stopped) can be told apart from
// a killed runtime (Crashed).
func (a *app) spawnBwrap(b *Sandbox, cwd string, argv []string, idle bool) (*Runtime, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("bubblewrap (bwrap) not found on PATH: install the Debian package bubblewrap")
	}
	logDir := filepath.Join(a.boxDir(b.Name), "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	logPath := filepath.Join(logDir, "startup.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open startup log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bwrap)
	if !idle {
		extra, err := a.startupFiles(b.Name)
		if err != nil {
			return nil, err
		}
		defer extra[0].Close()
		defer extra[1].Close()
		cmd.ExtraFiles = extra
		argv = append([]string{"/proc/self/fd/3", startupArg, "--"}, argv...)
	}
	args, err := a.bwrapArgs(b, cwd, argv)
	if err != nil {
		return nil, err
	}
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = guestEnv(b, b.Config.User, nil)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	a.spawns[cmd.Process.Pid] = cmd
	rt := &Runtime{BwrapPid: cmd.Process.Pid, BwrapStart: procStartTime(cmd.Process.Pid)}
	if err := waitBoxReady(rt); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		delete(a.spawns, cmd.Process.Pid)
		return nil, err
	}
	// bwrap exiting before the box came up is a failed boot, unless it ran a
	// startup command that simply finished already.
	if rt.InitPid == 0 && (idle || !a.startupFinished(b.Name)) {
		return nil, fmt.Errorf("sandbox runtime exited during boot: %s", readTail(logPath))
	}
	return rt, nil
}

// startupFiles opens the fds handed to the startup supervisor: this binary
// and the (truncated) status file.
func (a *app) startupFiles(name string) ([]*os.File, error) {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("open own executable: %w", err)
	}
	status, err := os.OpenFile(a.startupStatusPath(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		self.Close()
		return nil, fmt.Errorf("open startup status: %w", err)
	}
	return []*os.File{self, status}, nil
}

func (a *app) startupStatusPath(name string) string {
	return filepath.Join(a.boxDir(name), "logs", "startup.status")
}

// startupFinished reports whether the startup command ended on its own.
func (a *app) startupFinished(name string) bool {
	data, _ := os.ReadFile(a.startupStatusPath(name))
	return len(data) > 0
}

// waitBoxReady polls /proc until bwrap's child (the namespace init) has its
// own child, i.e. mounts are set up and the box command is being started. If
// bwrap exits first, InitPid stays 0.
func waitBoxReady(rt *Runtime) error {
	deadline := time.Now().Add(bootTimeout)
	delay := 500 * time.Microsecond
	for time.Now().Before(deadline) {
		if !procAlive(rt.BwrapPid, rt.BwrapStart) {
			return nil
		}
		for _, init := range procChildren(rt.BwrapPid) {
			if len(procChildren(init)) > 0 {
				rt.InitPid, rt.InitStart = init, procStartTime(init)
				return nil
			}
		}
		time.Sleep(delay)
		if delay < 10*time.Millisecond {
			delay *= 2
		}
	}
	return fmt.Errorf("sandbox did not become ready within %s", bootTimeout)
}

func readTail(p string) string {
	data, _ := os.ReadFile(p)
	s := strings.TrimSpace(string(data))
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// killRuntime stops a box the hard way: SIGKILL to the namespace init makes
// the kernel kill every process of the box (including ones detached by an
// exec), then bwrap itself exits. It waits (bounded) until they are gone so
// that the guest root can be removed right after.
func (a *app) killRuntime(b *Sandbox) {
	rt := b.Runtime
	if rt == nil {
		return
	}
	pids := []int{rt.InitPid, rt.BwrapPid}
	starts := []uint64{rt.InitStart, rt.BwrapStart}
	for i, p := range pids {
		if procAlive(p, starts[i]) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	waitGone(pids, starts, 5*time.Second)
	if cmd := a.spawns[rt.BwrapPid]; cmd != nil {
		_ = cmd.Wait()
		delete(a.spawns, rt.BwrapPid)
	}
}

// runtimeAlive reports whether a Running box still has its processes.
func (a *app) runtimeAlive(b *Sandbox) bool {
	rt := b.Runtime
	return rt != nil && rt.InitPid != 0 && procAlive(rt.InitPid, rt.InitStart) && procAlive(rt.BwrapPid, rt.BwrapStart)
}

// guestEnv is the environment of guest processes: image defaults, the
// sandbox env, secret placeholders, then per-exec -e (later keys win). HOME
// follows the guest user (`-u`), root's being the box's own /root.
func guestEnv(b *Sandbox, user string, extra []EnvVar) []string {
	home := "/root"
	if name, _, _ := strings.Cut(user, ":"); name != "" {
		if u, ok := lookupPasswd(name); ok {
			home = u.home
		}
	}
	hostname := b.Config.Hostname
	if hostname == "" {
		hostname = b.Name
	}
	vars := []EnvVar{{"PATH", guestPath}, {"HOME", home}, {"HOSTNAME", hostname}}
	vars = append(vars, b.Config.Env...)
	for _, s := range b.Config.Secrets {
		vars = append(vars, EnvVar{Key: s.Env, Value: "$MSB_" + s.Env})
	}
	vars = append(vars, extra...)
	index := map[string]int{}
	var out []string
	for _, v := range vars {
		kv := v.Key + "=" + v.Value
		if i, ok := index[v.Key]; ok {
			out[i] = kv
			continue
		}
		index[v.Key] = len(out)
		out = append(out, kv)
	}
	return out
}

// removeTree deletes a directory tree, making read-only directories writable
// first (a guest may chmod its files).
func removeTree(p string) error {
	err := os.RemoveAll(p)
	if err == nil {
		return nil
	}
	_ = filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}
