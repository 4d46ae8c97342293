package sshtest

import (
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

// ServerOptions tunes NewServer.
type ServerOptions struct {
	// MaxSessions refuses session channels beyond this many open at once
	// on one connection, with "administratively prohibited" as OpenSSH
	// does. 0 means no limit.
	MaxSessions int
	// ExtraHostKeys are offered besides HostKey (which stays the only key
	// in KnownHostsFile), to test host key algorithm negotiation.
	ExtraHostKeys []ssh.Signer
}

// Server is an in-process SSH server on 127.0.0.1 built on
// golang.org/x/crypto/ssh alone. It runs each exec request with `sh -c`
// as the test's own user and honours "signal" requests by signalling the
// command's process group, like OpenSSH. Unlike a real sshd it can be made
// to fail at chosen points, and it counts what it ran.
type Server struct {
	Addr           string
	HostKey        Key
	ClientKey      Key
	KnownHostsFile string

	opts ServerOptions
	cfg  *ssh.ServerConfig
	ln   net.Listener
	wg   sync.WaitGroup

	mu          sync.Mutex
	conns       map[net.Conn]struct{}
	closed      bool
	accepted    int
	commands    []string
	peakPerConn int
	running     int // commands running now, all connections
	peakRunning int

	ignoreKeepalive atomic.Bool
	dropOnOpen      atomic.Bool
	dropAfterExec   atomic.Bool
}

// NewServer starts a server that accepts ClientKey only; KnownHostsFile
// lists HostKey for Addr. It is closed when the test ends.
func NewServer(tb testing.TB, opts ServerOptions) *Server {
	tb.Helper()
	dir := tb.TempDir()
	s := &Server{
		HostKey:        NewKey(tb, filepath.Join(dir, "host_ed25519")),
		ClientKey:      NewKey(tb, filepath.Join(dir, "client_ed25519")),
		KnownHostsFile: filepath.Join(dir, "known_hosts"),
		opts:           opts,
		conns:          map[net.Conn]struct{}{},
	}
	want := s.ClientKey.Signer.PublicKey().Marshal()
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(want) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	s.cfg.AddHostKey(s.HostKey.Signer)
	for _, k := range opts.ExtraHostKeys {
		s.cfg.AddHostKey(k)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	s.ln = ln
	s.Addr = ln.Addr().String()
	WriteKnownHosts(tb, s.KnownHostsFile, s.Addr, s.HostKey.Signer.PublicKey())
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(s.Close)
	return s
}

// Close stops accepting, drops every connection and waits for all
// goroutines and commands of the server.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.ln.Close()
	s.DropConnections()
	s.wg.Wait()
}

// DropConnections closes every client connection from the server's side,
// as a server reboot or a network cut would. Running commands are killed.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// DropOnNextSessionOpen makes the server close the connection when the
// next session channel is requested, before any command is received.
func (s *Server) DropOnNextSessionOpen() { s.dropOnOpen.Store(true) }

// DropAfterNextExec makes the server start the next command and then close
// the connection at once, without sending an exit status: the client
// cannot know whether the command ran.
func (s *Server) DropAfterNextExec() { s.dropAfterExec.Store(true) }

// IgnoreKeepalives makes the server stop answering global requests, as a
// frozen host or a black-holed link would.
func (s *Server) IgnoreKeepalives(ignore bool) { s.ignoreKeepalive.Store(ignore) }

// Commands returns the command lines received in exec requests, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

// Connections returns how many connections have completed the handshake.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// PeakSessions returns the most sessions that were open at once on one
// connection, as the server counts them (a session closed by the client is
// counted until the close arrives).
func (s *Server) PeakSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakPerConn
}

// PeakCommands returns the most commands that ran at once.
func (s *Server) PeakCommands() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakRunning
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handleConn(nc)
	}
}

func (s *Server) handleConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		_ = nc.Close()
	}()
	sc, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	s.mu.Lock()
	s.accepted++
	s.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for r := range reqs {
			if s.ignoreKeepalive.Load() {
				continue // never answered: the client must time out
			}
			if r.WantReply {
				_ = r.Reply(false, nil) // as OpenSSH answers keepalive@openssh.com
			}
		}
	}()

	var open atomic.Int32 // sessions open on this connection
	var sessions sync.WaitGroup
	defer sessions.Wait()
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		if s.dropOnOpen.CompareAndSwap(true, false) {
			_ = nc.Close()
			continue // chans drains and closes once the mux sees the error
		}
		n := open.Add(1)
		if s.opts.MaxSessions > 0 && int(n) > s.opts.MaxSessions {
			open.Add(-1)
			_ = nch.Reject(ssh.Prohibited, "open failed")
			continue
		}
		s.mu.Lock()
		s.peakPerConn = max(s.peakPerConn, int(n))
		s.mu.Unlock()
		ch, chReqs, err := nch.Accept()
		if err != nil {
			open.Add(-1)
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.session(nc, ch, chReqs)
			// Count the session out only once the client's close reached
			// us, as OpenSSH does: that lag is why clients must stay below
			// MaxSessions.
			open.Add(-1)
		}()
	}
}

// session serves one channel: it waits for exec, runs the command, and
// reports its status.
func (s *Server) session(nc net.Conn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	done := make(chan struct{})
	for r := range reqs {
		switch r.Type {
		case "exec":
			if cmd != nil {
				_ = r.Reply(false, nil)
				continue
			}
			var payload struct{ Command string }
			if err := ssh.Unmarshal(r.Payload, &payload); err != nil {
				_ = r.Reply(false, nil)
				continue
			}
			cmd = exec.Command("sh", "-c", payload.Command)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				_ = r.Reply(false, nil)
				return
			}
			cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
			if err := cmd.Start(); err != nil {
				_ = r.Reply(false, nil)
				return
			}
			s.mu.Lock()
			s.commands = append(s.commands, payload.Command)
			s.running++
			s.peakRunning = max(s.peakRunning, s.running)
			s.mu.Unlock()
			if s.dropAfterExec.CompareAndSwap(true, false) {
				_ = nc.Close() // before the reply: the client cannot tell it started
			} else {
				_ = r.Reply(true, nil)
			}
			go func() {
				_, _ = io.Copy(stdin, ch)
				_ = stdin.Close()
			}()
			go func() {
				defer close(done)
				err := cmd.Wait()
				s.mu.Lock()
				s.running--
				s.mu.Unlock()
				status := cmd.ProcessState.Sys().(syscall.WaitStatus)
				_ = ch.CloseWrite()
				if status.Signaled() {
					name := strings.TrimPrefix(unixSignalName(status.Signal()), "SIG")
					_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
						Signal     string
						CoreDumped bool
						Error      string
						Lang       string
					}{Signal: name}))
				} else {
					_ = err // the status below carries it
					_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status.ExitStatus())}))
				}
				_ = ch.Close()
			}()
		case "signal":
			var payload struct{ Signal string }
			if cmd != nil && ssh.Unmarshal(r.Payload, &payload) == nil {
				if sig, ok := signalsByName[payload.Signal]; ok {
					_ = syscall.Kill(-cmd.Process.Pid, sig)
				}
			}
			if r.WantReply {
				_ = r.Reply(true, nil)
			}
		default:
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
	}
	// The client closed the channel or the connection died: a command
	// still running goes with it, unlike under OpenSSH, so that no test
	// leaves processes behind.
	if cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

var signalsByName = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "PIPE": syscall.SIGPIPE,
	"ALRM": syscall.SIGALRM, "ABRT": syscall.SIGABRT, "SEGV": syscall.SIGSEGV,
}

func unixSignalName(sig syscall.Signal) string {
	for name, s := range signalsByName {
		if s == sig {
			return name
		}
	}
	return "SIG" + strconv.Itoa(int(sig))
}
