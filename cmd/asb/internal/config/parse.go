package config

import (
	"github.com/asb-dev/asb/app/seal"

	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// badValue is a validator's verdict. want says what is accepted. When the
// raw value may carry a credential (a URL with a password, say), redacted
// is set and shown replaces it in the message.
type badValue struct {
	want     string
	redacted bool
	shown    string
}

func (b *badValue) Error() string { return b.want }

func want(format string, args ...any) error {
	return &badValue{want: fmt.Sprintf(format, args...)}
}

// wantRedacted is want for a value that must not be echoed as given.
func wantRedacted(shown, format string, args ...any) error {
	return &badValue{want: fmt.Sprintf(format, args...), redacted: true, shown: shown}
}

// parseBool accepts the spellings people actually write in .env files.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, want("want a boolean: 1/0, true/false, yes/no, on/off")
}

// parseInt parses a base-10 integer within [lo, hi].
func parseInt(s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, want("want a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

// parseMillis reads a *_MS variable: a whole number of milliseconds.
func parseMillis(s string, lo, hi time.Duration) (time.Duration, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	d := time.Duration(n) * time.Millisecond
	if err != nil || d < lo || d > hi {
		return 0, want("want milliseconds from %d to %d", lo.Milliseconds(), hi.Milliseconds())
	}
	return d, nil
}

// parseDuration accepts msb's forms (Ns, Nm, Nh, bare seconds) and Go
// durations (1h30m). msb only takes whole seconds, so anything finer is
// refused rather than silently truncated.
func parseDuration(s string, lo, hi time.Duration) (time.Duration, error) {
	bad := want("want a duration from %s to %s, e.g. 90s, 15m, 1h or 1h30m (a bare number is seconds)", fmtDuration(lo), fmtDuration(hi))
	var d time.Duration
	if isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > int64(hi/time.Second) {
			return 0, bad
		}
		d = time.Duration(n) * time.Second
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad
		}
	}
	if d < lo || d > hi {
		return 0, bad
	}
	if d%time.Second != 0 {
		return 0, want("want whole seconds (msb has no finer unit), e.g. 90s or 15m")
	}
	return d, nil
}

// fmtDuration prints a bound the way a user would write it (15m, not 15m0s).
func fmtDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	default:
		return d.String()
	}
}

// Memory bounds for one box. msb's own floor is far lower, but an agent
// with a Node toolchain does not start in less than this.
const (
	minMemoryMiB = 256
	maxMemoryMiB = 256 * 1024
)

// parseMemoryMiB accepts msb's -m forms (512, 512M, 1G, 1.5G) plus the
// MiB/GiB spellings people reach for; the result is passed to msb as a
// plain MiB count, so msb's narrower grammar never sees the input.
func parseMemoryMiB(s string) (int, error) {
	bad := want("want a memory size from %dM to %dG, e.g. 1G, 1.5G, 2048M or 2048 (MiB)", minMemoryMiB, maxMemoryMiB/1024)
	num := strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	unit := strings.ToLower(s[len(num):])
	var mult float64
	switch unit {
	case "", "m", "mb", "mi", "mib":
		mult = 1
	case "g", "gb", "gi", "gib":
		mult = 1024
	default:
		return 0, bad
	}
	if num == "" || strings.Count(num, ".") > 1 || strings.Trim(num, "0123456789.") != "" || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, bad
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad
	}
	mib := f * mult
	if mib < minMemoryMiB || mib > maxMemoryMiB {
		return 0, bad
	}
	if math.Abs(mib-math.Round(mib)) > 1e-9 {
		return 0, want("want a whole number of MiB, e.g. 1.5G or 1536M")
	}
	return int(math.Round(mib)), nil
}

// parseListenAddr validates a listen address. An empty host means every
// interface; port 0 asks the kernel for a free port (tests use it).
func parseListenAddr(s string) (string, error) {
	bad := want("want host:port, e.g. 127.0.0.1:8787, :8787 or [::1]:8787")
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", bad
	}
	if host != "" && !validHost(host) {
		return "", bad
	}
	if _, err := parsePort(port, 0); err != nil {
		return "", bad
	}
	return s, nil
}

// parsePort parses a TCP port no lower than lo.
func parsePort(s string, lo int) (int, error) {
	if !isDigits(s) || len(s) > 5 {
		return 0, want("want a port from %d to 65535", lo)
	}
	n, _ := strconv.Atoi(s)
	if n < lo || n > 65535 {
		return 0, want("want a port from %d to 65535", lo)
	}
	return n, nil
}

// parseHTTPURL accepts an absolute http(s) URL with no credentials, query
// or fragment. Credentials are refused (and not echoed) because URLs end up
// in logs, comments and the dashboard; they belong in the *_KEY variables.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err == nil && u.User != nil { // first: every other answer would echo the password
		return nil, wantRedacted(u.Redacted(), "want a URL without user:password@ (put credentials in their own variable)")
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, want("want an http:// or https:// URL, e.g. https://asb.example.com")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, want("want a URL without ?query or #fragment")
	}
	if h := u.Hostname(); !validHost(h) {
		return nil, want("want an http:// or https:// URL with a valid host name")
	}
	if p := u.Port(); p != "" {
		if _, err := parsePort(p, 1); err != nil {
			return nil, want("want an http:// or https:// URL with a port from 1 to 65535")
		}
	}
	return u, nil
}

// parseBaseURL is parseHTTPURL for a base other URLs are resolved
// against: it must end in "/", as go-github requires, so one is added.
func parseBaseURL(s string) (string, error) {
	u, err := parseHTTPURL(s)
	if err != nil {
		return "", err
	}
	out := u.String()
	if !strings.HasSuffix(out, "/") {
		out += "/"
	}
	return out, nil
}

// parsePrefixURL is parseHTTPURL for a URL other paths are appended to:
// the trailing "/" is dropped so that callers write u + "/setup".
func parsePrefixURL(s string) (string, error) {
	u, err := parseHTTPURL(s)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// validHost accepts an IP address or a host name.
func validHost(s string) bool {
	return net.ParseIP(s) != nil || validHostname(s)
}

// validHostname checks RFC 1123 syntax. A name whose last label is all
// digits is refused: it is a mistyped IP address, not a host.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return false
		}
	}
	return !isDigits(labels[len(labels)-1])
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if !isAlnum(l[i]) && l[i] != '-' {
			return false
		}
	}
	return true
}

// parseEgressDomain validates one EGRESS_DOMAINS entry: a domain with at
// least two labels, optionally "*." for its subdomains. Ports, paths and
// IP addresses are refused because msb rules are per domain on port 443,
// and a bare "*.com" would be no allowlist at all.
func parseEgressDomain(s string) (string, error) {
	bad := want("want a domain name like registry.npmjs.org or *.example.com")
	d := strings.ToLower(s)
	base := strings.TrimPrefix(d, "*.")
	if !validHostname(base) || !strings.Contains(base, ".") || strings.Contains(base, "*") {
		return "", bad
	}
	return d, nil
}

// parseLogin validates a GitHub login (letters, digits, single hyphens,
// at most 39). Logins are case-insensitive on GitHub, so they are lowered.
func parseLogin(s string) (string, error) {
	bad := want("want GitHub logins (letters, digits and single hyphens), separated by commas")
	if s == "" || len(s) > 39 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return "", bad
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return "", bad
		}
	}
	return strings.ToLower(s), nil
}

// parseTrigger validates the comment command: "/" plus one word. Matching
// is case-insensitive, so the stored form is lower case.
func parseTrigger(s string) (string, error) {
	bad := want("want / followed by one word of letters, digits, - or _, e.g. /agent")
	if len(s) < 2 || len(s) > 32 || s[0] != '/' || !isLetter(s[1]) {
		return "", bad
	}
	for i := 2; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' && s[i] != '_' {
			return "", bad
		}
	}
	return strings.ToLower(s), nil
}

// parseLabel validates the issue label. ":" is refused because asb
// derives state labels as "<label>:working"; 40 characters leaves room for
// that suffix under GitHub's 50-character limit.
func parseLabel(s string) (string, error) {
	if !matchCharset(s, 40, "._-", false) {
		return "", want("want up to 40 letters, digits, '.', '_' or '-' starting with a letter or digit, e.g. agent")
	}
	return s, nil
}

// parseModel validates a model alias such as claude-sonnet-4-5 or
// sonnet[1m]; it reaches the agent's argv, so the charset is closed.
func parseModel(s string) (string, error) {
	if !matchCharset(s, 128, "._:/@[]-", false) {
		return "", want("want a model name of letters, digits and . _ : / @ [ ] -, e.g. claude-sonnet-4-5")
	}
	return s, nil
}

// parseImageRef validates MSB_IMAGE / MSB_SNAPSHOT: an OCI reference, a
// snapshot name or a path on the host. A leading "-" would read as an msb
// flag, and the closed charset keeps the remote command line predictable.
func parseImageRef(s string) (string, error) {
	if !matchCharset(s, 255, "._/:@+-", true) || s[0] == '-' {
		return "", want("want an image reference or name of letters, digits and . _ / : @ + -, e.g. node:22 or ghcr.io/org/image:tag")
	}
	return s, nil
}

// parseCommand validates a program to run on a host or in a box: a bare
// name looked up on PATH, or an absolute path. No arguments and no "~":
// the value becomes argv[0], and "~" is not expanded there.
func parseCommand(s string) (string, error) {
	bad := want("want a program name or an absolute path (letters, digits and . _ / + -, no spaces or ~), e.g. claude or /usr/local/bin/claude")
	if s == "" || s[0] == '-' || (strings.Contains(s, "/") && s[0] != '/') {
		return "", bad
	}
	if !matchCharset(s, 4096, "._/+-", true) {
		return "", bad
	}
	return s, nil
}

// parseLocalPath validates a path on the controller. "~/" is expanded
// with HOME because .env files are not run through a shell.
func parseLocalPath(s, home string) (string, error) {
	if len(s) > 4096 {
		return "", want("want a path of at most 4096 bytes")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return "", want("want a path without control characters")
		}
	}
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return "", want("want an absolute path: ~ cannot be expanded because HOME is not set")
		}
		return home + s[1:], nil
	case strings.HasPrefix(s, "~"):
		return "", want("want a path; only ~/ (the current user's home) is expanded")
	}
	return s, nil
}

// parseToken validates a credential's shape without ever echoing it: no
// whitespace or control characters (almost always a copy-paste accident
// that would only surface later as a confusing 401), and a length cap.
func parseToken(s string, minLen int) (string, error) {
	if len(s) < minLen {
		return "", want("want at least %d characters (generate one with: openssl rand -hex 32)", minLen)
	}
	if len(s) > 4096 {
		return "", want("want at most 4096 characters")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return "", want("want no spaces or control characters")
		}
	}
	return s, nil
}

// DecodeKey decodes an AES-256 key written as 64 hex digits or as base64
// (standard or URL alphabet, padded or not) of 32 bytes. It is exported so
// that the key file in the data directory is read with the same rules as
// SECRETS_KEY. The error never contains the input.
func DecodeKey(s string) ([]byte, error) { return seal.ParseKey(s) }

// matchCharset reports whether s is 1..max bytes of letters, digits and
// the given punctuation, starting with a letter or digit (or, with
// anyStart, any allowed byte).
func matchCharset(s string, max int, punct string, anyStart bool) bool {
	if s == "" || len(s) > max {
		return false
	}
	if !anyStart && !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && strings.IndexByte(punct, s[i]) < 0 {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool  { return isLetter(c) || '0' <= c && c <= '9' }
