package sandbox

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// testLogger sends the transport's logs to the test log, at debug level,
// and drops them once the test is over.
func transportLogger(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testLogWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func mustRunArgv(t *testing.T, tr Transport, argv ...string) Result {
	t.Helper()
	return runCmd(t, tr, Command{Argv: argv})
}

// keyServer is a server to test host key checking against.
type keyServer struct {
	addr    string
	hostKey ssh.PublicKey
	cfg     func(knownHosts string) SSHConfig
}

// hostKeyServers returns the real sshd when present, and always the
// in-process server.
func hostKeyServers(t *testing.T) map[string]keyServer {
	out := map[string]keyServer{}
	if sshdAvailable() {
		d := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
		out["sshd"] = keyServer{d.Addr, d.HostKey, func(kh string) SSHConfig {
			return SSHConfig{User: d.User, Addr: d.Addr, KeyFile: d.ClientKey.File, KnownHostsFile: kh, Logger: transportLogger(t)}
		}}
	}
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	out["inproc"] = keyServer{s.Addr, s.HostKey.Signer.PublicKey(), func(kh string) SSHConfig {
		return SSHConfig{User: "u", Addr: s.Addr, Signer: s.ClientKey.Signer, KnownHostsFile: kh, Logger: transportLogger(t)}
	}}
	return out
}

func TestSSHUnknownHostRefused(t *testing.T) {
	for name, srv := range hostKeyServers(t) {
		t.Run(name, func(t *testing.T) {
			host, port, _ := net.SplitHostPort(srv.addr)
			dir := t.TempDir()
			other := sshtest.NewKey(t, filepath.Join(dir, "other"))
			for _, kh := range []struct{ name, file string }{
				{"missing file", filepath.Join(dir, "absent_known_hosts")},
				{"other hosts only", filepath.Join(dir, "known_hosts")},
			} {
				if kh.name == "other hosts only" {
					sshtest.WriteKnownHosts(t, kh.file, "127.0.0.2:"+port, other.Signer.PublicKey())
				}
				tr, err := NewSSHTransport(srv.cfg(kh.file))
				if err != nil {
					t.Fatal(err)
				}
				_, err = tr.Run(context.Background(), Command{Argv: []string{"true"}})
				_ = tr.Close()
				msg := app.ErrorMessage(err)
				for _, want := range []string{
					srv.addr, "not in the known_hosts file", kh.file,
					ssh.FingerprintSHA256(srv.hostKey),
					fmt.Sprintf("ssh-keyscan -p %s -t ssh-ed25519 %s >> '%s'", port, host, kh.file),
				} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: message lacks %q:\n%s", kh.name, want, msg)
					}
				}
				if app.ErrorCode(err) != app.EUNAVAILABLE || strings.Contains(msg, "does not match") {
					t.Errorf("%s: got %v", kh.name, err)
				}
			}
		})
	}
}

func TestSSHChangedHostKeyRefused(t *testing.T) {
	for name, srv := range hostKeyServers(t) {
		t.Run(name, func(t *testing.T) {
			_, port, _ := net.SplitHostPort(srv.addr)
			dir := t.TempDir()
			old := sshtest.NewKey(t, filepath.Join(dir, "old"))
			kh := filepath.Join(dir, "known_hosts")
			sshtest.WriteKnownHosts(t, kh, srv.addr, old.Signer.PublicKey())
			tr, err := NewSSHTransport(srv.cfg(kh))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			_, err = tr.Run(context.Background(), Command{Argv: []string{"true"}})
			msg := app.ErrorMessage(err)
			for _, want := range []string{
				srv.addr, "does not match", kh + " line 1", "intercepting",
				ssh.FingerprintSHA256(srv.hostKey),
				fmt.Sprintf("ssh-keygen -R '[127.0.0.1]:%s' -f '%s'", port, kh),
				"ssh-keyscan -p " + port,
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if app.ErrorCode(err) != app.EUNAVAILABLE {
				t.Errorf("code %q", app.ErrorCode(err))
			}

			// After the operator fixes known_hosts, the next attempt after
			// the backoff connects without a restart.
			sshtest.WriteKnownHosts(t, kh, srv.addr, srv.hostKey)
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err = tr.Run(context.Background(), Command{Argv: []string{"true"}})
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still failing after the fix: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// The x/crypto gotcha: when known_hosts holds only a key type the server
// does not prefer, the client must ask for that type, or a good host
// looks like a key mismatch.
func TestSSHHostKeyAlgorithmsFollowKnownHosts(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, err := ssh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	s := sshtest.NewServer(t, sshtest.ServerOptions{ExtraHostKeys: []ssh.Signer{rsaSigner}})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	sshtest.WriteKnownHosts(t, kh, s.Addr, rsaSigner.PublicKey()) // RSA only; server prefers ed25519
	tr := newServerTransport(t, s, func(c *SSHConfig) { c.KnownHostsFile = kh })
	if res := mustRunArgv(t, tr, "echo", "ok"); string(res.Stdout) != "ok\n" {
		t.Fatalf("got %+v", res)
	}
	if got := knownAlgorithms(mustKnownHosts(t, kh), s.Addr); strings.Join(got, ",") != "rsa-sha2-512,rsa-sha2-256,ssh-rsa" {
		t.Errorf("algorithms %v", got)
	}
}

func mustKnownHosts(t *testing.T, file string) ssh.HostKeyCallback {
	t.Helper()
	hk, err := loadHostKeys(file, "x:22")
	if err != nil {
		t.Fatal(err)
	}
	return hk.callback
}

func TestSSHLoginRefused(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(stranger)
	tr := newServerTransport(t, s, func(c *SSHConfig) { c.Signer = signer })
	_, err := tr.Run(context.Background(), Command{Argv: []string{"true"}})
	if msg := app.ErrorMessage(err); !strings.Contains(msg, "refused the login") || !strings.Contains(msg, ssh.FingerprintSHA256(signer.PublicKey())) {
		t.Fatalf("got %v", err)
	}
}

func TestSSHConfigErrors(t *testing.T) {
	dir := t.TempDir()
	plain := sshtest.NewKey(t, filepath.Join(dir, "k"))
	notKey := filepath.Join(dir, "notkey")
	_ = os.WriteFile(notKey, []byte("hello"), 0o600)
	for _, cfg := range []SSHConfig{
		{Addr: "h", KeyFile: plain.File, KnownHostsFile: "kh"},
		{User: "u", KeyFile: plain.File, KnownHostsFile: "kh"},
		{User: "u", Addr: "h", KeyFile: plain.File},
		{User: "u", Addr: "h:0", KeyFile: plain.File, KnownHostsFile: "kh"},
		{User: "u", Addr: "h", KnownHostsFile: "kh"},
		{User: "u", Addr: "h", KeyFile: notKey, KnownHostsFile: "kh"},
		{User: "u", Addr: "h", KeyFile: filepath.Join(dir, "absent"), KnownHostsFile: "kh"},
	} {
		if _, err := NewSSHTransport(cfg); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("%+v: got %v", cfg, err)
		}
	}
	tr, err := NewSSHTransport(SSHConfig{User: "u", Addr: "example.org", KeyFile: plain.File, KnownHostsFile: "kh"})
	if err != nil || tr.String() != "ssh://u@example.org:22" {
		t.Fatalf("%v %v", tr, err)
	}
	_ = tr.Close()
}

// The server drops the connection between two commands: the second one
// reconnects, and nothing runs twice.
func TestSSHReconnectAfterServerDrop(t *testing.T) {
	t.Run("inproc", func(t *testing.T) {
		s := sshtest.NewServer(t, sshtest.ServerOptions{})
		tr := newServerTransport(t, s, nil)
		mustRunArgv(t, tr, "echo", "one")
		s.DropConnections()
		if res := mustRunArgv(t, tr, "echo", "two"); string(res.Stdout) != "two\n" {
			t.Fatalf("got %+v", res)
		}
		if got := s.Commands(); len(got) != 2 || s.Connections() != 2 {
			t.Fatalf("commands %q, connections %d", got, s.Connections())
		}
	})
	t.Run("sshd", func(t *testing.T) {
		d := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
		tr := newSSHDTransport(t, d, nil)
		log := filepath.Join(worldDir(t), "log")
		appendLine := func(word string) {
			t.Helper()
			res := mustRunArgv(t, tr, "sh", "-c", `echo "$1" >> "$2"`, "x", word, log)
			if res.ExitCode != 0 {
				t.Fatalf("append %s: %+v", word, res)
			}
		}
		appendLine("one")
		if n := d.DropConnections(); n == 0 {
			t.Fatal("no sshd connection process to kill")
		}
		appendLine("two")
		data, _ := os.ReadFile(log)
		if string(data) != "one\ntwo\n" {
			t.Fatalf("commands ran %q", data)
		}
	})
}

// Opening the session fails because the connection died: nothing was
// sent, so the command is retried once on a new connection.
func TestSSHRetryWhenSessionOpenFails(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr := newServerTransport(t, s, nil)
	mustRunArgv(t, tr, "true")
	s.DropOnNextSessionOpen()
	if res := mustRunArgv(t, tr, "echo", "again"); string(res.Stdout) != "again\n" {
		t.Fatalf("got %+v", res)
	}
	if got := s.Commands(); len(got) != 2 || s.Connections() != 2 {
		t.Fatalf("commands %q, connections %d", got, s.Connections())
	}
}

// The connection dies after the command was sent: Run must fail and not
// run it again, since it may have had its effect.
func TestSSHNoRetryAfterCommandSent(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr := newServerTransport(t, s, nil)
	mustRunArgv(t, tr, "true")
	s.DropAfterNextExec()
	_, err := tr.Run(context.Background(), Command{Argv: []string{"echo", "once"}})
	if app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(app.ErrorMessage(err), "not retried") {
		t.Fatalf("got %v", err)
	}
	mustRunArgv(t, tr, "true") // the transport recovers
	var once int
	for _, c := range s.Commands() {
		if strings.Contains(c, "once") {
			once++
		}
	}
	if once != 1 {
		t.Fatalf("command ran %d times: %q", once, s.Commands())
	}
}

// A connection dying while a command runs is an error, not a retry.
func TestSSHConnectionLostDuringCommand(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr := newServerTransport(t, s, nil)
	out := &lineWaiter{want: 1, ready: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Run(context.Background(), Command{Argv: []string{"sh", "-c", "echo started; sleep 3003"}, Stdout: out})
		errc <- err
	}()
	<-out.ready
	s.DropConnections()
	err := <-errc
	if app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(app.ErrorMessage(err), "lost while a command ran") {
		t.Fatalf("got %v", err)
	}
	if n := len(s.Commands()); n != 1 {
		t.Fatalf("%d commands", n)
	}
}

func TestSSHConcurrentCommandsShareOneConnection(t *testing.T) {
	const n = 30
	check := func(t *testing.T, tr Transport) {
		var wg sync.WaitGroup
		var failures atomic.Int32
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := tr.Run(ctx, Command{Argv: []string{"sh", "-c", `sleep 0.1; echo "$1"`, "x", strconv.Itoa(i)}})
				if err != nil || res.ExitCode != 0 || string(res.Stdout) != strconv.Itoa(i)+"\n" {
					failures.Add(1)
					t.Errorf("command %d: %+v %v", i, res, err)
				}
			})
		}
		wg.Wait()
		if failures.Load() > 0 {
			t.Fatalf("%d of %d failed", failures.Load(), n)
		}
	}
	t.Run("inproc", func(t *testing.T) {
		s := sshtest.NewServer(t, sshtest.ServerOptions{MaxSessions: 10})
		tr := newServerTransport(t, s, nil)
		check(t, tr)
		// Commands are counted from exec to exit, inside Run's hold on
		// the semaphore; the server's session count lags a little (see
		// SSHConfig.MaxSessions) but must stay within its limit.
		if s.Connections() != 1 || s.PeakCommands() > DefaultSSHMaxSessions || s.PeakCommands() < 2 ||
			s.PeakSessions() > 10 || len(s.Commands()) != n {
			t.Fatalf("connections %d, peak commands %d, peak sessions %d, commands %d",
				s.Connections(), s.PeakCommands(), s.PeakSessions(), len(s.Commands()))
		}
	})
	t.Run("sshd", func(t *testing.T) {
		d := sshtest.StartSSHD(t, sshtest.SSHDOptions{MaxSessions: 10})
		check(t, newSSHDTransport(t, d, nil))
	})
	// A client configured above the server's limit still succeeds: refused
	// session opens are retried (nothing was sent for them).
	t.Run("inproc-over-limit", func(t *testing.T) {
		s := sshtest.NewServer(t, sshtest.ServerOptions{MaxSessions: 3})
		tr := newServerTransport(t, s, func(c *SSHConfig) { c.MaxSessions = 6 })
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				if _, err := tr.Run(context.Background(), Command{Argv: []string{"true"}}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(s.Commands()) != 12 {
			t.Fatalf("%d commands ran", len(s.Commands()))
		}
	})
}

func TestSSHKeepaliveClosesSilentConnection(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr := newServerTransport(t, s, func(c *SSHConfig) {
		c.KeepAlive = 20 * time.Millisecond
		c.KeepAliveMissed = 2
	})
	mustRunArgv(t, tr, "true")
	tr.mu.Lock()
	first := tr.cur
	tr.mu.Unlock()
	s.IgnoreKeepalives(true)
	select {
	case <-first.dead:
	case <-time.After(10 * time.Second):
		t.Fatal("silent connection was not closed")
	}
	s.IgnoreKeepalives(false)
	mustRunArgv(t, tr, "true")
	if s.Connections() != 2 {
		t.Fatalf("connections %d", s.Connections())
	}
}

func TestSSHUnreachableHostBacksOff(t *testing.T) {
	// A listener that accepts and hangs up: every handshake fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepts atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			_ = c.Close()
		}
	}()
	defer ln.Close()
	s := sshtest.NewServer(t, sshtest.ServerOptions{}) // for keys only
	tr := newServerTransport(t, s, func(c *SSHConfig) {
		c.Addr = ln.Addr().String()
		c.ReconnectBackoff = time.Hour
	})
	for range 3 {
		_, err := tr.Run(context.Background(), Command{Argv: []string{"true"}})
		if app.ErrorCode(err) != app.EUNAVAILABLE || !strings.Contains(app.ErrorMessage(err), tr.String()) {
			t.Fatalf("got %v", err)
		}
	}
	if n := accepts.Load(); n != 1 {
		t.Fatalf("dialed %d times during the backoff", n)
	}
}

func TestSSHCloseStopsEverything(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	baseline := runtime.NumGoroutine()
	tr := newServerTransport(t, s, func(c *SSHConfig) { c.KeepAlive = 10 * time.Millisecond })
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { mustRunArgv(t, tr, "echo", "x") })
	}
	wg.Wait()
	// One command still running when Close comes.
	errc := make(chan error, 1)
	out := &lineWaiter{want: 1, ready: make(chan struct{})}
	go func() {
		_, err := tr.Run(context.Background(), Command{Argv: []string{"sh", "-c", "echo up; sleep 3004"}, Stdout: out})
		errc <- err
	}()
	<-out.ready
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("running command after Close: %v", err)
	}
	if _, err := tr.Run(context.Background(), Command{Argv: []string{"true"}}); app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("Run after Close: %v", err)
	}
	_ = tr.Close() // idempotent
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d > %d\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSSHContextDoneBeforeStart(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.ServerOptions{})
	tr := newServerTransport(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Run(ctx, Command{Argv: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if len(s.Commands()) != 0 {
		t.Fatal("a command ran")
	}
}

// A command that survives the kill request (standing in for a server that
// ignores "signal" requests, like OpenSSH before 7.9: here the command
// ignores the signal sent). sshd keeps the session open while it runs. Run
// must still return soon after cancellation, and keep the session's slot
// taken until the session really ends.
func TestSSHCancelWhenCommandSurvivesKill(t *testing.T) {
	d := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
	tr := newSSHDTransport(t, d, func(c *SSHConfig) { c.MaxSessions = 2 })
	tr.cancelGrace = 50 * time.Millisecond
	tr.killSignal = ssh.SIGUSR2
	// eval runs in the login shell itself, so sshd's direct child is the
	// process that ignores the signal.
	out := &lineWaiter{want: 1, ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Run(ctx, Command{Argv: []string{"eval", "trap '' USR2; echo $$; exec sleep 3005"}, Stdout: out})
		errc <- err
	}()
	<-out.ready
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if n := len(tr.sem); n != 1 {
		t.Fatalf("%d slots held, want 1 (the lingering session)", n)
	}
	mustRunArgv(t, tr, "true") // the other slot still works
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill lingering process: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(tr.sem) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("slot not released after the session ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHostKeyErrorMessagesDefaultPort(t *testing.T) {
	dir := t.TempDir()
	k := sshtest.NewKey(t, filepath.Join(dir, "k"))
	file := "/etc/asb/known hosts"
	unknown := app.ErrorMessage(hostKeyError(&knownhosts.KeyError{}, file, "box.example:22", k.Signer.PublicKey()))
	if want := "ssh-keyscan -t ssh-ed25519 box.example >> '/etc/asb/known hosts'"; !strings.Contains(unknown, want) {
		t.Errorf("unknown host message lacks %q:\n%s", want, unknown)
	}
	mismatch := app.ErrorMessage(hostKeyError(&knownhosts.KeyError{Want: []knownhosts.KnownKey{{Key: k.Signer.PublicKey(), Filename: file, Line: 3}}},
		file, "box.example:22", k.Signer.PublicKey()))
	if want := "ssh-keygen -R 'box.example' -f '/etc/asb/known hosts'"; !strings.Contains(mismatch, want) || !strings.Contains(mismatch, file+" line 3") {
		t.Errorf("mismatch message lacks %q:\n%s", want, mismatch)
	}
}
