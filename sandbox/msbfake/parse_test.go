package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	ok := []string{"a", "box1", "A.b-c_d", strings.Repeat("x", 128), "pool-1720000000000-abc123"}
	bad := []string{"", "-x", ".x", "_x", "a b", "a/b", "a:b", "é", strings.Repeat("x", 129)}
	for _, n := range ok {
		if err := validateName(n); err != nil {
			t.Errorf("validateName(%q) = %v, want ok", n, err)
		}
	}
	for _, n := range bad {
		if err := validateName(n); err == nil {
			t.Errorf("validateName(%q) ok, want error", n)
		}
	}
	err := validateName("-x")
	want := "invalid config: sandbox name must start with an alphanumeric and contain only alphanumeric, dots, hyphens, and underscores: -x"
	if err == nil || err.Error() != want {
		t.Errorf("error text = %v, want %q", err, want)
	}
}

func TestGenerateName(t *testing.T) {
	n := generateName()
	if len(n) != 12 || !strings.HasPrefix(n, "msb-") || strings.Trim(n[4:], "0123456789abcdef") != "" {
		t.Fatalf("generateName() = %q, want msb-%%08x", n)
	}
}

func TestParseSizeMiB(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"512", 512, true}, {"512M", 512, true}, {"512m", 512, true}, {"1G", 1024, true}, {"1g", 1024, true},
		{"1.5G", 1536, true}, {"2G", 2048, true},
		{"512MiB", 0, false}, {"1GiB", 0, false}, {"1Gi", 0, false}, {"", 0, false}, {"M", 0, false},
		{"-1G", 0, false}, {"0", 0, false}, {"abc", 0, false}, {"1T", 0, false},
	}
	for _, tc := range tests {
		got, err := parseSizeMiB(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("parseSizeMiB(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if !tc.ok && err == nil {
			t.Errorf("parseSizeMiB(%q) = %d, want error", tc.in, got)
		}
	}
}

func TestParseDurationSecs(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{"30", 30, ""}, {"30s", 30, ""}, {"5m", 300, ""}, {"1h", 3600, ""}, {"0", 0, ""},
		{"1d", 0, "invalid digit found in string"},
		{"500ms", 0, "invalid digit found in string"},
		{"1h30m", 0, "invalid digit found in string"},
		{"1.5h", 0, "invalid digit found in string"},
		{"", 0, "cannot parse integer from empty string"},
		{"s", 0, "cannot parse integer from empty string"},
		{"-5s", 0, "invalid digit found in string"},
	}
	for _, tc := range tests {
		got, err := parseDurationSecs(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("parseDurationSecs(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("parseDurationSecs(%q) error = %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestParseEnvFlag(t *testing.T) {
	t.Setenv("MSBFAKE_TEST_VAR", "from host")
	tests := []struct {
		in      string
		want    EnvVar
		wantErr string
	}{
		{"K=V", EnvVar{"K", "V"}, ""},
		{"K=", EnvVar{"K", ""}, ""},
		{"K=a=b", EnvVar{"K", "a=b"}, ""},
		{"K=$(touch x) `y`; z", EnvVar{"K", "$(touch x) `y`; z"}, ""},
		{"MSBFAKE_TEST_VAR", EnvVar{"MSBFAKE_TEST_VAR", "from host"}, ""},
		{"MSBFAKE_UNSET_VAR_42", EnvVar{}, "environment variable 'MSBFAKE_UNSET_VAR_42' not set"},
		{"MSB_X=1", EnvVar{}, `invalid config: environment variable "MSB_X" uses the reserved MSB_ prefix`},
		{"=v", EnvVar{}, "invalid environment variable"},
	}
	for _, tc := range tests {
		got, err := parseEnvFlag(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("parseEnvFlag(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("parseEnvFlag(%q) error = %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestParsePullPolicy(t *testing.T) {
	for _, ok := range []string{"always", "if-missing", "never"} {
		if _, err := parsePullPolicy(ok); err != nil {
			t.Errorf("parsePullPolicy(%q): %v", ok, err)
		}
	}
	_, err := parsePullPolicy("missing")
	want := "invalid pull policy: missing (expected: always, if-missing, never)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestNormalizeImageRef(t *testing.T) {
	tests := map[string]string{
		"alpine":                           "docker.io/library/alpine:latest",
		"alpine:3.20":                      "docker.io/library/alpine:3.20",
		"python:3.12":                      "docker.io/library/python:3.12",
		"library/node":                     "docker.io/library/node:latest",
		"user/repo:tag":                    "docker.io/user/repo:tag",
		"docker.io/library/alpine":         "docker.io/library/alpine:latest",
		"ghcr.io/org/img":                  "ghcr.io/org/img:latest",
		"localhost:5000/img:1":             "localhost:5000/img:1",
		"registry.example.com:443/a/b/c:x": "registry.example.com:443/a/b/c:x",
		"alpine@sha256:" + strings.Repeat("ab", 32): "docker.io/library/alpine@sha256:" + strings.Repeat("ab", 32),
	}
	for in, want := range tests {
		got, err := normalizeImageRef(in)
		if err != nil || got != want {
			t.Errorf("normalizeImageRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Alpine", "a b", "alpine:", "alpine@sha256:zz", "-x"} {
		if got, err := normalizeImageRef(bad); err == nil {
			t.Errorf("normalizeImageRef(%q) = %q, want error", bad, got)
		}
	}
}

func TestParseVolume(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		in      string
		want    Mount
		wantErr string
	}{
		{dir + ":/data", Mount{Kind: "bind", Source: dir, Dest: "/data", Options: []string{}}, ""},
		{dir + ":/data:ro", Mount{Kind: "bind", Source: dir, Dest: "/data", ReadOnly: true, Options: []string{"ro"}}, ""},
		{"cache:/cache:rw,noexec,quota=1G", Mount{Kind: "named", Source: "cache", Dest: "/cache", Options: []string{"rw", "noexec", "quota=1G"}}, ""},
		{"cache:/c:stat-virt=relaxed,host-perms=mirror", Mount{Kind: "named", Source: "cache", Dest: "/c", Options: []string{"stat-virt=relaxed", "host-perms=mirror"}}, ""},
		{dir + ":/data,ro", Mount{}, "did you mean '" + dir + ":/data:ro'?"},
		{"nocolon", Mount{}, "expected SOURCE:DEST"},
		{"src:relative", Mount{}, "expected SOURCE:DEST"},
		{"/definitely/missing/dir:/x", Mount{}, "volume source does not exist"},
		{"cache:/c:bogus", Mount{}, "unknown option 'bogus'"},
		{"cache:/c:stat-virt=maybe", Mount{}, "unknown option"},
		{"-bad:/c", Mount{}, "invalid volume name"},
	}
	for _, tc := range tests {
		got, err := parseVolume(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseVolume(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tc.want)
		if err != nil || string(gj) != string(wj) {
			t.Errorf("parseVolume(%q) = %s, %v; want %s", tc.in, gj, err, wj)
		}
	}
}

func TestParsePort(t *testing.T) {
	tests := map[string]string{
		"8080:80":                "127.0.0.1:8080->80/tcp",
		"8080:80/udp":            "127.0.0.1:8080->80/udp",
		"0.0.0.0:8080:80":        "0.0.0.0:8080->80/tcp",
		"[::1]:8080:80/tcp":      "[::1]:8080->80/tcp",
		"127.0.0.1:65535:1/tcp":  "127.0.0.1:65535->1/tcp",
		"10.1.2.3:3000:3000/udp": "10.1.2.3:3000->3000/udp",
	}
	for in, want := range tests {
		p, err := parsePort(in)
		if err != nil || p.String() != want {
			t.Errorf("parsePort(%q) = %q, %v; want %q", in, p.String(), err, want)
		}
	}
	for _, bad := range []string{"80", "a:b", "0:80", "8080:70000", "8080:80/sctp", "host:8080:80", "[zz]:1:2", "1:2:3:4"} {
		if _, err := parsePort(bad); err == nil {
			t.Errorf("parsePort(%q) ok, want error", bad)
		}
	}
}

func TestParseNetRules(t *testing.T) {
	ok := map[string]int{
		"allow@dns":                        1,
		"allow@api.example.com:tcp:443":    1,
		"deny@*.ads.example.com":           1,
		"allow:ingress@private":            1,
		"deny@198.51.100.5,allow@public":   2,
		"allow@10.0.0.0/8:tcp:1000-2000":   1,
		"allow@[2001:db8::1]:udp:53":       1,
		"allow@[2001:db8::/32]":            1,
		"allow@domain=localhost":           1,
		"allow@suffix=example.com:any:any": 1,
		"deny:any@any":                     1,
		"allow@dns:udp":                    1,
		"allow@*.npmjs.org:tcp:443":        1,
		"allow@host:icmpv4":                1,
	}
	for in, n := range ok {
		rules, err := parseNetRules(in)
		if err != nil || len(rules) != n {
			t.Errorf("parseNetRules(%q) = %v, %v; want %d rules", in, rules, err, n)
		}
	}
	bad := map[string]string{
		"allow@example.com:443": "`443` is a port, not a protocol; did you mean `example.com:tcp:443`?",
		"allow@localhost":       "is ambiguous; use `domain=localhost`",
		"permit@x.com":          "unknown action",
		"allow:sideways@x.com":  "unknown direction",
		"allow":                 "expected <action>",
		"allow@x.com:sctp":      "unknown protocol",
		"allow@x.com:tcp:0":     "invalid port range",
		"allow@x.com:tcp:9-2":   "invalid port range",
		"allow:ingress@dns":     "egress-only",
		"allow@dns:icmpv4":      "the `dns` target supports `tcp`, `udp`, or `any`, not `icmpv4`",
		"allow@10.0.0.0/33":     "not a valid CIDR",
		"allow@[zz]":            "not an IPv6 address",
		"allow@x.com:tcp:1:2":   "too many",
		"allow@-bad-.com":       "invalid domain",
	}
	for in, want := range bad {
		if _, err := parseNetRules(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseNetRules(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestBuildNetwork(t *testing.T) {
	parse := func(args ...string) *parsedArgs {
		p, err := createSpec.parse(append(args, "alpine"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		args            []string
		egress, ingress string
		rules           []string
	}{
		{nil, "deny", "allow", []string{"allow@dns", "allow@public"}},
		{[]string{"--net-rule", "allow@x.com:tcp:443"}, "deny", "allow", []string{"allow@x.com", "allow@dns", "allow@public"}},
		{[]string{"--net", "public"}, "deny", "allow", []string{"allow@dns", "allow@public"}},
		{[]string{"--net", "public,private"}, "deny", "allow", []string{"allow@dns", "allow@public", "allow@private"}},
		{[]string{"--net", "all"}, "allow", "allow", nil},
		{[]string{"--net", "none"}, "deny", "deny", nil},
		{[]string{"--no-net"}, "deny", "deny", nil},
		{[]string{"--net-default-egress", "deny", "--net-rule", "allow@dns", "--net-rule", "allow@a.com:tcp:443"}, "deny", "allow", []string{"allow@dns", "allow@a.com"}},
		{[]string{"--net-default", "allow"}, "allow", "allow", nil},
	}
	for _, tc := range tests {
		n, err := buildNetwork(parse(tc.args...))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var rules []string
		for _, r := range n.Rules {
			rules = append(rules, r.Action+"@"+r.Target)
		}
		if n.DefaultEgress != tc.egress || n.DefaultIngress != tc.ingress || strings.Join(rules, " ") != strings.Join(tc.rules, " ") {
			t.Errorf("%v: got %s/%s %v, want %s/%s %v", tc.args, n.DefaultEgress, n.DefaultIngress, rules, tc.egress, tc.ingress, tc.rules)
		}
	}
	if n, _ := buildNetwork(parse("--no-net")); !n.isolated() {
		t.Error("--no-net should isolate the box")
	}
	if n, _ := buildNetwork(parse()); n.isolated() {
		t.Error("the default policy should not isolate the box")
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in      string
		want    endpoint
		wantErr string
	}{
		{"/abs/path", endpoint{path: "/abs/path"}, ""},
		{"./rel", endpoint{path: "./rel"}, ""},
		{"../up", endpoint{path: "../up"}, ""},
		{".", endpoint{path: "."}, ""},
		{"..", endpoint{path: ".."}, ""},
		{"plainfile", endpoint{path: "plainfile"}, ""},
		{"/weird:colon", endpoint{path: "/weird:colon"}, ""},
		{"box:/workspace", endpoint{box: "box", path: "/workspace"}, ""},
		{"box:/a:b", endpoint{box: "box", path: "/a:b"}, ""},
		{"box:rel", endpoint{}, "ambiguous copy endpoint `box:rel`; use SANDBOX:/absolute/path for sandbox paths or prefix local paths with ./"},
		{"box:", endpoint{}, "ambiguous copy endpoint"},
		{"-bad:/x", endpoint{}, "invalid config: sandbox name"},
	}
	for _, tc := range tests {
		got, err := parseEndpoint(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("parseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("parseEndpoint(%q) error = %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestRFC3339AutoSi(t *testing.T) {
	base := time.Date(2026, 8, 15, 2, 21, 0, 0, time.UTC)
	tests := map[time.Duration]string{
		0:                         "2026-08-15T02:21:00+00:00",
		123 * time.Millisecond:    "2026-08-15T02:21:00.123+00:00",
		123456 * time.Microsecond: "2026-08-15T02:21:00.123456+00:00",
		123456789:                 "2026-08-15T02:21:00.123456789+00:00",
		100 * time.Microsecond:    "2026-08-15T02:21:00.000100+00:00",
	}
	for d, want := range tests {
		if got := rfc3339(base.Add(d)); got != want {
			t.Errorf("rfc3339(+%s) = %q, want %q", d, got, want)
		}
		if _, err := time.Parse(time.RFC3339Nano, want); err != nil {
			t.Errorf("%q does not parse as RFC3339Nano: %v", want, err)
		}
	}
	loc := time.FixedZone("X", 3600)
	if got := rfc3339(base.In(loc)); got != "2026-08-15T02:21:00+00:00" {
		t.Errorf("non-UTC input rendered %q", got)
	}
}

func TestRustFloat(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{rustFloat(0), "0.0"}, {rustFloat(1.5), "1.5"}, {rustFloat(12), "12.0"},
		{rustFloat32(0), "0.0"}, {rustFloat32(0.1), "0.1"}, {rustFloat32(100), "100.0"},
	}
	for _, tc := range tests {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("marshal %v = %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
}

func TestFormatHelpers(t *testing.T) {
	if got := formatBytes(512); got != "512 B" {
		t.Errorf("formatBytes(512) = %q", got)
	}
	if got := formatBytes(66480128); got != "63.4 MiB" {
		t.Errorf("formatBytes = %q, want 63.4 MiB", got)
	}
	if got := formatBytes(1 << 30); got != "1.0 GiB" {
		t.Errorf("formatBytes(1GiB) = %q", got)
	}
	if got := formatMiB(512) + " " + formatMiB(1024) + " " + formatMiB(1536); got != "512 MiB 1 GiB 1536 MiB" {
		t.Errorf("formatMiB = %q", got)
	}
	for d, want := range map[time.Duration]string{5 * time.Second: "5s", 125 * time.Second: "2m5s", 43*time.Minute + 18*time.Second: "43m18s", time.Hour + 5*time.Second: "1h0m5s"} {
		if got := formatUptime(d); got != want {
			t.Errorf("formatUptime(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestCLIParse(t *testing.T) {
	p, err := runSpec.parse([]string{"-d", "--name=box", "-m", "1G", "-e", "A=1", "-eB=2", "--env", "C", "alpine", "--pull", "never", "--", "sh", "-c", "echo --name"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.has("detach") || p.get("name") != "box" || p.get("memory") != "1G" || p.get("pull") != "never" {
		t.Errorf("flags parsed wrong: %+v", p.vals)
	}
	if strings.Join(p.all("env"), ",") != "A=1,B=2,C" {
		t.Errorf("env = %v", p.all("env"))
	}
	if strings.Join(p.pos, ",") != "alpine" || strings.Join(p.command, "|") != "sh|-c|echo --name" {
		t.Errorf("pos = %v, command = %v", p.pos, p.command)
	}
	bundle, err := execSpec.parse([]string{"-qt", "box"})
	if err != nil || !bundle.has("quiet") || !bundle.has("tty") {
		t.Errorf("bundled short flags: %+v, %v", bundle, err)
	}
	usage := map[string][]string{
		"unexpected argument '--bogus' found":                       {"--bogus"},
		"a value is required for '--name <NAME>'":                   {"--name"},
		"cannot be used multiple times":                             {"--name", "a", "--name", "b"},
		"the argument '--net <NET>' cannot be used with '--no-net'": {"--net", "public", "--no-net"},
		"unexpected argument 'extra' found":                         {"alpine", "extra"},
		"the argument '--tty' cannot be used with '--no-tty'":       {"-t", "--no-tty"},
	}
	for want, args := range usage {
		_, err := runSpec.parse(args)
		var ce *cliError
		if !errors.As(err, &ce) || ce.code != 2 || !strings.Contains(ce.text, want) {
			t.Errorf("parse(%q) = %v, want usage error containing %q", args, err, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "anything/at:all", true}, {"box", "box", true}, {"box", "box2", false}, {"f*", "f1", true},
		{"ghcr.io/*", "ghcr.io/org/img:1", true}, {"*alpine*", "docker.io/library/alpine:latest", true},
		{"b?x", "box", true}, {"b?x", "bx", false}, {"", "", true}, {"", "x", false},
	}
	for _, tc := range tests {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}
