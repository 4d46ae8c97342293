package sandbox_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

func TestRunSpecArgs(t *testing.T) {
	cases := []struct {
		name string
		spec sandbox.RunSpec
		want string
	}{
		{"image with tree and allowlist", sandbox.RunSpec{Name: "asb-s-1", Image: "node", MemoryMiB: 2048,
			IdleTimeout: 15 * time.Minute, MaxDuration: 90 * time.Minute, CopyDir: "/srv/stage/x",
			Egress: sandbox.Egress{Domains: []string{"registry.npmjs.org", "API.anthropic.com", "registry.npmjs.org"}}},
			"run -d --name asb-s-1 -m 2048M --net-default-egress deny --net-rule allow@dns --net-rule allow@api.anthropic.com:tcp:443 " +
				"--net-rule allow@registry.npmjs.org:tcp:443 --idle-timeout 15m --max-duration 90m --pull never -w /workspace " +
				"--copy-dir /srv/stage/x:/workspace node -- sleep infinity"},
		{"snapshot, open egress", sandbox.RunSpec{Name: "asb-p-1", Snapshot: "agent-base", IdleTimeout: 2 * time.Hour, MaxDuration: 45 * time.Second,
			Egress: sandbox.Egress{AllowAll: true}},
			"run -d --name asb-p-1 --net public --idle-timeout 2h --max-duration 45s --pull never --from-snapshot agent-base -- sleep infinity"},
	}
	for _, tc := range cases {
		args, err := tc.spec.Args()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Join(args, " "); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	for name, bad := range map[string]sandbox.RunSpec{
		"option as name":      {Name: "--rm", Image: "node"},
		"both image and snap": {Name: "a", Image: "node", Snapshot: "s"},
		"neither":             {Name: "a"},
		"copy with snapshot":  {Name: "a", Snapshot: "s", CopyDir: "/x"},
		"long name":           {Name: strings.Repeat("a", 129), Image: "node"},
	} {
		if _, err := bad.Args(); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEgressKeyAndCovers(t *testing.T) {
	a := sandbox.Egress{Domains: []string{"b.com", "a.com"}}
	b := sandbox.Egress{Domains: []string{"A.com", "b.com", "b.com"}}
	if a.Key() != b.Key() || !a.Covers(b) {
		t.Fatalf("same allowlist, different keys: %s %s", a.Key(), b.Key())
	}
	wider := sandbox.Egress{Domains: []string{"a.com", "b.com", "c.com"}}
	if a.Covers(wider) || wider.Covers(a) || (sandbox.Egress{AllowAll: true}).Covers(a) {
		t.Fatal("a box must only serve its exact policy")
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"node":                       "docker.io/library/node:latest",
		"node:22":                    "docker.io/library/node:22",
		"acme/tool":                  "docker.io/acme/tool:latest",
		"ghcr.io/acme/tool:1":        "ghcr.io/acme/tool:1",
		"localhost:5000/x":           "localhost:5000/x:latest",
		"node@sha256:abc":            "docker.io/library/node@sha256:abc",
		"docker.io/library/node:lts": "docker.io/library/node:lts",
	} {
		if got := sandbox.NormalizeImage(in); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	out := []byte(`[
  {
    "name": "b",
    "status": "Stopped",
    "created_at": "2026-08-15T02:21:00.123456+00:00",
    "image": "python:3.12"
  },
  {"name": "a", "status": "Running", "created_at": null, "image": null},
  {"name": "", "status": "Running"}
]`)
	got, err := sandbox.ParseList(out)
	if err != nil || len(got) != 2 || got[0].Name != "b" || got[0].Running() || !got[1].Running() ||
		got[0].CreatedAt.Nanosecond() != 123456000 || got[1].Image != "" {
		t.Fatalf("ParseList = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", "No sandboxes found.", `[{"name": 3}]`} {
		if _, err := sandbox.ParseList([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if got, err := sandbox.ParseList([]byte("[]\n")); err != nil || len(got) != 0 {
		t.Fatalf("empty list: %v %v", got, err)
	}
}

func TestParseMetrics(t *testing.T) {
	one := []byte(`{"name":"a","state":"running","cpus":1,"timestamp":"2026-08-15T02:21:00+00:00","cpu_percent":12.5,
		"vcpu_time_ns":1,"memory_bytes":1048576,"memory_available_bytes":null,"memory_host_resident_bytes":null,
		"memory_limit_bytes":536870912,"disk_read_bytes":0,"disk_write_bytes":0,"net_rx_bytes":0,"net_tx_bytes":0,
		"upper_used_bytes":null,"upper_free_bytes":null,"upper_host_allocated_bytes":null,"uptime_secs":3.5}`)
	got, err := sandbox.ParseMetrics(one)
	if err != nil || len(got) != 1 || got[0].CPUPercent != 12.5 || got[0].MemoryBytes != 1<<20 || got[0].UptimeSecs != 3.5 {
		t.Fatalf("one = %+v %v", got, err)
	}
	many, err := sandbox.ParseMetrics([]byte("[" + string(one) + "," + string(one) + "]"))
	if err != nil || len(many) != 2 {
		t.Fatalf("many = %+v %v", many, err)
	}
	if _, err := sandbox.ParseMetrics([]byte("NAME STATE")); err == nil {
		t.Fatal("accepted a table")
	}
}

func FuzzParseList(f *testing.F) {
	f.Add([]byte(`[{"name":"a","status":"Running","created_at":"2026-08-15T02:21:00.1+00:00","image":"node"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"name":"a","created_at":null}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := sandbox.ParseList(b)
		if err != nil {
			return
		}
		for _, e := range list {
			if e.Name == "" {
				t.Fatal("an entry without a name survived")
			}
		}
	})
}

func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte(`{"name":"a","state":"running","cpu_percent":1.5,"memory_bytes":10}`))
	f.Add([]byte(`[{"name":"a"},{"name":"b"}]`))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = sandbox.ParseMetrics(b) })
}

func TestErrorClassification(t *testing.T) {
	fake := msbtest.New(t, "node")
	m := sandbox.NewMSB(sandbox.NewLocalTransport(nil), fake.Path)
	cases := []struct {
		name string
		call func() error
		kind sandbox.ErrKind
		code string
	}{
		{"exec on a missing box", func() error { _, err := m.Exec(bg, "nope", sandbox.ExecSpec{}, "true"); return err }, sandbox.KindNotFound, app.ENOTFOUND},
		{"start a missing box", func() error { return m.Start(bg, "nope") }, sandbox.KindNotFound, app.ENOTFOUND},
		{"uncached image", func() error {
			return m.Run(bg, sandbox.RunSpec{Name: "x1", Image: "python:3.12"})
		}, sandbox.KindImageNotCached, app.EINVALID},
		{"snapshot of a running box", func() error {
			if err := m.Run(bg, sandbox.RunSpec{Name: "x2", Image: "node"}); err != nil {
				return err
			}
			return m.SnapshotCreate(bg, "snap", "x2")
		}, sandbox.KindBadState, app.ECONFLICT},
		{"missing binary in the box", func() error {
			_, err := m.Exec(bg, "x2", sandbox.ExecSpec{}, "/no/such/tool")
			return err
		}, sandbox.KindExecFailed, app.EINVALID},
		{"exec timeout", func() error {
			_, err := m.Exec(bg, "x2", sandbox.ExecSpec{Timeout: time.Second}, "sleep", "5")
			return err
		}, sandbox.KindExecTimeout, app.EUNAVAILABLE},
	}
	for _, tc := range cases {
		err := tc.call()
		if !sandbox.IsKind(err, tc.kind) || app.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v (code %s), want kind %s code %s", tc.name, err, app.ErrorCode(err), tc.kind, tc.code)
		}
	}
	// Idempotent lifecycle: missing boxes are fine for stop and rm; start of
	// a running box is fine.
	if err := m.Stop(bg, "nope"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(bg, "nope"); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(bg, "x2"); err != nil {
		t.Fatal(err)
	}
	// A guest that exits 1 and prints an error line is not an msb failure.
	res, err := m.Exec(bg, "x2", sandbox.ExecSpec{}, "sh", "-c", "echo 'error: it broke' >&2; exit 1")
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("guest exit 1: %+v %v", res, err)
	}
	if v, err := m.Version(bg); err != nil || v != "msb 0.6.9" {
		t.Fatalf("version %q %v", v, err)
	}
	if ok, _, err := m.Doctor(bg); err != nil || !ok {
		t.Fatalf("doctor %v %v", ok, err)
	}
	if ok, err := m.ImageCached(bg, "node"); err != nil || !ok {
		t.Fatalf("node cached: %v %v", ok, err)
	}
	if ok, err := m.ImageCached(bg, "python:3.12"); err != nil || ok {
		t.Fatalf("python cached: %v %v", ok, err)
	}
	if err := m.Stop(bg, "x2"); err != nil {
		t.Fatal(err)
	}
	if err := m.SnapshotCreate(bg, "agent-base", "x2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.SnapshotExists(bg, "agent-base"); err != nil || !ok {
		t.Fatalf("snapshot exists: %v %v", ok, err)
	}
	if err := m.Run(bg, sandbox.RunSpec{Name: "x3", Snapshot: "agent-base"}); err != nil {
		t.Fatalf("boot from snapshot: %v", err)
	}
}

// hostile strings: every one must reach the box byte-for-byte and run
// nothing on the host or in the box.
func hostile(canary string) []string {
	return []string{
		`it's "quoted"`,
		"$(touch " + canary + ")",
		"`touch " + canary + "`",
		"; touch " + canary + " ;",
		"a\nb\n; touch " + canary,
		"| touch " + canary,
		"&& touch " + canary,
		"*",
		"-rf",
		"--help",
		"",
		" leading and trailing ",
		"ünïcødé ✓ 日本語",
		`back\slash \' \"`,
		"$HOME ${PATH} $$",
		"tab\there",
	}
}

// checkRoundTrip runs printf in the box with hostile arguments, env values
// and file names, and checks that everything arrives intact and that no
// canary file appears on the host or in the box.
func checkRoundTrip(t *testing.T, m *sandbox.MSB, fake *msbtest.Host, box string) {
	t.Helper()
	canary := filepath.Join(os.TempDir(), "asb-canary-"+strings.ReplaceAll(t.Name(), "/", "_"))
	os.Remove(canary)
	args := hostile(canary)
	res, err := m.Exec(bg, box, sandbox.ExecSpec{}, append([]string{"printf", `%s\000`}, args...)...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", res, err)
	}
	got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00")
	if len(got) != len(args) {
		t.Fatalf("got %d args back, sent %d: %q", len(got), len(args), got)
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("arg %d: got %q, sent %q", i, got[i], args[i])
		}
	}
	// Env values (non-secret settings travel in argv).
	for i, v := range args {
		if v == "" {
			continue
		}
		res, err := m.Exec(bg, box, sandbox.ExecSpec{Env: map[string]string{"ASB_VALUE": v}}, "printenv", "ASB_VALUE")
		if err != nil || strings.TrimSuffix(string(res.Stdout), "\n") != v {
			t.Errorf("env %d: got %q (%v), sent %q", i, res.Stdout, err, v)
		}
	}
	// Stdin arrives unchanged.
	in := []byte(strings.Join(args, "\n"))
	res, err = m.Exec(bg, box, sandbox.ExecSpec{Stdin: bytes.NewReader(in)}, "cat")
	if err != nil || !bytes.Equal(res.Stdout, in) {
		t.Errorf("stdin: got %q (%v)", res.Stdout, err)
	}
	// File names: copied in and listed back.
	// Not t.TempDir(): its parent is private, and over SSH msb runs as
	// another user.
	src, err := os.MkdirTemp("", "asb-copy-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(src)
	for _, name := range args {
		if name == "" || strings.ContainsAny(name, "/\x00") {
			continue
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if os.Chmod(src, 0o755) != nil {
		t.Fatal("chmod")
	}
	if err := m.CopyIn(bg, src, box, "/workspace/in"); err != nil {
		t.Fatal(err)
	}
	res, err = m.Exec(bg, box, sandbox.ExecSpec{Workdir: "/workspace/in"}, "sh", "-c", `for f in *; do printf '%s\000' "$f"; done`)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(src)
	if n := strings.Count(string(res.Stdout), "\x00"); n != len(entries) {
		t.Errorf("copied %d files, box lists %d: %q", len(entries), n, res.Stdout)
	}
	for _, e := range entries {
		if !strings.Contains(string(res.Stdout), e.Name()+"\x00") {
			t.Errorf("file %q did not arrive", e.Name())
		}
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("an argument was executed on the host: the canary exists")
	}
	if out, _, _ := fake.Run("exec", box, "--", "sh", "-c", "ls "+canary+" 2>/dev/null"); out != "" {
		t.Fatal("an argument was executed in the box: the canary exists there")
	}
}

func TestHostileInputReachesTheBoxIntactLocally(t *testing.T) {
	fake := msbtest.New(t, "node")
	m := sandbox.NewMSB(sandbox.NewLocalTransport(nil), fake.Path)
	if err := m.Run(bg, sandbox.RunSpec{Name: "asb-s-hostile", Image: "node"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(bg, "asb-s-hostile", sandbox.ExecSpec{}, "mkdir", "-p", "/workspace"); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, m, fake, "asb-s-hostile")
}
