package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// validateName applies packages/microsandbox-types validation.rs: 1–128
// bytes, an ASCII alphanumeric first, then [A-Za-z0-9._-].
func validateName(name string) error {
	bad := fmt.Errorf("invalid config: sandbox name must start with an alphanumeric and contain only alphanumeric, dots, hyphens, and underscores: %s", name)
	if name == "" {
		return fmt.Errorf("invalid config: sandbox name must not be empty")
	}
	if len(name) > 128 {
		return fmt.Errorf("invalid config: sandbox name must be at most 128 bytes: %s", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return bad
		}
		if !alnum && c != '.' && c != '-' && c != '_' {
			return bad
		}
	}
	return nil
}

// generateName mimics ui::generate_name: msb-%08x.
func generateName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "msb-" + hex.EncodeToString(b[:])
}

// parseSizeMiB mimics ui::parse_size_mib: `512M`/`512m`, `1G`/`1.5G`/`1g`,
// a bare number is MiB. No MiB/GiB/Gi suffixes.
func parseSizeMiB(s string) (int, error) {
	bad := fmt.Errorf("invalid size '%s': expected a number of MiB or a value with an M or G suffix (e.g. 512M, 1G)", s)
	num, mult := s, 1.0
	switch {
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		num = s[:len(s)-1]
	case strings.HasSuffix(s, "G") || strings.HasSuffix(s, "g"):
		num, mult = s[:len(s)-1], 1024
	}
	if num == "" || strings.ContainsAny(num, "+-eE") {
		return 0, bad
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, bad
	}
	mib := v * mult
	if mib < 1 || mib > math.MaxInt32 {
		return 0, fmt.Errorf("invalid size '%s': must be at least 1 MiB", s)
	}
	return int(mib), nil
}

// parseDurationSecs mimics parse_duration_secs: `Ns`, `Nm`, `Nh` or bare
// seconds with an integer N. Errors surface as Rust's ParseIntError text.
func parseDurationSecs(s string) (uint64, error) {
	num, mult := s, uint64(1)
	switch {
	case strings.HasSuffix(s, "s"):
		num = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		num, mult = s[:len(s)-1], 60
	case strings.HasSuffix(s, "h"):
		num, mult = s[:len(s)-1], 3600
	}
	v, err := parseRustUint(num, 64)
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint64/mult {
		return 0, fmt.Errorf("number too large to fit in target type")
	}
	return v * mult, nil
}

// parseRustUint parses an unsigned integer and reports failures with the
// Display text of Rust's ParseIntError, which is what msb prints.
func parseRustUint(s string, bits int) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("cannot parse integer from empty string")
	}
	digits := strings.TrimPrefix(s, "+")
	if digits == "" {
		return 0, fmt.Errorf("invalid digit found in string")
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid digit found in string")
		}
	}
	v, err := strconv.ParseUint(digits, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("number too large to fit in target type")
	}
	return v, nil
}

// parseEnvFlag handles `-e KEY=VALUE` and `-e KEY` (copied from our env).
func parseEnvFlag(spec string) (EnvVar, error) {
	key, val, hasVal := strings.Cut(spec, "=")
	if key == "" {
		return EnvVar{}, fmt.Errorf("invalid environment variable '%s': expected KEY=VALUE or KEY", spec)
	}
	if strings.HasPrefix(key, "MSB_") {
		return EnvVar{}, fmt.Errorf("invalid config: environment variable %q uses the reserved MSB_ prefix", key)
	}
	if !hasVal {
		v, ok := os.LookupEnv(key)
		if !ok {
			return EnvVar{}, fmt.Errorf("environment variable '%s' not set", key)
		}
		val = v
	}
	return EnvVar{Key: key, Value: val}, nil
}

// parsePullPolicy mimics parse_pull_policy.
func parsePullPolicy(s string) (string, error) {
	switch s {
	case "always", "if-missing", "never":
		return s, nil
	}
	return "", fmt.Errorf("invalid pull policy: %s (expected: always, if-missing, never)", s)
}

// isLocalPath reports whether an IMAGE or volume SOURCE names a host path.
func isLocalPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

// normalizeImageRef turns `alpine` into `docker.io/library/alpine:latest`
// the way OCI reference parsing does, so the pull cache matches `alpine`,
// `alpine:latest` and `docker.io/library/alpine` alike.
func normalizeImageRef(ref string) (string, error) {
	bad := fmt.Errorf("image error: invalid image reference: %s", ref)
	if ref == "" || strings.ContainsAny(ref, " \t\n") {
		return "", bad
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !validDigest(digest) {
		return "", bad
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
		if !validTag(tag) {
			return "", bad
		}
	}
	parts := strings.Split(name, "/")
	registry := "docker.io"
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		registry, parts = parts[0], parts[1:]
	}
	if registry == "docker.io" && len(parts) == 1 {
		parts = append([]string{"library"}, parts...)
	}
	for _, p := range parts {
		if !validRepoComponent(p) {
			return "", bad
		}
	}
	out := registry + "/" + strings.Join(parts, "/")
	if tag == "" && !hasDigest {
		tag = "latest"
	}
	if tag != "" {
		out += ":" + tag
	}
	if hasDigest {
		out += "@" + digest
	}
	return out, nil
}

func validRepoComponent(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	first, last := p[0], p[len(p)-1]
	return first != '.' && first != '-' && first != '_' && last != '.' && last != '-' && last != '_'
}

func validTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validDigest(d string) bool {
	algo, hexPart, ok := strings.Cut(d, ":")
	if !ok || algo == "" || len(hexPart) < 32 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// Mount is a -v/--volume (or --mount-*) entry.
type Mount struct {
	Kind     string   `json:"kind"` // bind | named
	Source   string   `json:"source"`
	Dest     string   `json:"dest"`
	ReadOnly bool     `json:"readonly"`
	Options  []string `json:"options"`
}

var volumeOptionNames = map[string]bool{"ro": true, "rw": true, "noexec": true, "nosuid": true, "nodev": true, "follow-root-symlinks": true}

// parseVolume parses SOURCE:DEST[:OPTIONS]; the separator is the first `:`
// followed by `/`.
func parseVolume(spec string) (Mount, error) {
	i := strings.Index(spec, ":/")
	if i <= 0 {
		return Mount{}, fmt.Errorf("invalid volume '%s': expected SOURCE:DEST[:OPTIONS] with an absolute DEST", spec)
	}
	src, rest := spec[:i], spec[i+1:]
	dest, opts, _ := strings.Cut(rest, ":")
	if strings.Contains(dest, ",") {
		d, o, _ := strings.Cut(dest, ",")
		return Mount{}, fmt.Errorf("invalid volume '%s': options follow a colon; did you mean '%s:%s:%s'?", spec, src, d, o)
	}
	m := Mount{Kind: "named", Source: src, Dest: filepath.Clean(dest), Options: []string{}}
	if err := m.applyOptions(spec, opts); err != nil {
		return Mount{}, err
	}
	if isLocalPath(src) {
		abs, err := filepath.Abs(src)
		if err != nil {
			return Mount{}, fmt.Errorf("invalid volume '%s': %w", spec, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return Mount{}, fmt.Errorf("volume source does not exist: %s", src)
		}
		m.Kind, m.Source = "bind", abs
		return m, nil
	}
	if err := validateName(src); err != nil {
		return Mount{}, fmt.Errorf("invalid volume name '%s'", src)
	}
	return m, nil
}

func (m *Mount) applyOptions(spec, opts string) error {
	if opts == "" {
		return nil
	}
	for _, o := range strings.Split(opts, ",") {
		key, val, hasVal := strings.Cut(o, "=")
		switch {
		case !hasVal && volumeOptionNames[key]:
			if key == "ro" || key == "rw" {
				m.ReadOnly = key == "ro"
			}
		case key == "stat-virt" && (val == "strict" || val == "relaxed" || val == "off"):
		case key == "host-perms" && (val == "private" || val == "mirror"):
		case key == "quota":
			if _, err := parseSizeMiB(val); err != nil {
				return fmt.Errorf("invalid volume '%s': %w", spec, err)
			}
		default:
			return fmt.Errorf("invalid volume '%s': unknown option '%s'", spec, o)
		}
		m.Options = append(m.Options, o)
	}
	return nil
}

// Port is a published port (-p).
type Port struct {
	Bind     string `json:"bind"`
	Host     int    `json:"host"`
	Guest    int    `json:"guest"`
	Protocol string `json:"protocol"`
}

// String renders the ps form `127.0.0.1:8080->80/tcp`.
func (p Port) String() string {
	bind := p.Bind
	if strings.Contains(bind, ":") {
		bind = "[" + bind + "]"
	}
	return fmt.Sprintf("%s:%d->%d/%s", bind, p.Host, p.Guest, p.Protocol)
}

// parsePort parses HOST:GUEST, BIND:HOST:GUEST or [v6]:HOST:GUEST with an
// optional /tcp or /udp.
func parsePort(spec string) (Port, error) {
	bad := fmt.Errorf("invalid port mapping '%s': expected [BIND:]HOST:GUEST[/tcp|/udp]", spec)
	body, proto, hasProto := strings.Cut(spec, "/")
	p := Port{Bind: "127.0.0.1", Protocol: "tcp"}
	if hasProto {
		if proto != "tcp" && proto != "udp" {
			return Port{}, bad
		}
		p.Protocol = proto
	}
	if strings.HasPrefix(body, "[") {
		end := strings.Index(body, "]:")
		if end < 0 {
			return Port{}, bad
		}
		p.Bind, body = body[1:end], body[end+2:]
		if !isIPv6(p.Bind) {
			return Port{}, bad
		}
	} else if strings.Count(body, ":") == 2 {
		var bind string
		bind, body, _ = strings.Cut(body, ":")
		if !isIPv4(bind) {
			return Port{}, bad
		}
		p.Bind = bind
	}
	h, g, ok := strings.Cut(body, ":")
	if !ok {
		return Port{}, bad
	}
	var err1, err2 error
	p.Host, err1 = parsePortNumber(h)
	p.Guest, err2 = parsePortNumber(g)
	if err1 != nil || err2 != nil {
		return Port{}, bad
	}
	return p, nil
}

func parsePortNumber(s string) (int, error) {
	v, err := parseRustUint(s, 16)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	return int(v), nil
}

// parseRlimit validates RES=N or RES=SOFT:HARD.
func parseRlimit(spec string) error {
	res, val, ok := strings.Cut(spec, "=")
	known := map[string]bool{"as": true, "core": true, "cpu": true, "data": true, "fsize": true, "locks": true,
		"memlock": true, "msgqueue": true, "nice": true, "nofile": true, "nproc": true, "rss": true,
		"rtprio": true, "rttime": true, "sigpending": true, "stack": true}
	if !ok || !known[strings.ToLower(res)] {
		return fmt.Errorf("invalid rlimit '%s': expected RESOURCE=LIMIT or RESOURCE=SOFT:HARD", spec)
	}
	soft, hard, two := strings.Cut(val, ":")
	if _, err := parseRustUint(soft, 64); err != nil {
		return err
	}
	if two {
		if _, err := parseRustUint(hard, 64); err != nil {
			return err
		}
	}
	return nil
}
