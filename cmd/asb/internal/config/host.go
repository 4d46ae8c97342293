package config

import (
	"net"
	"strings"
)

// Host kinds.
const (
	HostLocal = "local"
	HostSSH   = "ssh"
)

// Host is one machine that runs msb.
type Host struct {
	Kind string // HostLocal or HostSSH
	User string // ssh only
	Addr string // ssh only: host:port, port defaulting to 22
	Raw  string // the entry as written, for messages
}

// String is the canonical form, stable across spellings of the same host,
// so it can name the host in logs, metrics and the database.
func (h Host) String() string {
	if h.Kind == HostLocal {
		return HostLocal
	}
	return "ssh://" + h.User + "@" + h.Addr
}

const wantHost = "want local or ssh://user@host[:port], e.g. ssh://root@203.0.113.7 or ssh://deploy@vps.example.com:2222"

// parseHost parses one SANDBOX_HOSTS entry. With bare set (VPS_SSH), the
// scheme may be left out, as the first version's user@host form had it.
// The value ends up as an SSH target, so anything outside a closed
// charset is refused outright: no shell metacharacters, no spaces, no
// ssh options smuggled in as "-oProxyCommand=…".
func parseHost(s string, bare bool) (Host, error) {
	if strings.EqualFold(s, HostLocal) {
		return Host{Kind: HostLocal, Raw: s}, nil
	}
	rest, hasScheme := cutPrefixFold(s, "ssh://")
	if !hasScheme && !bare {
		if strings.Contains(s, "://") {
			return Host{}, want("want an ssh:// URL or local; other schemes are not supported")
		}
		return Host{}, want(wantHost + " (the ssh:// prefix is required here)")
	}
	userPart, hostPort, found := strings.Cut(rest, "@")
	if !found || userPart == "" {
		return Host{}, want(wantHost + " (the user is required)")
	}
	if u, _, hasPass := strings.Cut(userPart, ":"); hasPass {
		shown := "ssh://" + u + ":xxxxx@" + hostPort
		return Host{}, wantRedacted(shown, "want no password in the host entry; asb authenticates with SSH_KEY_FILE")
	}
	if !matchCharset(s, 300, "._@:[]/-", true) {
		return Host{}, want(wantHost + " (only letters, digits and . _ - @ : [ ] are allowed)")
	}
	if !validUser(userPart) {
		return Host{}, want(wantHost + " (the user must be letters, digits, _ . - and start with a letter or _)")
	}
	if strings.ContainsAny(hostPort, "/@") {
		return Host{}, want(wantHost + " (no path after the host)")
	}
	host, port, err := splitHostPortDefault(hostPort, "22")
	if err != nil {
		return Host{}, want(wantHost + " (bad host or port)")
	}
	if _, err := parsePort(port, 1); err != nil {
		return Host{}, want(wantHost + " (the port must be 1 to 65535)")
	}
	if !validHost(host) {
		return Host{}, want(wantHost + " (bad host name)")
	}
	return Host{Kind: HostSSH, User: userPart, Addr: net.JoinHostPort(host, port), Raw: s}, nil
}

// splitHostPortDefault splits "host", "host:port", "[v6]" or "[v6]:port".
// An unbracketed IPv6 address is refused: its last group reads as a port.
func splitHostPortDefault(s, defPort string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		h := s[1 : len(s)-1]
		if net.ParseIP(h) == nil || !strings.Contains(h, ":") {
			return "", "", want("bad IPv6 address")
		}
		return h, defPort, nil
	}
	if !strings.Contains(s, ":") {
		if strings.ContainsAny(s, "[]") {
			return "", "", want("bad host")
		}
		return s, defPort, nil
	}
	host, port, err = net.SplitHostPort(s)
	if err != nil {
		return "", "", err
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", "", want("bad host")
	}
	return host, port, nil
}

// validUser accepts POSIX-portable login names.
func validUser(s string) bool {
	if s == "" || len(s) > 32 || !(isLetter(s[0]) || s[0] == '_') {
		return false
	}
	return matchCharset(s, 32, "._-", true)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
