package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, flag := range []string{"--version", "-V"} {
		r := e.run(flag)
		if r.code != 0 || r.stdout != "msb 0.6.9\n" || r.stderr != "" {
			t.Errorf("msb %s: %s", flag, r)
		}
	}
	wantCode(t, e.run("version"), 2) // there is no `version` subcommand
	wantCode(t, e.run(), 2)
	wantCode(t, e.run("--help"), 0)
	wantCode(t, e.run("ls", "--help"), 0)
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"doctor"}, {"self", "doctor"}, {"check"}} {
		r := e.run(args...)
		wantCode(t, r, 0)
		if r.stdout != "" {
			t.Errorf("doctor wrote to stdout: %q", r.stdout)
		}
		for _, line := range []string{"info Platform: Linux ", "info Version: v0.6.9\n", "info MSB_HOME: " + e.home + "\n",
			"   ✓ msb          ", "   ✓ libkrunfw    ", "   ✓ CPU virt     vmx\n", "   ✓ KVM device   /dev/kvm\n",
			"   ✓ KVM access   read/write\n", "done Host setup is ready.\n"} {
			wantStderr(t, r, line)
		}
	}
	r := e.runOpts([]opt{withEnv("FAKE_MSB_DOCTOR_FAIL=1")}, "doctor")
	wantCode(t, r, 1)
	wantStderr(t, r, "   ✗ KVM device")
	wantStderr(t, r, "error: /dev/kvm is not present\n")
}

func TestEmptyListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		args           []string
		stdout, stderr string
	}{
		{[]string{"ls", "--format", "json"}, "[]\n", ""},
		{[]string{"list", "--format", "json", "--running"}, "[]\n", ""},
		{[]string{"ps", "--format", "json"}, "[]\n", ""},
		{[]string{"ps", "-a", "--format", "json"}, "[]\n", ""},
		{[]string{"metrics", "--format", "json"}, "[]\n", ""},
		{[]string{"snapshot", "ls", "--format", "json"}, "[]\n", ""},
		{[]string{"ls"}, "", "No sandboxes found.\n"},
		{[]string{"ps"}, "", "No running sandboxes.\n"},
		{[]string{"ps", "-a"}, "", "No sandboxes found.\n"},
		{[]string{"metrics"}, "", "No running sandboxes.\n"},
		{[]string{"snapshot", "ls"}, "", "No snapshots indexed.\n"},
		{[]string{"ls", "-q"}, "", ""},
	}
	for _, tc := range tests {
		r := e.run(tc.args...)
		if r.code != 0 || r.stdout != tc.stdout || r.stderr != tc.stderr {
			t.Errorf("msb %q: %s; want stdout %q stderr %q", tc.args, r, tc.stdout, tc.stderr)
		}
	}
	wantCode(t, e.run("ls", "--format", "yaml"), 2)
}

// TestCreateValidation checks that malformed flags fail with msb's exit code
// and message, before anything is created.
func TestCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("pull", "alpine")
	missing := filepath.Join(e.home, "missing")
	file := filepath.Join(e.home, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-m", "1GiB"}, 1, "error: invalid size '1GiB'"},
		{[]string{"-m", "lots"}, 1, "error: invalid size"},
		{[]string{"--idle-timeout", "1d"}, 1, "error: invalid digit found in string\n"},
		{[]string{"--max-duration", "1h30m"}, 1, "error: invalid digit found in string\n"},
		{[]string{"-e", "MSB_TOKEN=x"}, 1, `error: invalid config: environment variable "MSB_TOKEN" uses the reserved MSB_ prefix`},
		{[]string{"-e", "MSBFAKE_SURELY_UNSET"}, 1, "error: environment variable 'MSBFAKE_SURELY_UNSET' not set\n"},
		{[]string{"-v", e.home + ":/data,ro"}, 1, "did you mean"},
		{[]string{"-v", missing + ":/data"}, 1, "volume source does not exist"},
		{[]string{"-p", "80"}, 1, "invalid port mapping '80'"},
		{[]string{"--net-rule", "allow@example.com:443"}, 1, "error: `443` is a port, not a protocol; did you mean `example.com:tcp:443`?\n"},
		{[]string{"--net-rule", "allow@localhost"}, 1, "ambiguous"},
		{[]string{"--net-default-egress", "maybe"}, 1, "expected `allow` or `deny`"},
		{[]string{"--net", "bogus"}, 1, "invalid network profile 'bogus'"},
		{[]string{"--net", "all,public"}, 1, "cannot be combined"},
		{[]string{"--net", "public", "--no-net"}, 2, "cannot be used with '--no-net'"},
		{[]string{"--net-default", "deny", "--net-default-egress", "allow"}, 2, "cannot be used with"},
		{[]string{"--pull", "sometimes"}, 1, "error: invalid pull policy: sometimes (expected: always, if-missing, never)\n"},
		{[]string{"-c", "two"}, 2, "invalid value 'two' for '--cpus <CPUS>': invalid digit found in string"},
		{[]string{"-c", "0"}, 1, "cpus must be at least 1"},
		{[]string{"--name", "bad name"}, 1, "error: invalid config: sandbox name must start with an alphanumeric and contain only alphanumeric, dots, hyphens, and underscores: bad name\n"},
		{[]string{"--copy-dir", file + ":/workspace"}, 1, "error: --copy-dir: " + file + " is not a directory\n"},
		{[]string{"--copy-dir", e.home + ":/tmp"}, 1, "error: patch failed: path exists in image layer: '/tmp' (set replace to allow)\n"},
		{[]string{"--copy-dir", e.home + ":/usr"}, 1, "path exists in image layer: '/usr'"},
		{[]string{"--secret", "TOKEN=abc@api.example.com"}, 1, "inline secret values"},
		{[]string{"--secret", "MSBFAKE_SURELY_UNSET@api.example.com"}, 1, "error: invalid config: secret MSBFAKE_SURELY_UNSET: host environment variable MSBFAKE_SURELY_UNSET is not set\n"},
		{[]string{"--label", "sandbox.owner=x"}, 1, "reserved prefix"},
		{[]string{"--bogus"}, 2, "unexpected argument '--bogus' found"},
		{[]string{"--thp", "sometimes"}, 2, "possible values: always, madvise, never"},
	}
	for _, tc := range tests {
		args := append(append([]string{"create", "--name", "v1"}, tc.args...), "alpine")
		if tc.args[0] == "--name" {
			args = append(append([]string{"create"}, tc.args...), "alpine")
		}
		r := e.run(args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("create %q: %s\nwant exit %d and stderr containing %q", tc.args, r, tc.code, tc.msg)
		}
	}
	if n := len(e.state().Sandboxes); n != 0 {
		t.Fatalf("failed creates left %d sandboxes behind", n)
	}
	entries, _ := os.ReadDir(filepath.Join(e.home, "sandboxes"))
	if len(entries) != 0 {
		t.Fatalf("failed creates left guest roots behind: %v", entries)
	}
	// The same validation applies to run; stop -t is a clap integer.
	wantCode(t, e.run("run", "-d", "--name", "v2", "--idle-timeout", "15x", "alpine"), 1)
	r := e.run("stop", "-t", "30s", "v2")
	wantCode(t, r, 2)
	wantStderr(t, r, "invalid value '30s' for '--timeout <TIMEOUT>'")
	wantStderr(t, e.run("stop"), "error: specify one or more sandbox names or --label selectors\n")
	wantCode(t, e.run("frobnicate"), 2)
}

func TestKnobsFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.home, knobsFileName), []byte("# comment\nFAKE_MSB_DOCTOR_FAIL=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.run("doctor"), 1)
	// The environment overrides the file.
	wantCode(t, e.runOpts([]opt{withEnv("FAKE_MSB_DOCTOR_FAIL=0")}, "doctor"), 0)
}
