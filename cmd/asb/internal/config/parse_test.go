package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// check runs a string validator over good (input → output) and bad inputs.
func check(t *testing.T, name string, parse func(string) (string, error), good map[string]string, bad []string) {
	t.Helper()
	for in, want := range good {
		got, err := parse(in)
		if err != nil || got != want {
			t.Errorf("%s(%q) = %q, %v; want %q", name, in, got, err, want)
		}
	}
	for _, in := range bad {
		if got, err := parse(in); err == nil {
			t.Errorf("%s(%q) = %q, want an error", name, in, got)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "yes": true, "On": true,
		"0": false, "false": false, "No": false, "off": false} {
		if got, err := parseBool(in); err != nil || got != want {
			t.Errorf("parseBool(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "2", "y", "n", "enabled", "truee", " true"} {
		if _, err := parseBool(in); err == nil {
			t.Errorf("parseBool(%q) accepted", in)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int64
		want   int64
		ok     bool
	}{
		{"5", 1, 10, 5, true},
		{"1", 1, 10, 1, true},
		{"10", 1, 10, 10, true},
		{"0", 1, 10, 0, false},
		{"11", 1, 10, 0, false},
		{"-1", 0, 10, 0, false},
		{"1.5", 0, 10, 0, false},
		{"0x5", 0, 10, 0, false},
		{"5 ", 0, 10, 0, false},
		{"", 0, 10, 0, false},
		{"99999999999999999999", 0, 10, 0, false},
	} {
		got, err := parseInt(tc.in, tc.lo, tc.hi)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseInt(%q, %d, %d) = %d, %v", tc.in, tc.lo, tc.hi, got, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	lo, hi := 30*time.Second, 168*time.Hour
	good := map[string]time.Duration{
		"30s": 30 * time.Second, "90": 90 * time.Second, "15m": 15 * time.Minute, "1h": time.Hour,
		"1h30m": 90 * time.Minute, "2h0m30s": 2*time.Hour + 30*time.Second, "1.5h": 90 * time.Minute,
		"168h": 168 * time.Hour, "604800": 168 * time.Hour,
	}
	for in, want := range good {
		if got, err := parseDuration(in, lo, hi); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "0s", "29s", "-5m", "169h", "604801", "1d", "15 m", "fifteen",
		"30500ms", "1.5m1ms", "99999999999999999999", "9999999999h"} {
		if got, err := parseDuration(in, lo, hi); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
	_, err := parseDuration("30500ms", lo, hi)
	if err == nil || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("sub-second error = %v", err)
	}
}

func TestParseMillis(t *testing.T) {
	lo, hi := time.Second, 59999*time.Millisecond
	for in, want := range map[string]time.Duration{"1000": time.Second, "50000": 50 * time.Second, "59999": hi} {
		if got, err := parseMillis(in, lo, hi); err != nil || got != want {
			t.Errorf("parseMillis(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"60000", "999", "0", "-1", "50s", "5e4", ""} {
		if _, err := parseMillis(in, lo, hi); err == nil {
			t.Errorf("parseMillis(%q) accepted", in)
		}
	}
}

func TestParseMemoryMiB(t *testing.T) {
	good := map[string]int{
		"512": 512, "512M": 512, "512m": 512, "512MiB": 512, "512mb": 512, "2048M": 2048,
		"1G": 1024, "1g": 1024, "2G": 2048, "1.5G": 1536, "1.25GiB": 1280, "2Gi": 2048,
		"256": 256, "256G": 256 * 1024,
	}
	for in, want := range good {
		if got, err := parseMemoryMiB(in); err != nil || got != want {
			t.Errorf("parseMemoryMiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"lots", "", "G", "1T", "1K", "100", "255M", "257G", "-1G", "1..5G", ".5G",
		"1.G", "1e3", "0x400", "1 G", "1.0001G", "2GB ", "NaN", "Inf"} {
		if got, err := parseMemoryMiB(in); err == nil {
			t.Errorf("parseMemoryMiB(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseListenAddr(t *testing.T) {
	check(t, "parseListenAddr", parseListenAddr, map[string]string{
		"127.0.0.1:8787": "127.0.0.1:8787", ":8787": ":8787", "0.0.0.0:80": "0.0.0.0:80",
		"[::1]:8787": "[::1]:8787", "localhost:1": "localhost:1", "127.0.0.1:0": "127.0.0.1:0",
		"asb.internal:65535": "asb.internal:65535",
	}, []string{"nonsense", "", "8787", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
		"127.0.0.1:http", "::1:8787", "bad host:80", "a;b:80", "-x:80", "http://127.0.0.1:8787"})
}

func TestParseURLs(t *testing.T) {
	check(t, "parsePrefixURL", parsePrefixURL, map[string]string{
		"https://asb.example.com":       "https://asb.example.com",
		"https://asb.example.com/":      "https://asb.example.com",
		"http://127.0.0.1:8787":         "http://127.0.0.1:8787",
		"https://example.com/sub/path/": "https://example.com/sub/path",
		"http://[::1]:8080":             "http://[::1]:8080",
	}, []string{"", "asb.example.com", "ftp://x.example.com", "javascript:alert(1)", "https://",
		"https://x.example.com?q=1", "https://x.example.com/#f", "https://x.example.com?",
		"https://u:p@x.example.com", "https://u@x.example.com", "https://x.example.com:0",
		"https://x.example.com:99999", "https://bad_host", "http://exa mple.com", "//x.example.com", "http:x"})
	check(t, "parseBaseURL", parseBaseURL, map[string]string{
		"https://api.github.com":          "https://api.github.com/",
		"https://api.github.com/":         "https://api.github.com/",
		"http://127.0.0.1:41234/api/v3":   "http://127.0.0.1:41234/api/v3/",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/api/v3/",
		"HTTPS://github.com/":             "https://github.com/",
	}, []string{"github.com", "https://api.github.com/?x=1"})

	_, err := parseHTTPURL("https://me:hunter2@proxy.example.com")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("credentials error = %v", err)
	}
	bv := err.(*badValue)
	if !bv.redacted || strings.Contains(bv.shown, "hunter2") {
		t.Errorf("shown value %q is not redacted", bv.shown)
	}
}

func TestParseHost(t *testing.T) {
	good := []struct {
		in   string
		bare bool
		want Host
	}{
		{"local", false, Host{Kind: HostLocal, Raw: "local"}},
		{"LOCAL", false, Host{Kind: HostLocal, Raw: "LOCAL"}},
		{"ssh://root@203.0.113.7", false, Host{Kind: HostSSH, User: "root", Addr: "203.0.113.7:22"}},
		{"ssh://deploy@vps.example.com:2222", false, Host{Kind: HostSSH, User: "deploy", Addr: "vps.example.com:2222"}},
		{"SSH://u_1.x-y@h", false, Host{Kind: HostSSH, User: "u_1.x-y", Addr: "h:22"}},
		{"ssh://root@[2001:db8::7]", false, Host{Kind: HostSSH, User: "root", Addr: "[2001:db8::7]:22"}},
		{"ssh://root@[::1]:2200", false, Host{Kind: HostSSH, User: "root", Addr: "[::1]:2200"}},
		{"root@203.0.113.7", true, Host{Kind: HostSSH, User: "root", Addr: "203.0.113.7:22"}},
		{"root@vps:2222", true, Host{Kind: HostSSH, User: "root", Addr: "vps:2222"}},
		{"ssh://root@vps", true, Host{Kind: HostSSH, User: "root", Addr: "vps:22"}},
	}
	for _, tc := range good {
		got, err := parseHost(tc.in, tc.bare)
		tc.want.Raw = tc.in
		if err != nil || got != tc.want {
			t.Errorf("parseHost(%q, %v) = %+v, %v; want %+v", tc.in, tc.bare, got, err, tc.want)
		}
	}
	bad := []struct {
		in   string
		bare bool
	}{
		{"", false},
		{"root@vps", false}, // the scheme is required in SANDBOX_HOSTS
		{"vps", true},       // an ssh config alias: no user
		{"ssh://vps", false},
		{"ssh://@vps", false},
		{"ssh://root@", false},
		{"http://root@vps", false},
		{"ssh://root@vps:0", false},
		{"ssh://root@vps:65536", false},
		{"ssh://root@vps:ssh", false},
		{"ssh://root@vps:", false},
		{"ssh://root@vps/path", false},
		{"ssh://root@vps?x", false},
		{"ssh://root@vps;rm -rf /", false},
		{"ssh://root@$(id)", false},
		{"ssh://root@`id`", false},
		{"ssh://root@vps|nc", false},
		{"ssh://root@vps&", false},
		{"ssh://r'oot@vps", false},
		{"ssh://-oProxyCommand=x@vps", false},
		{"ssh://root@-oProxyCommand=x", false},
		{"ssh://1root@vps", false},
		{"ssh://root@a@vps", false},
		{"ssh://root:pw@vps", false},
		{"ssh://root@2001:db8::7", false},
		{"ssh://root@[vps]", false},
		{"ssh://root@[1.2.3.4]", false},
		{"ssh://root@vps..example", false},
		{"ssh://root@1.2.3.400", false},
		{"ssh://root@vps example", false},
		{"ssh://" + strings.Repeat("u", 33) + "@vps", false},
		{"ssh://root@vps\n", false},
	}
	for _, tc := range bad {
		if got, err := parseHost(tc.in, tc.bare); err == nil {
			t.Errorf("parseHost(%q, %v) = %+v, want an error", tc.in, tc.bare, got)
		}
	}
}

func TestHostString(t *testing.T) {
	for in, want := range map[string]string{
		"LOCAL": "local", "SSH://root@vps": "ssh://root@vps:22", "ssh://root@[::1]:2": "ssh://root@[::1]:2",
	} {
		h, err := parseHost(in, false)
		if err != nil || h.String() != want {
			t.Errorf("parseHost(%q).String() = %q, %v; want %q", in, h.String(), err, want)
		}
	}
}

func TestParseEgressDomain(t *testing.T) {
	check(t, "parseEgressDomain", parseEgressDomain, map[string]string{
		"registry.npmjs.org": "registry.npmjs.org", "*.example.com": "*.example.com",
		"API.Example.COM": "api.example.com", "a-b.c.io": "a-b.c.io", "xn--bcher-kva.example": "xn--bcher-kva.example",
	}, []string{"", "*", "*.com", "com", "localhost", "1.2.3.4", "example.com:443", "https://example.com",
		"example.com/path", "*example.com", "a.*.example.com", "**.example.com", "-a.example.com",
		"a-.example.com", "exa_mple.com", "example..com", ".example.com", "example.com.", "a b.com",
		strings.Repeat("a", 64) + ".com", "[::1]", "example.com;rm"})
}

func TestParseLogin(t *testing.T) {
	check(t, "parseLogin", parseLogin, map[string]string{
		"octocat": "octocat", "OctoCat": "octocat", "a-b-c": "a-b-c", "a1": "a1", strings.Repeat("x", 39): strings.Repeat("x", 39),
	}, []string{"", "-a", "a-", "a--b", "a_b", "a.b", "a b", "@octocat", "bot[bot]", strings.Repeat("x", 40)})
}

func TestParseTrigger(t *testing.T) {
	check(t, "parseTrigger", parseTrigger, map[string]string{
		"/agent": "/agent", "/Agent": "/agent", "/asb-bot": "/asb-bot", "/do_it2": "/do_it2",
	}, []string{"", "agent", "/", "//agent", "/agent now", "/1agent", "/-a", "/agent!", "/a/b", "@agent",
		"/" + strings.Repeat("a", 32)})
}

func TestParseLabel(t *testing.T) {
	check(t, "parseLabel", parseLabel, map[string]string{
		"agent": "agent", "Agent-Run": "Agent-Run", "ai.bot_1": "ai.bot_1", strings.Repeat("a", 40): strings.Repeat("a", 40),
	}, []string{"", "agent:working", "my label", "-agent", ".agent", "agent!", "ägent", strings.Repeat("a", 41)})
}

func TestParseModel(t *testing.T) {
	check(t, "parseModel", parseModel, map[string]string{
		"claude-sonnet-4-5": "claude-sonnet-4-5", "opus": "opus", "sonnet[1m]": "sonnet[1m]",
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0": "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
	}, []string{"", "-m", "a b", "x;y", "$(id)", strings.Repeat("m", 129)})
}

func TestParseImageRef(t *testing.T) {
	check(t, "parseImageRef", parseImageRef, map[string]string{
		"node": "node", "node:22-slim": "node:22-slim", "ghcr.io/org/img:tag": "ghcr.io/org/img:tag",
		"img@sha256:abc": "img@sha256:abc", "/var/lib/rootfs": "/var/lib/rootfs", "./rootfs": "./rootfs", "agent-base": "agent-base",
	}, []string{"", "-x", "--pull=always", "a b", "a;b", "$(x)", "a\nb", strings.Repeat("i", 256)})
}

func TestParseCommand(t *testing.T) {
	check(t, "parseCommand", parseCommand, map[string]string{
		"claude": "claude", "msb": "msb", "/usr/local/bin/msb": "/usr/local/bin/msb", "/root/.microsandbox/bin/msb": "/root/.microsandbox/bin/msb",
		"fake-agent.sh": "fake-agent.sh", "g++": "g++",
	}, []string{"", "-rf", "claude -p", "bin/claude", "./claude", "~/bin/msb", "a;b", "$(id)", "a|b", "a\tb"})
}

func TestParseLocalPath(t *testing.T) {
	withHome := func(s string) (string, error) { return parseLocalPath(s, "/home/u") }
	check(t, "parseLocalPath", withHome, map[string]string{
		"./data": "./data", "/var/lib/asb": "/var/lib/asb", "~/.ssh/id": "/home/u/.ssh/id", "~": "/home/u",
		"dir with space": "dir with space",
	}, []string{"~bob/x", "a\nb", "a\x00b", strings.Repeat("p", 4097)})
	if _, err := parseLocalPath("~/x", ""); err == nil {
		t.Error("~ without HOME accepted")
	}
}

func TestParseToken(t *testing.T) {
	check(t, "parseToken", func(s string) (string, error) { return parseToken(s, 16) }, map[string]string{
		strings.Repeat("a", 16): strings.Repeat("a", 16), "ghp_" + strings.Repeat("Z", 36): "ghp_" + strings.Repeat("Z", 36),
	}, []string{"", "short", strings.Repeat("a", 15), strings.Repeat("a", 16) + " x", strings.Repeat("a", 16) + "\x7f",
		strings.Repeat("a", 4097)})
}

func TestDecodeKey(t *testing.T) {
	hex := strings.Repeat("0f", 32)
	for _, in := range []string{
		hex, strings.ToUpper(hex), " " + hex + "\n",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",                             // std, padded
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",                              // std, raw
		base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 16)),    // url alphabet: - and _
		base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 16)), // url alphabet, raw
	} {
		if b, err := DecodeKey(in); err != nil || len(b) != 32 {
			t.Errorf("DecodeKey(%q) = %d bytes, %v", in, len(b), err)
		}
	}
	for _, in := range []string{"", hex[:62], hex + "00", strings.Repeat("zz", 32), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==", "not a key"} {
		b, err := DecodeKey(in)
		if err == nil {
			t.Errorf("DecodeKey(%q) = %x, want an error", in, b)
		} else if in != "" && strings.Contains(err.Error(), in) {
			t.Errorf("error echoes the key: %v", err)
		}
	}
}
