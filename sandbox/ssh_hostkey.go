package sandbox

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/asb-dev/asb/app"
)

// hostKeys is what one dial needs from known_hosts.
type hostKeys struct {
	callback ssh.HostKeyCallback
	// algorithms restricts the host key types the server may offer to the
	// ones known_hosts lists for this host. Without it the server picks its
	// preferred type (often ed25519); if known_hosts only holds, say, its
	// RSA key, knownhosts reports a "mismatch" for a perfectly good host.
	// Nil when the host is unknown: any type may be shown, only to be
	// refused with its fingerprint in the message.
	algorithms []string
}

// loadHostKeys reads known_hosts afresh. It runs on every dial so that an
// operator who fixes the file after a refusal needs no restart.
func loadHostKeys(file, addr string) (hostKeys, error) {
	cb, err := knownhosts.New(file)
	if errors.Is(err, fs.ErrNotExist) {
		// A missing file is the "unknown host" case: the dial goes ahead so
		// the refusal can show the fingerprint to verify, and the fix
		// (ssh-keyscan >> FILE) creates the file.
		return hostKeys{callback: func(string, net.Addr, ssh.PublicKey) error {
			return &knownhosts.KeyError{}
		}}, nil
	}
	if err != nil {
		return hostKeys{}, app.WrapError(app.EUNAVAILABLE, err,
			"The SSH known_hosts file %s cannot be read or parsed.", file)
	}
	return hostKeys{callback: cb, algorithms: knownAlgorithms(cb, addr)}, nil
}

// probeKey is a key no host has (all-zero ed25519 bytes). Checking it
// against known_hosts always fails, and the *knownhosts.KeyError lists
// every key the file holds for the host: the only way the package exposes
// them.
var probeKey, _ = ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))

// knownAlgorithms returns the host key algorithms to offer for addr, most
// preferred first, or nil if known_hosts has no plain key for it.
func knownAlgorithms(cb ssh.HostKeyCallback, addr string) []string {
	// The remote address is irrelevant: knownhosts prefers the hostname.
	err := cb(addr, &net.TCPAddr{IP: net.IPv4zero}, probeKey)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, k := range ke.Want {
		have[k.Key.Type()] = true
	}
	// Key types and the signature algorithms that prove each; RSA keys
	// sign with SHA-2 on any server of the last decade, ssh-rsa (SHA-1)
	// stays last for very old ones.
	order := []struct {
		keyType string
		algos   []string
	}{
		{ssh.KeyAlgoED25519, []string{ssh.KeyAlgoED25519}},
		{ssh.KeyAlgoSKED25519, []string{ssh.KeyAlgoSKED25519}},
		{ssh.KeyAlgoECDSA256, []string{ssh.KeyAlgoECDSA256}},
		{ssh.KeyAlgoECDSA384, []string{ssh.KeyAlgoECDSA384}},
		{ssh.KeyAlgoECDSA521, []string{ssh.KeyAlgoECDSA521}},
		{ssh.KeyAlgoSKECDSA256, []string{ssh.KeyAlgoSKECDSA256}},
		{ssh.KeyAlgoRSA, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}},
	}
	var algos []string
	for _, o := range order {
		if have[o.keyType] {
			algos = append(algos, o.algos...)
		}
	}
	return algos
}

// hostKeyError turns a failed known_hosts check into the caller-facing
// error: which host, what it presented, and the exact commands that fix it.
// Unknown and changed keys are told apart because the right response
// differs: an unknown host needs adding, a changed key needs an
// investigation before anything is replaced.
func hostKeyError(err error, file, addr string, presented ssh.PublicKey) error {
	host, port, _ := net.SplitHostPort(addr)
	fp, kind, keyFile := "an unknown key", "unknown", "*"
	if presented != nil {
		fp = ssh.FingerprintSHA256(presented)
		kind = strings.TrimPrefix(presented.Type(), "ssh-")
		keyFile, _, _ = strings.Cut(kind, "-") // ecdsa-sha2-nistp256 -> ecdsa, as in /etc/ssh
	}
	qfile := ShellQuote([]string{file})
	scan := "ssh-keyscan"
	if port != "22" {
		scan += " -p " + port
	}
	if presented != nil {
		// Ask for the very type that was presented so the appended line is
		// the key that was shown, not whatever else the host has.
		scan += " -t " + presented.Type()
	}
	scan += " " + host + " >> " + qfile

	var revoked *knownhosts.RevokedError
	if errors.As(err, &revoked) {
		return app.WrapError(app.EUNAVAILABLE, err,
			"SSH host %s presented a host key (%s) that %s line %d marks @revoked; asb refuses to connect. "+
				"Give the host a new key, then replace its entry in %s.",
			addr, fp, revoked.Revoked.Filename, revoked.Revoked.Line, file)
	}
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return app.WrapError(app.EUNAVAILABLE, err, "SSH host %s failed the host key check.", addr)
	}
	if len(ke.Want) == 0 {
		return app.WrapError(app.EUNAVAILABLE, err,
			"SSH host %s is not in the known_hosts file %s, so asb refuses to connect. "+
				"It presents the %s host key %s. Check that fingerprint on the host itself "+
				"(ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then add the key with: %s",
			addr, file, kind, fp, keyFile, scan)
	}
	knownHost := knownhosts.Normalize(addr)
	var where []string
	for _, w := range ke.Want {
		where = append(where, fmt.Sprintf("%s line %d", w.Filename, w.Line))
	}
	return app.WrapError(app.EUNAVAILABLE, err,
		"SSH host key for %s does not match the known_hosts file (%s): the host was reinstalled or re-keyed, "+
			"or someone is intercepting the connection. asb refuses to connect. It now presents the %s host key %s. "+
			"Only if the host's administrator confirms that fingerprint, remove the stale entry with "+
			"`ssh-keygen -R %s -f %s` and add the new key with `%s`.",
		addr, strings.Join(where, ", "), kind, fp, ShellQuote([]string{knownHost}), qfile, scan)
}

// splitAddr adds the default SSH port when addr has none.
func splitAddr(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.Contains(ae.Err, "missing port") {
			return strings.Trim(addr, "[]"), 22, nil
		}
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("invalid port %q", p)
	}
	return h, n, nil
}
