package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/sandbox/msbtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

type setupRun struct {
	stdout, stderr string
	code           int
}

// runSetup runs deploy/setup.sh with dash (a strict POSIX shell), a fresh
// HOME and no terminal on stdin.
func runSetup(t *testing.T, home string, args ...string) setupRun {
	t.Helper()
	script, err := filepath.Abs("setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "dash", append([]string{script}, args...)...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.Dir = home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("setup.sh: %v", err)
	}
	return setupRun{out.String(), errb.String(), code}
}

// keyFields is "type base64" of every key line in a known_hosts text.
func keyFields(t *testing.T, text string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			out = append(out, f[1]+" "+f[2])
		}
	}
	return out
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// snapshot records every file under dir with its mode, content and time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %s", p, fi.Mode(), fi.ModTime().Format(time.RFC3339Nano))
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSetupScript runs setup.sh the way a self-hoster does, against a real
// OpenSSH sshd with a fake msb: the first run makes the key and pins the
// host but cannot log in until the key is authorized; the second finishes;
// the third changes nothing. The .env it writes drives asb doctor.
func TestSetupScript(t *testing.T) {
	sshd := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
	fake := msbtest.New(t, "node")
	fake.GiveTo(t, sshd.User)
	home := t.TempDir()
	dir := filepath.Join(home, "asb")
	target := fmt.Sprintf("ssh://%s@%s", sshd.User, sshd.Addr)
	args := []string{"--yes", "--dir", dir, "--msb", fake.Path, target}
	key, known, envFile := filepath.Join(dir, "ssh", "asb_ed25519"), filepath.Join(dir, "ssh", "known_hosts"), filepath.Join(dir, ".env")

	first := runSetup(t, home, args...)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatalf("no public key: %v\n%s%s", err, first.stdout, first.stderr)
	}
	if first.code != 1 || !strings.Contains(first.stderr, "authorized_keys") || !strings.Contains(first.stderr, strings.TrimSpace(string(pub))) {
		t.Fatalf("first run, key not authorized yet: exit %d, want the public key and where to put it:\n%s%s", first.code, first.stdout, first.stderr)
	}
	if m := mode(t, key); m != 0o600 {
		t.Errorf("key mode %v", m)
	}
	if !strings.HasPrefix(string(pub), "ssh-ed25519 ") {
		t.Errorf("key is not ed25519: %s", pub)
	}
	pinned, err := os.ReadFile(known)
	if err != nil {
		t.Fatal(err)
	}
	serverKeys, _ := os.ReadFile(sshd.KnownHostsFile)
	want := keyFields(t, string(serverKeys))
	if got := keyFields(t, string(pinned)); len(want) != 1 || !strings.Contains(strings.Join(got, "\n"), want[0]) ||
		!strings.HasPrefix(string(pinned), fmt.Sprintf("[%s]:%d ", sshd.Host, sshd.Port)) {
		t.Fatalf("known_hosts %q does not pin the server's key %q", pinned, want)
	}
	if !strings.Contains(first.stdout, "SHA256:") {
		t.Errorf("the fingerprint was not shown:\n%s", first.stdout)
	}
	if _, err := os.Stat(envFile); err == nil {
		t.Error(".env written although the host check failed")
	}

	// The operator authorizes the key on the host.
	f, err := os.OpenFile(filepath.Join(sshd.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(pub)
	f.Close()

	second := runSetup(t, home, args...)
	if second.code != 0 || !strings.Contains(second.stdout, "runs msb 0.6.9") {
		t.Fatalf("second run: exit %d\n%s%s", second.code, second.stdout, second.stderr)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, envFile); m != 0o600 {
		t.Errorf(".env mode %v", m)
	}
	token := regexp.MustCompile(`(?m)^MCP_HTTP_TOKEN=(asb_[0-9a-f]{64})$`).FindStringSubmatch(string(env))
	if token == nil {
		t.Fatalf(".env has no generated token:\n%s", env)
	}
	for _, line := range []string{
		"SANDBOX_HOSTS=" + target, "SSH_KEY_FILE=" + key, "SSH_KNOWN_HOSTS=" + known, "MSB_PATH=" + fake.Path,
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(env) {
			t.Errorf(".env lacks %s:\n%s", line, env)
		}
	}
	// Scaffolded from .env.example: its other settings are there.
	if !strings.Contains(string(env), "# ANTHROPIC_API_KEY=") || strings.Count(string(env), "MCP_HTTP_TOKEN=") != 1 {
		t.Errorf(".env is not .env.example with the values filled in:\n%s", env)
	}

	t.Logf("FIRST\n%s%s\nSECOND\n%s%s", first.stdout, first.stderr, second.stdout, second.stderr)
	before := snapshot(t, dir)
	third := runSetup(t, home, args...)
	if third.code != 0 || !strings.Contains(third.stdout, "Nothing to do") {
		t.Fatalf("third run: exit %d\n%s%s", third.code, third.stdout, third.stderr)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("a second complete run changed files:\n%s\nthen\n%s", before, after)
	}
	for i, r := range []setupRun{first, second, third} {
		if strings.Contains(r.stdout+r.stderr, token[1]) || strings.Contains(r.stdout+r.stderr, strings.TrimPrefix(token[1], "asb_")) {
			t.Errorf("run %d printed the token", i+1)
		}
	}

	// What setup.sh wrote is what asb needs: doctor, run in that folder,
	// logs in with the key, verifies the pinned host key and finds msb.
	asb := filepath.Join(t.TempDir(), "asb")
	if out, err := exec.Command("go", "build", "-o", asb, "../cmd/asb").CombinedOutput(); err != nil {
		t.Fatalf("build asb: %v\n%s", err, out)
	}
	doctor := exec.Command(asb, "doctor")
	doctor.Dir, doctor.Env = dir, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, _ := doctor.CombinedOutput()
	for _, want := range []string{"ok    host " + target + ": SSH reachable, host key verified", "msb 0.6.9", "ok    operator token: MCP_HTTP_TOKEN is set"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("asb doctor with the .env setup.sh wrote lacks %q:\n%s", want, out)
		}
	}
	t.Logf("THIRD\n%s\nDOCTOR\n%s", third.stdout, out)
	if strings.Contains(string(out), token[1]) {
		t.Error("doctor printed the token")
	}
}

func TestSetupScriptRefusals(t *testing.T) {
	sshd := sshtest.StartSSHD(t, sshtest.SSHDOptions{})
	port := freePort(t) // nothing listens there
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"closed port", []string{"--yes", "ssh://asb@127.0.0.1:" + port}, 1, "cannot reach an SSH server at 127.0.0.1 port " + port},
		{"no terminal to confirm", []string{fmt.Sprintf("ssh://%s@%s", sshd.User, sshd.Addr)}, 1, "run setup.sh again with --yes"},
		{"no user", []string{"--yes", "ssh://127.0.0.1:22"}, 1, "has no user"},
		{"host key changed", []string{"--yes", fmt.Sprintf("ssh://%s@%s", sshd.User, sshd.Addr)}, 1, "is not the one pinned"},
		{"shell characters", []string{"--yes", "ssh://a@host;reboot"}, 1, "is not a host asb accepts"},
		{"bad port", []string{"--yes", "ssh://a@host:99999"}, 1, "the port must be a number"},
		{"option as a user", []string{"--yes", "ssh://-v@host"}, 1, "cannot start with -"},
		{"option as msb", []string{"--yes", "--msb", "-oProxyCommand", "ssh://a@host"}, 1, "use a plain name or an absolute path"},
		{"no host", nil, 2, "Usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			var stale []byte
			if tc.name == "host key changed" {
				// A pin for this address from before the host was re-keyed.
				old := filepath.Join(t.TempDir(), "old_host_key")
				if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", old).CombinedOutput(); err != nil {
					t.Fatalf("ssh-keygen: %v %s", err, out)
				}
				pub, _ := os.ReadFile(old + ".pub")
				f := strings.Fields(string(pub))
				stale = []byte(fmt.Sprintf("[%s]:%d %s %s\n", sshd.Host, sshd.Port, f[0], f[1]))
				os.MkdirAll(filepath.Join(home, "ssh"), 0o755)
				os.WriteFile(filepath.Join(home, "ssh", "known_hosts"), stale, 0o644)
			}
			r := runSetup(t, home, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q:\n%s%s", r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
			if kh, err := os.ReadFile(filepath.Join(home, "ssh", "known_hosts")); err == nil && string(kh) != string(stale) {
				t.Errorf("changed known_hosts: %s", kh)
			}
			if _, err := os.Stat(filepath.Join(home, ".env")); err == nil {
				t.Error("wrote .env")
			}
		})
	}
}
