package sshtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHDPath is where Debian's openssh-server installs the daemon.
const SSHDPath = "/usr/sbin/sshd"

// TestUser is the dedicated account commands run as. Its login shell is
// /bin/sh: sshd runs every command through the login shell, and a bash
// that sources a heavy ~/.bashrc (pyenv, nvm) adds about 0.5 s per command
// and distorts every measurement.
const TestUser = "asbtest"

// SSHDOptions tunes StartSSHD.
type SSHDOptions struct {
	// MaxSessions sets sshd's MaxSessions (0 keeps OpenSSH's default, 10).
	MaxSessions int
	// LogLevel is sshd's LogLevel (default ERROR; the log is only shown
	// when startup fails, and with Log).
	LogLevel string
}

// SSHD is a running OpenSSH sshd on 127.0.0.1.
type SSHD struct {
	Addr string // 127.0.0.1:port
	Host string
	Port int
	User string
	// ClientKey logs in as User. Its file is 0600 and owned by root.
	ClientKey Key
	// HostKey is the server's host key; KnownHostsFile lists it for Addr.
	HostKey        ssh.PublicKey
	KnownHostsFile string
	// Dir holds the config, keys and pid file. It is world-readable
	// because sshd reads AuthorizedKeysFile as the logging-in user.
	Dir string

	cmd      *exec.Cmd
	log      *syncBuffer
	exited   chan struct{}
	stopOnce sync.Once
}

// RequireSSHD skips the test when it cannot run a real sshd (no
// /usr/sbin/sshd, or not root: the daemon and the test account need root).
// With CI set in the environment it fails instead, so a CI image that lost
// openssh-server does not silently stop testing the SSH transport.
func RequireSSHD(tb testing.TB) {
	tb.Helper()
	reason := ""
	if _, err := os.Stat(SSHDPath); err != nil {
		reason = SSHDPath + " is missing (apt-get install openssh-server openssh-client)"
	} else if os.Geteuid() != 0 {
		reason = "a real sshd test needs root (to run sshd and create the " + TestUser + " account)"
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("sshtest: %s", reason)
	}
	tb.Skipf("sshtest: %s; skipping (set CI=1 to make this a failure)", reason)
}

// StartSSHD starts a private sshd in the foreground on a free loopback
// port, with its own host key, one authorized client key and the TestUser
// account, and stops it when the test ends.
func StartSSHD(tb testing.TB, opts SSHDOptions) *SSHD {
	tb.Helper()
	RequireSSHD(tb)
	if err := ensureUser(); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "asb-sshd-")
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation directory
		tb.Fatalf("sshtest: %v", err)
	}
	hostKey := NewKey(tb, filepath.Join(dir, "host_ed25519"))
	clientKey := NewKey(tb, filepath.Join(dir, "client_ed25519"))
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(clientKey.Signer.PublicKey()), 0o644); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port can be taken between probe and bind
		s, err := startSSHD(dir, opts, hostKey, clientKey, authorized)
		if err == nil {
			tb.Cleanup(s.Stop)
			return s
		}
		lastErr = err
	}
	tb.Fatalf("sshtest: %v", lastErr)
	return nil
}

func startSSHD(dir string, opts SSHDOptions, hostKey, clientKey Key, authorized string) (*SSHD, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logLevel := opts.LogLevel
	if logLevel == "" {
		logLevel = "ERROR"
	}
	conf := []string{
		"Port " + strconv.Itoa(port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey.File,
		"AuthorizedKeysFile " + authorized,
		"AllowUsers " + TestUser,
		"PermitRootLogin no",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"StrictModes no",
		"UsePAM no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"X11Forwarding no",
		"AllowTcpForwarding no",
		"LogLevel " + logLevel,
	}
	if opts.MaxSessions > 0 {
		conf = append(conf, "MaxSessions "+strconv.Itoa(opts.MaxSessions))
	}
	if penaltiesSupported() {
		// OpenSSH 9.8+ bans a source address after sessions that end
		// badly; tests kill sessions on purpose and all come from 127.0.0.1.
		conf = append(conf, "PerSourcePenalties no")
	}
	confFile := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(confFile, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	s := &SSHD{
		Addr:           net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Host:           "127.0.0.1",
		Port:           port,
		User:           TestUser,
		ClientKey:      clientKey,
		HostKey:        hostKey.Signer.PublicKey(),
		KnownHostsFile: filepath.Join(dir, "known_hosts"),
		Dir:            dir,
		log:            &syncBuffer{},
		exited:         make(chan struct{}),
	}
	if err := os.WriteFile(s.KnownHostsFile, []byte(knownhosts.Line([]string{s.Addr}, s.HostKey)+"\n"), 0o644); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(SSHDPath, "-f", confFile, "-D", "-e")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sshd: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			// Read the banner: the port is ours only if sshd answers.
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, rerr := bufio.NewReader(nc).ReadString('\n')
			_ = nc.Close()
			if rerr == nil && strings.HasPrefix(line, "SSH-2.0-OpenSSH") {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("sshd exited at startup: %s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("sshd did not answer on %s: %s", s.Addr, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the per-connection sshd processes and then the listener.
// Those processes outlive the listener otherwise, as with a system sshd.
func (s *SSHD) Stop() {
	s.stopOnce.Do(func() {
		s.DropConnections()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// DropConnections kills, by pid, every process descending from this
// sshd (the per-connection sshd processes and the commands they run),
// which drops every client connection from the server's side while the
// listener keeps accepting. It returns how many processes it killed.
func (s *SSHD) DropConnections() int {
	pids := descendants(s.cmd.Process.Pid)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// Log returns what sshd wrote to stderr so far.
func (s *SSHD) Log() string { return s.log.String() }

// descendants lists the pids below root in the process tree, from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may contain spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

var userOnce struct {
	sync.Mutex
	done bool
}

// ensureUser creates TestUser with /bin/sh, or repairs its shell, and
// gives it the password field "*": with UsePAM no, sshd refuses even
// key logins to a locked ("!") account, and useradd creates it locked.
// Another test binary may be doing the same at the same moment, so
// failures are re-checked rather than trusted.
func ensureUser() error {
	userOnce.Lock()
	defer userOnce.Unlock()
	if userOnce.done {
		return nil
	}
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		shell, exists := passwdShell(TestUser)
		pw := shadowPassword(TestUser)
		switch {
		case !exists:
			lastErr = runTool("useradd", "-m", "-s", "/bin/sh", TestUser)
		case shell != "/bin/sh" || pw != "*":
			lastErr = runTool("usermod", "-s", "/bin/sh", "-p", "*", TestUser)
		default:
			userOnce.done = true
			return nil
		}
		if lastErr != nil {
			time.Sleep(50 * time.Millisecond) // /etc/passwd lock held by a sibling
		}
	}
	return fmt.Errorf("cannot prepare account %s: %w", TestUser, lastErr)
}

func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

func passwdShell(user string) (string, bool) {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && f[0] == user {
			return f[6], true
		}
	}
	return "", false
}

func shadowPassword(user string) string {
	data, err := os.ReadFile("/etc/shadow")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 2 && f[0] == user {
			return f[1]
		}
	}
	return ""
}

var penalties struct {
	once sync.Once
	ok   bool
}

// penaltiesSupported reports whether this sshd knows PerSourcePenalties,
// by letting it parse a config holding only that option.
func penaltiesSupported() bool {
	penalties.once.Do(func() {
		f, err := os.CreateTemp("", "asb-sshd-probe-")
		if err != nil {
			return
		}
		defer os.Remove(f.Name())
		_, _ = f.WriteString("PerSourcePenalties no\n")
		_ = f.Close()
		out, _ := exec.Command(SSHDPath, "-t", "-f", f.Name()).CombinedOutput()
		penalties.ok = !bytes.Contains(out, []byte("PerSourcePenalties")) && !bytes.Contains(out, []byte("Bad configuration"))
	})
	return penalties.ok
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (sshd's stdout
// and stderr copiers) and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 { // keep memory flat in long benchmarks
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
