package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// transportUnderTest is one way to reach a host in the shared tests.
type transportUnderTest struct {
	name string
	tr   Transport
	// remote is the server-side process that can run commands, if any.
	sshd *sshtest.SSHD
	srv  *sshtest.Server
}

// testTransports returns the transports every shared test runs against:
// local, a real OpenSSH sshd (when available) and the in-process server.
func testTransports(t *testing.T) []transportUnderTest {
	t.Helper()
	out := []transportUnderTest{{name: "local", tr: NewLocalTransport(transportLogger(t))}}
	if sshdAvailable() {
		d := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
		out = append(out, transportUnderTest{name: "sshd", tr: newSSHDTransport(t, d, nil), sshd: d})
	} else {
		t.Logf("real sshd not available: only local and in-process SSH")
	}
	srv := sshtest.NewServer(t, sshtest.ServerOptions{})
	out = append(out, transportUnderTest{name: "inproc", tr: newServerTransport(t, srv, nil), srv: srv})
	return out
}

// sshdAvailable mirrors sshtest.RequireSSHD without skipping, so the
// shared tests still cover local and in-process transports; with CI set a
// missing sshd still fails.
func sshdAvailable() bool {
	if _, err := os.Stat(sshtest.SSHDPath); err != nil || os.Geteuid() != 0 {
		return os.Getenv("CI") != "" // StartSSHD will then fail loudly
	}
	return true
}

func newSSHDTransport(t testing.TB, d *sshtest.SSHD, tweak func(*SSHConfig)) *SSHTransport {
	t.Helper()
	cfg := SSHConfig{
		User: d.User, Addr: d.Addr, KeyFile: d.ClientKey.File,
		KnownHostsFile: d.KnownHostsFile, Logger: transportLogger(t),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	tr, err := NewSSHTransport(cfg)
	if err != nil {
		t.Fatalf("NewSSHTransport: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func newServerTransport(t testing.TB, s *sshtest.Server, tweak func(*SSHConfig)) *SSHTransport {
	t.Helper()
	cfg := SSHConfig{
		User: "test", Addr: s.Addr, Signer: s.ClientKey.Signer,
		KnownHostsFile: s.KnownHostsFile, Logger: transportLogger(t),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	tr, err := NewSSHTransport(cfg)
	if err != nil {
		t.Fatalf("NewSSHTransport: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// worldDir makes a directory that the sshd test account can write to, so
// that an injected `touch` would succeed if quoting ever let one through.
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asb-transport-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCmd(t *testing.T, tr Transport, cmd Command) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tr.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("%s: Run: %v", tr, err)
	}
	return res
}

// hostileArgs are argument values that break any quoting that is not
// exactly right. Each injection attempt would create CANARY.
func hostileArgs(canary string) []string {
	return []string{
		"plain",
		"",
		"two words",
		"  leading and trailing  ",
		"it's",
		`"double"`,
		`'single'`,
		`'`,
		`''`,
		`'\''`,
		`\`,
		`\'`,
		`back\\slash\n`,
		"$(touch " + canary + ")",
		"`touch " + canary + "`",
		"${IFS}$(touch${IFS}" + canary + ")",
		"; touch " + canary,
		"| touch " + canary,
		"&& touch " + canary + " &",
		"' ; touch " + canary + " ; '",
		`" ; touch ` + canary + ` ; "`,
		"\ntouch " + canary + "\n",
		"line1\nline2\n",
		"\r\n\t\v\f",
		"*",
		"/*",
		"?[a-z]{x,y}",
		"~",
		"~root",
		"-n",
		"--help",
		"-e",
		"#not a comment",
		"!!",
		"$HOME $$ $0 $@ $1",
		"%s%d%%\\0",
		"A=B",
		"héllo wörld ✓ 日本語 🙂",
		"\xff\xfe invalid utf-8 \xc3",
		"\x01\x02\x1b[31mansi\x1b[0m\x7f",
		strings.Repeat("long'arg$(x)", 1000),
	}
}

func TestTransportArgvRoundTrip(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			dir := worldDir(t)
			canary := filepath.Join(dir, "CANARY")
			args := hostileArgs(canary)
			want := strings.Join(args, "\x00") + "\x00"

			// printf with argv only: no shell of ours in the way.
			res := runCmd(t, tc.tr, Command{Argv: append([]string{"printf", `%s\0`}, args...)})
			if res.ExitCode != 0 || string(res.Stdout) != want {
				t.Errorf("printf: exit %d, stdout %q\nwant %q\nstderr %q", res.ExitCode, res.Stdout, want, res.Stderr)
			}
			// Through an explicit shell receiving them as "$@".
			res = runCmd(t, tc.tr, Command{Argv: append([]string{"sh", "-c", `printf '%s\0' "$@"`, "argv0"}, args...)})
			if res.ExitCode != 0 || string(res.Stdout) != want {
				t.Errorf("sh -c: exit %d, stdout %q\nwant %q", res.ExitCode, res.Stdout, want)
			}
			// Every hostile value as the program name too: each must fail
			// as "not found", never run anything.
			for _, a := range args {
				if a == "" || strings.HasPrefix(a, "/") {
					continue
				}
				res = runCmd(t, tc.tr, Command{Argv: []string{a, a}})
				if res.ExitCode == 0 {
					t.Errorf("argv[0]=%q ran successfully", a)
				}
			}
			if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("injection: canary %s exists (err=%v)", canary, err)
			}
		})
	}
}

func TestTransportExitCodesAndStreams(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			res := runCmd(t, tc.tr, Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}})
			if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.Signal != "" {
				t.Errorf("got exit %d signal %q stdout %q stderr %q", res.ExitCode, res.Signal, res.Stdout, res.Stderr)
			}
			if res := runCmd(t, tc.tr, Command{Argv: []string{"false"}}); res.ExitCode != 1 {
				t.Errorf("false: exit %d", res.ExitCode)
			}
			if res := runCmd(t, tc.tr, Command{Argv: []string{"true"}}); res.ExitCode != 0 || len(res.Stdout)+len(res.Stderr) != 0 {
				t.Errorf("true: %+v", res)
			}
			// Killed by a signal: 128+9 everywhere. The signal name is only
			// known when the killed process is the one the server started;
			// over SSH a login shell usually sits in between and reports 137.
			res = runCmd(t, tc.tr, Command{Argv: []string{"sh", "-c", "kill -KILL $$"}})
			if res.ExitCode != 128+9 || (res.Signal != "KILL" && (res.Signal != "" || tc.name == "local")) {
				t.Errorf("killed: exit %d signal %q", res.ExitCode, res.Signal)
			}
			// A missing program is exit 127 everywhere (the remote shell says
			// so over SSH; LocalTransport mirrors it).
			res = runCmd(t, tc.tr, Command{Argv: []string{"asb-no-such-program-xyz"}})
			if res.ExitCode != 127 || !bytes.Contains(res.Stderr, []byte("not found")) {
				t.Errorf("missing program: exit %d stderr %q", res.ExitCode, res.Stderr)
			}
		})
	}
}

func TestTransportStdin(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff\n"), 1<<16) // 1.2 MiB
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			res := runCmd(t, tc.tr, Command{Argv: []string{"cat"}, Stdin: strings.NewReader("hello\x00world\n")})
			if string(res.Stdout) != "hello\x00world\n" {
				t.Errorf("cat: %q", res.Stdout)
			}
			// Nil stdin is closed: cat must return at once, not hang.
			res = runCmd(t, tc.tr, Command{Argv: []string{"cat"}})
			if res.ExitCode != 0 || len(res.Stdout) != 0 {
				t.Errorf("cat with nil stdin: %+v", res)
			}
			res = runCmd(t, tc.tr, Command{Argv: []string{"sha256sum"}, Stdin: bytes.NewReader(big)})
			sum := sha256.Sum256(big)
			if !bytes.HasPrefix(res.Stdout, []byte(hex.EncodeToString(sum[:]))) {
				t.Errorf("sha256sum of 1.2 MiB stdin: %q", res.Stdout)
			}
			// A command that ignores its input still succeeds.
			if res := runCmd(t, tc.tr, Command{Argv: []string{"true"}, Stdin: bytes.NewReader(big)}); res.ExitCode != 0 {
				t.Errorf("true with unread stdin: exit %d", res.ExitCode)
			}
		})
	}
}

func TestTransportOutputCapAndWriters(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			res := runCmd(t, tc.tr, Command{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero; echo e >&2"}, MaxOutput: 1000})
			if len(res.Stdout) != 1000 || !res.Truncated || string(res.Stderr) != "e\n" || res.ExitCode != 0 {
				t.Errorf("cap: len %d truncated %v stderr %q exit %d", len(res.Stdout), res.Truncated, res.Stderr, res.ExitCode)
			}
			var out, errb bytes.Buffer
			res = runCmd(t, tc.tr, Command{Argv: []string{"sh", "-c", "echo o; echo e >&2"}, Stdout: &out, Stderr: &errb})
			if out.String() != "o\n" || errb.String() != "e\n" || res.Stdout != nil || res.Stderr != nil {
				t.Errorf("writers: %q %q result %+v", out.String(), errb.String(), res)
			}
			var both syncBuf
			runCmd(t, tc.tr, Command{Argv: []string{"sh", "-c", "echo o; echo e >&2"}, Stdout: &both, Stderr: &both})
			if s := both.String(); len(s) != 4 || !strings.Contains(s, "o\n") || !strings.Contains(s, "e\n") {
				t.Errorf("same writer: %q", s)
			}
			// A failing writer: the command still completes, Run reports it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := tc.tr.Run(ctx, Command{Argv: []string{"sh", "-c", "head -c 1000000 /dev/zero; exit 3"}, Stdout: failWriter{}})
			if !errors.Is(err, errFailWriter) || res.ExitCode != 3 {
				t.Errorf("failing writer: exit %d err %v", res.ExitCode, err)
			}
		})
	}
}

func TestTransportCancelKillsCommand(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			// A background child and the shell itself: both must die.
			out := &lineWaiter{want: 2, ready: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := tc.tr.Run(ctx, Command{
					Argv:   []string{"sh", "-c", "sleep 3001 & echo $!; echo $$; wait"},
					Stdout: out,
				})
				errc <- err
			}()
			select {
			case <-out.ready:
			case err := <-errc:
				t.Fatalf("command ended early: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("no pids printed")
			}
			var pids []int
			for _, f := range strings.Fields(out.String()) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("bad pid %q", f)
				}
				pids = append(pids, pid)
			}
			cancel()
			err := <-errc
			if !errors.Is(err, context.Canceled) || app.ErrorCode(err) != app.EUNAVAILABLE {
				t.Fatalf("Run after cancel: %v", err)
			}
			for _, pid := range pids {
				waitProcessGone(t, pid)
			}
			// The transport still works afterwards.
			if res := runCmd(t, tc.tr, Command{Argv: []string{"echo", "ok"}}); string(res.Stdout) != "ok\n" {
				t.Errorf("after cancel: %+v", res)
			}
		})
	}
}

func TestTransportDeadline(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := tc.tr.Run(ctx, Command{Argv: []string{"sleep", "3002"}})
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(app.ErrorMessage(err), "timed out") {
				t.Fatalf("got %v", err)
			}
			if strings.Contains(app.ErrorMessage(err), "3002") {
				t.Errorf("message leaks argv: %q", app.ErrorMessage(err))
			}
		})
	}
}

func TestTransportInvalidCommand(t *testing.T) {
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			for _, argv := range [][]string{nil, {""}, {"echo", "a\x00b"}} {
				_, err := tc.tr.Run(context.Background(), Command{Argv: argv})
				if app.ErrorCode(err) != app.EINVALID {
					t.Errorf("%q: got %v", argv, err)
				}
			}
		})
	}
}

func TestTransportSecretEnv(t *testing.T) {
	env := map[string]string{
		"SECRET_A": "s3cr3t-'quote'-$(touch x)-`id`",
		"SECRET_B": "multi\nline\n\n",
		"EMPTY":    "",
		"B64":      "line one\n.\n1\nexport X=1\n",
	}
	for _, tc := range testTransports(t) {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := WithSecretEnv(Command{
				Argv:  []string{"sh", "-c", `printf '%s\0' "$SECRET_A" "$SECRET_B" "$EMPTY" "$B64" "${X-unset}"; cat`},
				Stdin: strings.NewReader("rest of\nstdin"),
			}, env)
			if err != nil {
				t.Fatal(err)
			}
			res := runCmd(t, tc.tr, cmd)
			want := env["SECRET_A"] + "\x00" + env["SECRET_B"] + "\x00\x00" + env["B64"] + "\x00unset\x00rest of\nstdin"
			if res.ExitCode != 0 || string(res.Stdout) != want {
				t.Errorf("exit %d stdout %q\nwant %q\nstderr %q", res.ExitCode, res.Stdout, want, res.Stderr)
			}
			for _, a := range cmd.Argv {
				if strings.Contains(a, "s3cr3t") {
					t.Fatalf("secret in argv: %q", a)
				}
			}
			if tc.srv != nil {
				for _, c := range tc.srv.Commands() {
					if strings.Contains(c, "s3cr3t") {
						t.Fatalf("secret in the SSH exec request: %q", c)
					}
				}
			}
			// No stdin after the block: the command sees EOF.
			cmd, _ = WithSecretEnv(Command{Argv: []string{"sh", "-c", `printf %s "$EMPTY"; cat`}}, env)
			if res := runCmd(t, tc.tr, cmd); res.ExitCode != 0 || len(res.Stdout) != 0 {
				t.Errorf("no stdin: %+v", res)
			}
		})
	}
}

// waitGone polls until pid no longer runs (gone or a zombie).
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after cancel: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lineWaiter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  int
	ready chan struct{}
	fired bool
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.fired && bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.want {
		w.fired = true
		close(w.ready)
	}
	return len(p), nil
}

func (w *lineWaiter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var errFailWriter = errors.New("sink broke")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFailWriter }
