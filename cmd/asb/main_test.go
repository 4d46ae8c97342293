package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asb-dev/asb/sandbox/msbtest"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testEnv(t *testing.T, dataDir string, extra ...string) (*environment, *syncBuffer, *syncBuffer) {
	t.Helper()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	environ := append([]string{"ASB_ADDR=127.0.0.1:0", "ASB_DATA_DIR=" + dataDir, "HOME=" + t.TempDir()}, extra...)
	return &environment{environ: environ, stdout: out, stderr: errOut, dotenv: filepath.Join(t.TempDir(), "none.env")}, out, errOut
}

// startServe runs serve in-process and returns its address and a stop
// function that returns the exit code.
func startServe(t *testing.T, env *environment) (string, func() int) {
	t.Helper()
	ready := make(chan string, 1)
	env.ready = ready
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, env, []string{"serve"}) }()
	select {
	case addr := <-ready:
		var once sync.Once
		var code int
		// Safe to call twice (an explicit stop and a deferred one).
		return addr, func() int {
			once.Do(func() { cancel(); code = <-done })
			return code
		}
	case code := <-done:
		cancel()
		t.Fatalf("serve exited with %d before listening:\n%s", code, env.stderr)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	return "", nil
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeWithNothingConfigured(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env, _, logs := testEnv(t, data)
	addr, stop := startServe(t, env)

	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}
	code, body := httpGet(t, "http://"+addr+"/readyz")
	if code != 503 || !strings.Contains(body, "SANDBOX_HOSTS") || !strings.Contains(body, `"database"`) || !strings.Contains(body, "GITHUB_APP_ID") {
		t.Fatalf("readyz %d %s", code, body)
	}
	if code, body := httpGet(t, "http://"+addr+"/metrics"); code != 200 || !strings.Contains(body, `asb_runs{state="running"}`) {
		t.Fatalf("metrics %d", code)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d\n%s", code, logs)
	}

	tokenFile := filepath.Join(data, "operator.token")
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("operator token file: %v %v", fi, err)
	}
	token, _ := os.ReadFile(tokenFile)
	for _, f := range []string{"secrets.key", "asb.sqlite"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi.Mode(), err)
		}
	}
	l := logs.String()
	if strings.Contains(l, strings.TrimSpace(string(token))) {
		t.Fatal("the operator token appears in the log")
	}
	if strings.Count(l, tokenFile) != 1 || !strings.Contains(l, "SANDBOX_HOSTS") {
		t.Fatalf("log should name the token file once and explain what is missing:\n%s", l)
	}

	// A second start reuses the token and says nothing about it.
	env2, _, logs2 := testEnv(t, data)
	_, stop2 := startServe(t, env2)
	if code := stop2(); code != 0 {
		t.Fatalf("second serve exit %d\n%s", code, logs2)
	}
	again, _ := os.ReadFile(tokenFile)
	if !bytes.Equal(again, token) || strings.Contains(logs2.String(), tokenFile) {
		t.Fatalf("second start regenerated or re-announced the token:\n%s", logs2)
	}
}

func TestServeRefusesAnotherSecretsKey(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env, _, _ := testEnv(t, data)
	_, stop := startServe(t, env)
	stop()
	env2, _, logs := testEnv(t, data, "SECRETS_KEY="+strings.Repeat("ab", 32))
	if code := run(context.Background(), env2, []string{"serve"}); code != 1 {
		t.Fatalf("exit %d with a different key", code)
	}
	if !strings.Contains(logs.String(), "does not match") || strings.Contains(logs.String(), strings.Repeat("ab", 32)) {
		t.Fatalf("log:\n%s", logs)
	}
}

func TestBadConfigurationFailsFastNamingTheVariable(t *testing.T) {
	for _, tc := range []struct{ env, name string }{
		{"ASB_ADDR=nonsense", "ASB_ADDR"},
		{"MSB_MEMORY=lots", "MSB_MEMORY"},
		{"WAIT_TIMEOUT_MS=90000", "WAIT_TIMEOUT_MS"},
		{"SANDBOX_HOSTS=ssh://root@host;reboot", "SANDBOX_HOSTS"},
	} {
		for _, cmd := range []string{"serve", "migrate"} {
			env, _, errOut := testEnv(t, t.TempDir(), tc.env)
			if code := run(context.Background(), env, []string{cmd}); code != 2 {
				t.Errorf("%s with %s: exit %d", cmd, tc.env, code)
			}
			if !strings.Contains(errOut.String(), tc.name) {
				t.Errorf("%s with %s: error does not name %s:\n%s", cmd, tc.env, tc.name, errOut)
			}
		}
	}
}

func TestMigrate(t *testing.T) {
	data := t.TempDir()
	env, out, _ := testEnv(t, data)
	if code := run(context.Background(), env, []string{"migrate"}); code != 0 || !strings.Contains(out.String(), "applied 0001_init.sql\napplied 0002_box_image_egress.sql\napplied 0003_session_ask.sql\napplied 0004_question_answer_origin.sql") {
		t.Fatalf("first migrate: %d %s", code, out)
	}
	env, out, _ = testEnv(t, data)
	if code := run(context.Background(), env, []string{"migrate"}); code != 0 || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("second migrate: %d %s", code, out)
	}
}

func TestDoctor(t *testing.T) {
	data := t.TempDir()
	env, out, _ := testEnv(t, data)
	if code := run(context.Background(), env, []string{"doctor"}); code != 1 {
		t.Fatalf("doctor with no host: exit %d", code)
	}
	if !strings.Contains(out.String(), "FAIL  no sandbox host configured") || !strings.Contains(out.String(), "ok    database") {
		t.Fatalf("doctor output:\n%s", out)
	}

	fake := msbtest.New(t, "node")
	env, out, _ = testEnv(t, data, "SANDBOX_HOSTS=local", "MSB_PATH="+fake.Path, "MSB_IMAGE=node")
	if code := run(context.Background(), env, []string{"doctor"}); code != 0 {
		t.Fatalf("doctor with a working host: exit %d\n%s", code, out)
	}
	for _, want := range []string{"ok    host local: msb 0.6.9", "msb doctor: KVM and host setup ready", "image node is pulled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	// Each broken piece is named with its fix.
	for _, tc := range []struct {
		env  []string
		knob string
		want string
	}{
		{[]string{"MSB_IMAGE=python:3.12"}, "", "run `msb pull python:3.12` on the host"},
		{[]string{"MSB_SNAPSHOT=agent-base"}, "", "run `asb bake --name agent-base`"},
		{nil, "FAKE_MSB_DOCTOR_FAIL=1", "msb doctor says the host is not ready"},
		{[]string{"MSB_PATH=" + filepath.Join(t.TempDir(), "nope")}, "", "install msb 0.6.9 on the host or set MSB_PATH"},
	} {
		host := msbtest.New(t, "node")
		if tc.knob != "" {
			host.SetKnob(t, tc.knob)
		}
		env, out, _ = testEnv(t, data, append([]string{"SANDBOX_HOSTS=local", "MSB_PATH=" + host.Path}, tc.env...)...)
		if code := run(context.Background(), env, []string{"doctor"}); code != 1 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v %s: exit %d, want the fix %q:\n%s", tc.env, tc.knob, code, tc.want, out)
		}
	}
}

func TestServeRunsTheFleet(t *testing.T) {
	fake := msbtest.New(t, "node")
	env, _, logs := testEnv(t, t.TempDir(), "SANDBOX_HOSTS=local", "MSB_PATH="+fake.Path, "POOL_SIZE=1", "MSB_MEMORY=256M")
	addr, stop := startServe(t, env)
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		if boxes := fake.Boxes(); code == 200 && len(boxes) == 1 {
			// Booted through to its /workspace, not just created.
			if _, _, c := fake.Run("exec", boxes[0], "--", "test", "-d", "/workspace"); c == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never ready with a warm box: %d %s boxes=%v\n%s", code, body, fake.Boxes(), logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// A graceful stop leaves boxes running: the next start re-attaches them.
	if out, _, _ := fake.Run("ls", "--running", "-q"); strings.TrimSpace(out) == "" {
		t.Fatal("shutdown stopped the boxes")
	}
	// Draining the host: its warm box goes, none comes back, and /readyz
	// says how many session boxes are left there.
	env.environ = append(env.environ, "SANDBOX_DRAIN=local")
	addr, stop = startServe(t, env)
	defer stop()
	deadline = time.Now().Add(60 * time.Second)
	for {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		if code == 200 && len(fake.Boxes()) == 0 && strings.Contains(body, "local: 0 session boxes left") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("draining: %d %s boxes=%v\n%s", code, body, fake.Boxes(), logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBake(t *testing.T) {
	fake := msbtest.New(t, "node")
	env, out, errOut := testEnv(t, t.TempDir(), "SANDBOX_HOSTS=local", "MSB_PATH="+fake.Path, "AGENT_COMMAND=my-agent")
	if code := run(context.Background(), env, []string{"bake", "--name", "base-1"}); code != 0 {
		t.Fatalf("bake exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out.String(), "MSB_SNAPSHOT=base-1") {
		t.Fatalf("bake output: %s", out)
	}
	if list, _, _ := fake.Run("snapshot", "ls", "--format", "json"); !strings.Contains(list, `"base-1"`) {
		t.Fatalf("no snapshot: %s", list)
	}
	env, _, errOut = testEnv(t, t.TempDir(), "SANDBOX_HOSTS=local", "MSB_PATH="+fake.Path)
	if code := run(context.Background(), env, []string{"bake", "--host", "ssh://x@y:22"}); code != 2 || !strings.Contains(errOut.String(), "not in SANDBOX_HOSTS") {
		t.Fatalf("unknown host: %d %s", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"migrate", "-h"}, {"doctor", "--help"}, {"bake", "--help"}, {"version", "--help"}} {
		env, out, errOut := testEnv(t, t.TempDir())
		if code := run(context.Background(), env, args); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		if !strings.Contains(out.String()+errOut.String(), "Usage") {
			t.Errorf("%v printed no usage", args)
		}
	}
	env, _, errOut := testEnv(t, t.TempDir())
	if code := run(context.Background(), env, []string{"frobnicate"}); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("unknown command: %d", code)
	}
}

// process is asb serve running as a real process.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	addr string
}

var (
	asbOnce sync.Once
	asbBin  string
	asbErr  error
)

// asbBinary builds asb once per test process.
func asbBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	asbOnce.Do(func() {
		dir, err := os.MkdirTemp("", "asb-serve-")
		if err != nil {
			asbErr = err
			return
		}
		asbBin = filepath.Join(dir, "asb")
		if out, err := exec.Command("go", "build", "-o", asbBin, ".").CombinedOutput(); err != nil {
			asbErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if asbErr != nil {
		t.Fatal(asbErr)
	}
	return asbBin
}

var listeningAddr = regexp.MustCompile(`asb is listening"? addr=(\S+)`)

// startProcess runs asb serve in dir with env and waits until it listens.
func startProcess(t *testing.T, dir string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(asbBinary(t), "serve")
	cmd.Dir = dir
	cmd.Env = append([]string{"ASB_ADDR=127.0.0.1:0", "ASB_DATA_DIR=" + filepath.Join(dir, "data"), "HOME=" + dir, "PATH=" + os.Getenv("PATH")}, env...)
	p := &process{cmd: cmd, logs: &syncBuffer{}}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := listeningAddr.FindStringSubmatch(p.logs.String()); m != nil {
			p.addr = m[1]
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", p.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSignalStopsGracefully runs the real binary and sends it SIGTERM.
func TestSignalStopsGracefully(t *testing.T) {
	p := startProcess(t, t.TempDir())
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.logs)
	}
	if !strings.Contains(p.logs.String(), "stopped") {
		t.Fatalf("no clean stop:\n%s", p.logs)
	}
}
