package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/asb-dev/asb/app"
)

// Defaults for SSHConfig's zero values.
const (
	DefaultSSHDialTimeout       = 10 * time.Second
	DefaultSSHKeepAlive         = 15 * time.Second
	DefaultSSHKeepAliveMissed   = 3
	DefaultSSHMaxSessions       = 8 // below OpenSSH's MaxSessions 10, see SSHConfig.MaxSessions
	DefaultSSHReconnectBackoff  = 500 * time.Millisecond
	DefaultSSHMaxReconnectDelay = 30 * time.Second
)

// SSHConfig configures an SSHTransport. User, Addr, KnownHostsFile and one
// of KeyFile or Signer are required.
type SSHConfig struct {
	User string
	// Addr is host:port; a bare host means port 22.
	Addr string
	// KeyFile is an unencrypted private key in any format ssh-keygen
	// writes. Signer, when set, is used instead.
	KeyFile string
	Signer  ssh.Signer
	// KnownHostsFile is checked on every connect; there is no way to skip
	// host key verification.
	KnownHostsFile string
	// DialTimeout bounds TCP connect plus SSH handshake.
	DialTimeout time.Duration
	// KeepAlive is the interval between keepalive@openssh.com requests; a
	// connection that leaves KeepAliveMissed of them unanswered is closed
	// (and redialed by the next command). Negative disables keepalives.
	KeepAlive       time.Duration
	KeepAliveMissed int
	// MaxSessions caps concurrent commands on the one connection. It must
	// stay below the server's MaxSessions (OpenSSH: 10), which counts a
	// session until it has processed our channel close, a moment after
	// the command has finished for us.
	MaxSessions int
	// ReconnectBackoff is the delay after the first failed connect; it
	// doubles per further failure up to MaxReconnectDelay. While it runs,
	// commands fail at once with the last connect error instead of queueing
	// behind a host that is down.
	ReconnectBackoff  time.Duration
	MaxReconnectDelay time.Duration
	Logger            *slog.Logger
}

// SSHTransport runs commands on one host over a single SSH connection,
// dialed on first use and shared by all commands, each in its own session.
// If the connection dies it is redialed by the next command.
type SSHTransport struct {
	cfg    SSHConfig
	addr   string // normalised host:port
	name   string // ssh://user@host:port
	signer ssh.Signer
	log    *slog.Logger
	sem    chan struct{}
	// cancelGrace is how long a canceled Run waits for the server to end
	// the command before returning anyway.
	cancelGrace time.Duration
	// killSignal is sent on cancellation; tests change it to one the
	// command ignores, to stand in for a server that ignores signals.
	killSignal ssh.Signal

	// ctx is canceled by Close; it aborts dials and ends every goroutine.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	cur      *sshConn
	dialing  *dialAttempt // non-nil while a dial runs; later callers share it
	failures int          // consecutive failed dials
	lastErr  error        // the last dial error, returned during backoff
	retryAt  time.Time    // end of the backoff after lastErr
}

// NewSSHTransport checks cfg and loads the key. It does not connect: the
// first Run does, so an unreachable host does not stop asb from starting.
func NewSSHTransport(cfg SSHConfig) (*SSHTransport, error) {
	if cfg.User == "" || cfg.Addr == "" {
		return nil, app.Errorf(app.EINVALID, "An SSH sandbox host needs a user and an address.")
	}
	host, port, err := splitAddr(cfg.Addr)
	if err != nil || host == "" {
		return nil, app.WrapError(app.EINVALID, err, "SSH address %q is not host[:port].", cfg.Addr)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if cfg.KnownHostsFile == "" {
		return nil, app.Errorf(app.EINVALID,
			"SSH host %s has no known_hosts file configured; asb always verifies host keys.", addr)
	}
	signer := cfg.Signer
	if signer == nil {
		if signer, err = loadSigner(cfg.KeyFile); err != nil {
			return nil, err
		}
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultSSHDialTimeout
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultSSHKeepAlive
	}
	if cfg.KeepAliveMissed <= 0 {
		cfg.KeepAliveMissed = DefaultSSHKeepAliveMissed
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultSSHMaxSessions
	}
	if cfg.ReconnectBackoff <= 0 {
		cfg.ReconnectBackoff = DefaultSSHReconnectBackoff
	}
	if cfg.MaxReconnectDelay <= 0 {
		cfg.MaxReconnectDelay = DefaultSSHMaxReconnectDelay
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &SSHTransport{
		cfg:    cfg,
		addr:   addr,
		name:   "ssh://" + cfg.User + "@" + addr,
		signer: signer,
		sem:    make(chan struct{}, cfg.MaxSessions),

		cancelGrace: 2 * time.Second,
		killSignal:  ssh.SIGKILL,
	}
	t.log = logger.With("host", t.name)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

func loadSigner(file string) (ssh.Signer, error) {
	if file == "" {
		return nil, app.Errorf(app.EINVALID, "An SSH sandbox host needs a private key file.")
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "The SSH key file %s cannot be read.", file)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var pe *ssh.PassphraseMissingError
	if errors.As(err, &pe) {
		return nil, app.WrapError(app.EINVALID, err,
			"The SSH key file %s is passphrase-protected; asb needs an unencrypted key readable only by its user.", file)
	}
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "The SSH key file %s is not a private key.", file)
	}
	return signer, nil
}

// String implements Transport.
func (t *SSHTransport) String() string { return t.name }

// Close implements Transport: it closes the connection, which fails the
// commands still running, and returns once every goroutine of the
// transport has ended.
func (t *SSHTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	c := t.cur
	t.mu.Unlock()
	t.cancel()
	if c != nil {
		c.kill(errTransportClosed)
	}
	t.wg.Wait()
	return nil
}

var (
	errTransportClosed = errors.New("sandbox: transport closed")
	errExecRefused     = errors.New("ssh: the server refused the exec request")
)

func (t *SSHTransport) closedError() error {
	return app.WrapError(app.EUNAVAILABLE, errTransportClosed, "The connection to %s has been shut down.", t.name)
}

// Run implements Transport. The command line sent is ShellQuote(cmd.Argv);
// the account's login shell must be a POSIX shell (see ShellQuote).
//
// A command is sent at most once. Only when opening its session fails —
// before anything was sent for it — does Run reconnect and try again.
// A connection lost while the command runs is an error, because the command
// may or may not have had its effect.
func (t *SSHTransport) Run(ctx context.Context, cmd Command) (Result, error) {
	if err := cmd.validate(); err != nil {
		return Result{}, err
	}
	res := Result{ExitCode: -1}
	// Checked first: select below picks at random among ready cases.
	if ctx.Err() != nil {
		return res, contextError(ctx, t.name)
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return res, contextError(ctx, t.name)
	case <-t.ctx.Done():
		return res, t.closedError()
	}
	// The slot is normally released on return; see the cancel path for
	// the exception.
	holdSlot := false
	defer func() {
		if !holdSlot {
			<-t.sem
		}
	}()

	sess, conn, err := t.openSession(ctx)
	if err != nil {
		return res, err
	}
	defer sess.Close()
	prog := filepath.Base(cmd.Argv[0])

	out := newOutputs(cmd)
	sess.Stdout, sess.Stderr = out.stdout, out.stderr
	stop := make(chan struct{})
	if cmd.Stdin != nil {
		// Our own pump rather than sess.Stdin: x/crypto reports a remote
		// that exits without reading all its input as an error from Wait,
		// where a local pipe would just get EPIPE. The stop check keeps us
		// from reading the caller's reader after Run returns.
		w, err := sess.StdinPipe()
		if err != nil {
			return res, app.WrapError(app.EINTERNAL, err, "Cannot set up the input of a command on %s.", t.name)
		}
		go func() {
			_, _ = io.Copy(w, stoppableReader{cmd.Stdin, stop})
			_ = w.Close() // EOF to the command
		}()
	}
	defer close(stop)

	if ctx.Err() != nil { // don't start what nobody waits for
		return res, contextError(ctx, t.name)
	}
	start := time.Now()
	if err := sess.Start(ShellQuote(cmd.Argv)); err != nil {
		if strings.HasPrefix(err.Error(), "ssh: command ") {
			// x/crypto's refusal error quotes the whole command line;
			// keep it out of logs. A refused exec never started.
			return res, app.WrapError(app.EUNAVAILABLE, errExecRefused,
				"SSH host %s refused to run a command.", t.name)
		}
		// The exec request may have reached the server and started the
		// command even though we saw no reply: never retry it.
		conn.killIfBroken(err)
		return res, app.WrapError(app.EUNAVAILABLE, err,
			"Starting a command on %s failed; it was not retried because it may have started.", t.name)
	}

	// Sessions take no context. On cancellation, ask sshd to kill the
	// command's process group (OpenSSH's "signal" request does killpg),
	// then close the channel: sshd does not kill a command without a
	// terminal when its channel closes, so the signal is what stops it.
	waitc := make(chan error, 1)
	go func() { waitc <- sess.Wait() }()
	select {
	case err = <-waitc:
	case <-ctx.Done():
		_ = sess.Signal(t.killSignal)
		_ = sess.Close()
		select {
		case <-waitc:
		case <-time.After(t.cancelGrace):
			// The server ignored the signal (OpenSSH before 7.9, other
			// servers) and keeps the session until the command ends. Do
			// not make the caller wait for that; keep the session's slot
			// until it really ends, so MaxSessions stays honest. Close
			// ends the wait by closing the connection.
			t.log.Warn("remote command did not stop on a kill request; it may still run on the host", "program", prog)
			t.mu.Lock()
			if !t.closed { // else Close is closing the connection: wait below ends soon
				holdSlot = true
				t.wg.Add(1) // under mu and before closed: never races Close's Wait
				go func() {
					defer t.wg.Done()
					<-waitc
					<-t.sem
				}()
			}
			t.mu.Unlock()
			if !holdSlot {
				<-waitc
			}
		}
		out.detach() // output still in flight must not reach the caller now
		_ = out.fill(&res)
		return res, contextError(ctx, t.name)
	}

	werr := out.fill(&res)
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitStatus()
		res.Signal = exitErr.Signal()
	default:
		// ExitMissingError or a connection error: the channel closed
		// without an exit status, typically because the connection died.
		conn.killIfBroken(err)
		t.log.Warn("ssh connection lost during a command", "program", prog, "err", err)
		return res, app.WrapError(app.EUNAVAILABLE, err,
			"The connection to %s was lost while a command ran; it may or may not have finished and was not retried.", t.name)
	}
	t.log.Debug("command finished", "program", prog, "exit", res.ExitCode, "duration", time.Since(start))
	return res, werr
}

// stoppableReader stops handing out input once stop is closed. A Read
// already blocked in the caller's reader cannot be interrupted; it ends
// when that reader returns.
type stoppableReader struct {
	r    io.Reader
	stop <-chan struct{}
}

func (s stoppableReader) Read(p []byte) (int, error) {
	select {
	case <-s.stop:
		return 0, io.EOF
	default:
		return s.r.Read(p)
	}
}

// maxRejections bounds how often Run retries a session the server refused
// for lack of room (see openSession).
const maxRejections = 10

// openSession opens a session on the shared connection. Nothing has been
// sent for the command yet, which is what makes the two retries safe:
//   - a dead connection (the server dropped it while idle, before our
//     watcher noticed) is replaced once;
//   - a refused session open means the server still counts sessions we
//     already closed (OpenSSH frees a session a moment after it gets our
//     channel close, and says "connect failed (open failed)"; others say
//     "administratively prohibited" or "resource shortage"), so we wait
//     briefly and ask again. Commands that finish together release many
//     slots at once, which is when this happens.
func (t *SSHTransport) openSession(ctx context.Context) (*ssh.Session, *sshConn, error) {
	reconnected := false
	delay := 5 * time.Millisecond
	for rejections := 0; ; {
		c, err := t.conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		s, err := c.client.NewSession()
		if err == nil {
			return s, c, nil
		}
		var oce *ssh.OpenChannelError
		switch {
		case errors.As(err, &oce) && oce.Reason != ssh.UnknownChannelType:
			rejections++
			if rejections > maxRejections {
				return nil, nil, app.WrapError(app.EUNAVAILABLE, err,
					"SSH host %s refuses new sessions; check its MaxSessions setting.", t.name)
			}
			t.log.Debug("ssh session refused, retrying", "err", err)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, nil, contextError(ctx, t.name)
			}
			delay = min(2*delay, 500*time.Millisecond)
		case errors.As(err, &oce):
			return nil, nil, app.WrapError(app.EUNAVAILABLE, err, "SSH host %s refused to open a session.", t.name)
		case !reconnected:
			t.log.Info("ssh connection dead on session open, reconnecting", "err", err)
			c.kill(err)
			reconnected = true
		default:
			return nil, nil, app.WrapError(app.EUNAVAILABLE, err, "Cannot open a session on %s.", t.name)
		}
	}
}

// sshConn is one live connection and the goroutines that watch it.
type sshConn struct {
	client *ssh.Client
	dead   chan struct{} // closed once the connection is unusable
	once   sync.Once
}

func (c *sshConn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// kill marks the connection dead and closes it. Safe to call many times.
func (c *sshConn) kill(error) {
	c.once.Do(func() {
		close(c.dead)
		_ = c.client.Close()
	})
}

// killIfBroken kills the connection when err is not a per-session problem.
// It is cheap to be wrong towards "broken": the next command redials.
func (c *sshConn) killIfBroken(err error) {
	var exitMissing *ssh.ExitMissingError
	if errors.Is(err, io.EOF) || errors.As(err, &exitMissing) || isNetError(err) {
		c.kill(err)
	}
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// dialAttempt is one dial that every caller arriving meanwhile waits for,
// so a burst of commands on a cold or broken transport opens one
// connection, not one each.
type dialAttempt struct {
	done chan struct{}
	conn *sshConn
	err  error
}

// conn returns the live connection, dialing if there is none.
func (t *SSHTransport) conn(ctx context.Context) (*sshConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, t.closedError()
	}
	if c := t.cur; c != nil && c.alive() {
		t.mu.Unlock()
		return c, nil
	}
	a := t.dialing
	if a == nil {
		if t.lastErr != nil && time.Now().Before(t.retryAt) {
			err := t.lastErr
			t.mu.Unlock()
			return nil, err
		}
		a = &dialAttempt{done: make(chan struct{})}
		t.dialing = a
		t.wg.Add(1)
		go t.runDial(a, t.cur != nil)
	}
	t.mu.Unlock()
	select {
	case <-a.done:
		return a.conn, a.err
	case <-ctx.Done():
		return nil, contextError(ctx, t.name)
	}
}

// runDial performs a dial for everyone waiting on a. It is not tied to the
// first caller's context: that caller giving up must not fail the others.
func (t *SSHTransport) runDial(a *dialAttempt, reconnect bool) {
	defer t.wg.Done()
	c, err := t.dial()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && t.closed {
		c.kill(errTransportClosed)
		c, err = nil, t.closedError()
	}
	t.dialing = nil
	if err != nil {
		t.failures++
		t.lastErr = err
		backoff := t.backoff(t.failures)
		t.retryAt = time.Now().Add(backoff)
		t.log.Warn("ssh connect failed", "attempt", t.failures, "retry_in", backoff, "err", err)
	} else {
		t.failures, t.lastErr = 0, nil
		t.cur = c
		t.log.Info("ssh connected", "reconnect", reconnect)
	}
	a.conn, a.err = c, err
	close(a.done)
}

// backoff returns the wait after n consecutive failures: doubling from
// ReconnectBackoff, capped, with ±20% jitter so that many controllers do
// not hammer a recovering host in step.
func (t *SSHTransport) backoff(n int) time.Duration {
	d := t.cfg.ReconnectBackoff
	for i := 1; i < n && d < t.cfg.MaxReconnectDelay; i++ {
		d *= 2
	}
	d = min(d, t.cfg.MaxReconnectDelay)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// dial connects, verifies the host key, logs in, and starts the watcher
// and keepalive goroutines of the new connection.
func (t *SSHTransport) dial() (*sshConn, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.DialTimeout)
	defer cancel()
	keys, err := loadHostKeys(t.cfg.KnownHostsFile, t.addr)
	if err != nil {
		return nil, err
	}
	// The callback records what failed; the handshake error alone does
	// not say which key the host presented.
	var presented ssh.PublicKey
	var keyErr error
	cc := &ssh.ClientConfig{
		User: t.cfg.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(t.signer)},
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			err := keys.callback(hostname, remote, key)
			if err != nil {
				presented, keyErr = key, err
			}
			return err
		},
		HostKeyAlgorithms: keys.algorithms,
		Timeout:           t.cfg.DialTimeout,
	}
	nc, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(ctx, "tcp", t.addr)
	if err != nil {
		if t.ctx.Err() != nil {
			return nil, t.closedError()
		}
		return nil, app.WrapError(app.EUNAVAILABLE, err, "Cannot reach SSH host %s.", t.name)
	}
	// NewClientConn takes no context: bound the handshake with a deadline
	// and let Close (t.ctx) abort it by closing the socket.
	_ = nc.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	stopAbort := context.AfterFunc(ctx, func() { _ = nc.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(nc, t.addr, cc)
	aborted := !stopAbort()
	if err != nil {
		_ = nc.Close()
		switch {
		case keyErr != nil:
			return nil, hostKeyError(keyErr, t.cfg.KnownHostsFile, t.addr, presented)
		case t.ctx.Err() != nil:
			return nil, t.closedError()
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, app.WrapError(app.EUNAVAILABLE, err,
				"SSH host %s refused the login as %s; its authorized_keys must hold asb's public key (%s).",
				t.name, t.cfg.User, ssh.FingerprintSHA256(t.signer.PublicKey()))
		}
		return nil, app.WrapError(app.EUNAVAILABLE, err, "The SSH handshake with %s failed.", t.name)
	}
	if aborted {
		_ = sc.Close()
		return nil, t.closedError()
	}
	_ = nc.SetDeadline(time.Time{})

	c := &sshConn{client: ssh.NewClient(sc, chans, reqs), dead: make(chan struct{})}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		err := c.client.Wait()
		if c.alive() {
			t.log.Warn("ssh connection closed by the network or the server", "err", err)
		}
		c.kill(err)
	}()
	if t.cfg.KeepAlive > 0 {
		t.wg.Add(1)
		go t.keepalive(c)
	}
	return c, nil
}

// keepalive pings the server and kills the connection when replies stop,
// so a silently dead link (NAT timeout, host frozen) is noticed within
// KeepAlive*KeepAliveMissed instead of hanging the next command.
// OpenSSH answers keepalive@openssh.com with a failure: any answer counts.
func (t *SSHTransport) keepalive(c *sshConn) {
	defer t.wg.Done()
	tick := time.NewTicker(t.cfg.KeepAlive)
	defer tick.Stop()
	limit := t.cfg.KeepAlive * time.Duration(t.cfg.KeepAliveMissed)
	for {
		select {
		case <-c.dead:
			return
		case <-tick.C:
		}
		// SendRequest has no timeout; it returns when the connection is
		// closed, which is how the pinger below ends.
		reply := make(chan error, 1)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		timer := time.NewTimer(limit)
		select {
		case err := <-reply:
			timer.Stop()
			if err != nil {
				c.kill(fmt.Errorf("keepalive: %w", err))
				return
			}
		case <-timer.C:
			t.log.Warn("ssh keepalive unanswered, closing the connection", "waited", limit)
			c.kill(errors.New("keepalive: no reply"))
			return
		case <-c.dead:
			timer.Stop()
			return
		}
	}
}
