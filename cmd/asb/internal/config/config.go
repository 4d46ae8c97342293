// Package config turns asb's environment variables (and an optional .env
// file) into typed, validated settings. It is the only place that reads
// them: cmd/asb calls Load once and hands the parts to constructors.
//
// Every variable is listed in Vars, documented in docs/configuration.md and
// shown in .env.example; the tests keep the three in step.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is asb's whole configuration.
type Config struct {
	Addr      string // listen address, host:port
	PublicURL string // no trailing slash
	DataDir   string
	LogFormat string // "text" or "json"
	LogLevel  string // "debug", "info", "warn" or "error"
	// TrustProxy lets X-Forwarded-* from a reverse proxy name the client.
	TrustProxy bool
	// WorkspaceDir is the stdio MCP entry's local working tree (absolute).
	WorkspaceDir string
	// WorkspaceMaxBytes caps one uploaded working tree.
	WorkspaceMaxBytes int64

	OperatorToken Secret // MCP_HTTP_TOKEN; empty means generate one
	SecretsKey    Secret // SECRETS_KEY; empty means <DataDir>/secrets.key

	Sandbox SandboxConfig
	Agent   AgentConfig
	GitHub  GitHubConfig
	Auth    AuthConfig

	// Warnings are non-fatal findings (legacy or obsolete variables,
	// settings that have no effect) for the start-up log.
	Warnings []string

	publicURLDerived bool
}

// SandboxConfig configures the msb hosts and the boxes on them.
type SandboxConfig struct {
	Hosts []Host
	// Drain lists hosts (canonical names) that take no new boxes.
	Drain         []string
	SSHKeyFile    string
	SSHKnownHosts string
	MSBPath       string
	Image         string
	Snapshot      string
	MemoryMiB     int
	IdleTimeout   time.Duration // whole seconds
	MaxDuration   time.Duration // whole seconds
	MaxBoxes      int           // session boxes per host
	PoolSize      int           // warm boxes per host
	// EgressDomains are lower-cased, de-duplicated, in the order given.
	EgressDomains  []string
	EgressAllowAll bool
}

// AgentConfig configures the coding agent inside a box.
type AgentConfig struct {
	Command          string
	AnthropicBaseURL string // no trailing slash; empty means the agent's default
	AnthropicAPIKey  Secret
	Model            string
	AskModel         string // already defaulted to Model
	WaitTimeout      time.Duration
	AskTimeout       time.Duration
	NPMToken         Secret
}

// GitHubConfig configures the GitHub App, webhook and poller.
type GitHubConfig struct {
	AppID          int64 // 0: not configured by env
	PrivateKeyFile string
	WebhookSecret  Secret
	APIURL         string // ends in "/"
	WebURL         string // ends in "/"
	Trigger        string // lower case, e.g. "/agent"
	Label          string
	// PollInterval is the effective poller period; 0 means the poller is
	// off. Unset, it is 60s without a webhook secret and off with one.
	PollInterval      time.Duration
	OAuthClientID     string
	OAuthClientSecret Secret
	// AllowedLogins may trigger runs in addition to people with write
	// access. Lower case.
	AllowedLogins []string
}

// AuthConfig configures accounts. Most of it matters only in saas mode.
type AuthConfig struct {
	Mode               string // "single" or "saas"
	Signup             string // "open", or "" for invite-only
	AdminGitHubLogins  []string
	UserMaxBoxes       int
	TrialDays          int // 0: no trial clock
	BillingURL         string
	MutationsPerMinute int
}

// Auth modes.
const (
	ModeSingle = "single"
	ModeSaaS   = "saas"
)

// Defaults that are not plain strings in the Vars table.
const (
	DefaultPollInterval = 60 * time.Second
	maxValueLen         = 8192
)

// VarError reports one variable (or one entry of a list variable) with a
// bad value. Value is empty when it is hidden (a secret) and may be a
// redacted form of the input (a URL with its password removed).
type VarError struct {
	Var    string
	Value  string
	Hidden bool // the value is not shown at all
	Entry  bool // Value is one entry of a list
	Want   string
}

func (e *VarError) Error() string {
	switch {
	case e.Hidden:
		return fmt.Sprintf("%s (value hidden): %s", e.Var, e.Want)
	case e.Value == "" && !e.Entry:
		return fmt.Sprintf("%s is not set: %s", e.Var, e.Want)
	case e.Entry:
		return fmt.Sprintf("%s entry %s: %s", e.Var, quoteValue(e.Value), e.Want)
	default:
		return fmt.Sprintf("%s=%s: %s", e.Var, quoteValue(e.Value), e.Want)
	}
}

// quoteValue quotes a bad value for an error message, cut short so a
// pasted file does not flood the log.
func quoteValue(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// Load reads the .env file at dotenvPath (a missing file is fine; "" skips
// it), then environ (KEY=VALUE entries as from os.Environ), which wins over
// the file. A variable set to the empty string counts as unset, and still
// overrides the file. It validates everything and returns every problem at
// once, joined; each names the variable, the bad value unless it is secret,
// and what is accepted. Unknown variables are ignored.
//
// Load does not touch the process environment: values from .env reach only
// asb, never child processes.
func Load(environ []string, dotenvPath string) (*Config, error) {
	vals := make(map[string]string)
	var errs []error
	if dotenvPath != "" {
		fileVals, fileErrs := readDotenv(dotenvPath)
		errs = append(errs, fileErrs...)
		maps.Copy(vals, fileVals)
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			vals[k] = v
		}
	}
	l := &loader{vals: vals, read: make(map[string]bool)}
	cfg := l.load()
	errs = append(errs, l.errs...)
	if len(errs) > 0 {
		// Each line already names its variable or file; callers add
		// their own context.
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// loader collects errors and warnings while reading variables.
type loader struct {
	vals     map[string]string
	errs     []error
	warnings []string
	read     map[string]bool // which documented names were looked at; tests check it
}

// get returns a variable's trimmed value ("" when unset). It panics on a
// name missing from the Vars table: that is a bug the tests catch, and it
// keeps the documentation complete.
func (l *loader) get(name string) string {
	if _, ok := varIndex[name]; !ok {
		panic("config: " + name + " is read but not declared in vars")
	}
	first := !l.read[name]
	l.read[name] = true
	v := strings.TrimSpace(l.vals[name])
	if len(v) > maxValueLen {
		if first { // some names are read twice; report once
			l.fail(name, v, want("want at most %d bytes", maxValueLen))
		}
		return ""
	}
	return v
}

// fail records that name's value raw is bad; err says what is wanted.
func (l *loader) fail(name, raw string, err error) {
	ve := &VarError{Var: name, Value: raw, Want: err.Error()}
	var bv *badValue
	if errors.As(err, &bv) && bv.redacted {
		ve.Value = bv.shown
	}
	if varIndex[name].Secret && raw != "" {
		ve.Value, ve.Hidden = "", true
	}
	l.errs = append(l.errs, ve)
}

func (l *loader) failEntry(name, entry string, err error) {
	l.fail(name, entry, err)
	if ve, ok := l.errs[len(l.errs)-1].(*VarError); ok && !ve.Hidden {
		ve.Entry = true
	}
}

func (l *loader) warn(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// str reads name through parse, falling back to def when unset.
func (l *loader) str(name, def string, parse func(string) (string, error)) string {
	v := l.get(name)
	if v == "" {
		return def
	}
	out, err := parse(v)
	if err != nil {
		l.fail(name, v, err)
		return def
	}
	return out
}

func (l *loader) enum(name, def string, allowed ...string) string {
	return l.str(name, def, func(s string) (string, error) {
		if low := strings.ToLower(s); slices.Contains(allowed, low) {
			return low, nil
		}
		return "", want("want one of: %s", strings.Join(allowed, ", "))
	})
}

func (l *loader) integer(name string, def, lo, hi int64) int64 {
	v := l.get(name)
	if v == "" {
		return def
	}
	n, err := parseInt(v, lo, hi)
	if err != nil {
		l.fail(name, v, err)
		return def
	}
	return n
}

func (l *loader) boolean(name string, def bool) bool {
	v := l.get(name)
	if v == "" {
		return def
	}
	b, err := parseBool(v)
	if err != nil {
		l.fail(name, v, err)
		return def
	}
	return b
}

func (l *loader) duration(name string, def, lo, hi time.Duration) time.Duration {
	v := l.get(name)
	if v == "" {
		return def
	}
	d, err := parseDuration(v, lo, hi)
	if err != nil {
		l.fail(name, v, err)
		return def
	}
	return d
}

func (l *loader) millis(name string, def, lo, hi time.Duration) time.Duration {
	v := l.get(name)
	if v == "" {
		return def
	}
	d, err := parseMillis(v, lo, hi)
	if err != nil {
		l.fail(name, v, err)
		return def
	}
	return d
}

func (l *loader) secret(name string, minLen int) Secret {
	v := l.get(name)
	if v == "" {
		return ""
	}
	if _, err := parseToken(v, minLen); err != nil {
		l.fail(name, v, err)
		return ""
	}
	return Secret(v)
}

// list splits on commas and whitespace, validates each entry and drops
// duplicates (after normalisation), keeping the first occurrence's order.
func (l *loader) list(name string, max int, parse func(string) (string, error)) []string {
	v := l.get(name)
	if v == "" {
		return nil
	}
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) > max {
		l.fail(name, v, want("want at most %d entries", max))
		return nil
	}
	var out []string
	for _, f := range fields {
		p, err := parse(f)
		if err != nil {
			l.failEntry(name, f, err)
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// path reads a controller-side path, expanding "~/" with HOME.
func (l *loader) path(name, def string) string {
	home := strings.TrimSpace(l.vals["HOME"])
	v := l.get(name)
	if v == "" {
		v = def
		if v == "" {
			return ""
		}
		if strings.HasPrefix(v, "~") && home == "" {
			// A default under ~ without HOME: leave it unset rather
			// than fail; Unconfigured says what to do if it matters.
			return ""
		}
	}
	p, err := parseLocalPath(v, home)
	if err != nil {
		l.fail(name, v, err)
		return ""
	}
	return p
}

func (l *loader) load() *Config {
	c := &Config{}
	l.loadServer(c)
	l.loadAuth(c)
	l.loadSandbox(c)
	l.loadAgent(c)
	l.loadGitHub(c)
	l.loadMultiUser(c)
	for _, name := range slices.Sorted(maps.Keys(obsoleteVars)) {
		if strings.TrimSpace(l.vals[name]) != "" {
			l.warn("%s is set but no longer used: %s", name, obsoleteVars[name])
		}
	}
	c.Warnings = l.warnings
	return c
}

func (l *loader) loadServer(c *Config) {
	c.Addr = l.listenAddr()
	c.PublicURL = l.str("ASB_PUBLIC_URL", "", parsePrefixURL)
	if c.PublicURL == "" {
		c.PublicURL, c.publicURLDerived = derivePublicURL(c.Addr), true
	}
	c.DataDir = l.path("ASB_DATA_DIR", def("ASB_DATA_DIR"))
	if c.DataDir == "" {
		c.DataDir = def("ASB_DATA_DIR")
	}
	c.TrustProxy = l.boolean("ASB_TRUST_PROXY", false)
	c.LogFormat = l.enum("LOG_FORMAT", "text", "text", "json")
	c.LogLevel = l.enum("LOG_LEVEL", "info", "debug", "info", "warn", "error")
	c.WorkspaceDir = l.str("WORKSPACE_DIR", "", func(s string) (string, error) {
		p, err := parseLocalPath(s, strings.TrimSpace(l.vals["HOME"]))
		if err == nil && !strings.HasPrefix(p, "/") {
			return "", want("want an absolute path (is ${workspaceFolder} left unexpanded by the IDE?)")
		}
		return p, err
	})
	c.WorkspaceMaxBytes = l.integer("WORKSPACE_MAX_BYTES", 100<<20, 1<<20, 10<<30)
}

// listenAddr reads ASB_ADDR, or builds it from the first version's
// MCP_HTTP_HOST/MCP_HTTP_PORT so an old .env binds where it used to.
func (l *loader) listenAddr() string {
	addr := l.str("ASB_ADDR", "", parseListenAddr)
	legacyHost, legacyPort := l.get("MCP_HTTP_HOST"), l.get("MCP_HTTP_PORT")
	if strings.TrimSpace(l.vals["ASB_ADDR"]) != "" {
		if legacyHost != "" || legacyPort != "" {
			l.warn("MCP_HTTP_HOST/MCP_HTTP_PORT are ignored because ASB_ADDR is set")
		}
		if addr == "" { // invalid; already reported
			return def("ASB_ADDR")
		}
		return addr
	}
	if legacyHost == "" && legacyPort == "" {
		return def("ASB_ADDR")
	}
	host, port := "127.0.0.1", "8787"
	if legacyHost != "" {
		if validHost(legacyHost) {
			host = legacyHost
		} else {
			l.fail("MCP_HTTP_HOST", legacyHost, want("want a host name or IP address, e.g. 127.0.0.1 or 0.0.0.0"))
		}
	}
	if legacyPort != "" {
		if _, err := parsePort(legacyPort, 1); err == nil {
			port = legacyPort
		} else {
			l.fail("MCP_HTTP_PORT", legacyPort, err)
		}
	}
	l.warn("MCP_HTTP_HOST/MCP_HTTP_PORT are old names; set ASB_ADDR=%s instead", net.JoinHostPort(host, port))
	return net.JoinHostPort(host, port)
}

// derivePublicURL turns a listen address into a URL someone can open: a
// wildcard bind is reached through loopback from the same machine.
func derivePublicURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func (l *loader) loadAuth(c *Config) {
	c.OperatorToken = l.secret("MCP_HTTP_TOKEN", 16)
	if v := l.get("SECRETS_KEY"); v != "" {
		if _, err := DecodeKey(v); err != nil {
			l.fail("SECRETS_KEY", v, err)
		} else {
			c.SecretsKey = Secret(v)
		}
	}
	c.Auth.MutationsPerMinute = int(l.integer("MUTATIONS_PER_MINUTE", 60, 1, 100000))
}

func (l *loader) loadSandbox(c *Config) {
	s := &c.Sandbox
	s.Hosts = l.hosts()
	s.Drain = l.drain(s.Hosts)
	s.SSHKeyFile = l.path("SSH_KEY_FILE", def("SSH_KEY_FILE"))
	s.SSHKnownHosts = l.path("SSH_KNOWN_HOSTS", def("SSH_KNOWN_HOSTS"))

	s.MSBPath = l.str("MSB_PATH", "", parseCommand)
	legacy := l.str("MSB", "", parseCommand)
	switch {
	case strings.TrimSpace(l.vals["MSB_PATH"]) != "":
	case legacy != "":
		s.MSBPath = legacy
		l.warn("MSB is an old name; set MSB_PATH=%s instead", legacy)
	}
	if s.MSBPath == "" {
		s.MSBPath = def("MSB_PATH")
	}

	s.Image = l.str("MSB_IMAGE", def("MSB_IMAGE"), parseImageRef)
	s.Snapshot = l.str("MSB_SNAPSHOT", "", parseImageRef)
	s.MemoryMiB = 1024
	if v := l.get("MSB_MEMORY"); v != "" {
		if n, err := parseMemoryMiB(v); err != nil {
			l.fail("MSB_MEMORY", v, err)
		} else {
			s.MemoryMiB = n
		}
	}
	s.IdleTimeout = l.duration("MSB_IDLE_TIMEOUT", 15*time.Minute, 30*time.Second, 168*time.Hour)
	s.MaxDuration = l.duration("MSB_MAX_DURATION", time.Hour, time.Minute, 720*time.Hour)
	s.MaxBoxes = int(l.integer("MSB_MAX_BOXES", 5, 1, 1000))

	s.PoolSize = int(l.integer("POOL_SIZE", 1, 0, 100))
	legacyPool := l.get("MSB_POOL_SIZE")
	if strings.TrimSpace(l.vals["POOL_SIZE"]) == "" && legacyPool != "" {
		s.PoolSize = int(l.integer("MSB_POOL_SIZE", 1, 0, 100))
		l.warn("MSB_POOL_SIZE is an old name; set POOL_SIZE=%d instead", s.PoolSize)
	}

	s.EgressDomains = l.list("EGRESS_DOMAINS", 256, parseEgressDomain)
	s.EgressAllowAll = l.boolean("EGRESS_ALLOW_ALL", false)
}

// hosts reads SANDBOX_HOSTS, falling back to the first version's VPS_SSH.
func (l *loader) hosts() []Host {
	list, single := l.get("SANDBOX_HOSTS"), l.get("VPS_SSH")
	if list == "" {
		if single == "" {
			return nil
		}
		h, err := parseHost(single, true)
		if err != nil {
			l.fail("VPS_SSH", single, err)
			return nil
		}
		return []Host{h}
	}
	if single != "" {
		l.warn("VPS_SSH is ignored because SANDBOX_HOSTS is set")
	}
	var hosts []Host
	seen := make(map[string]bool)
	entries := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(entries) > 64 {
		l.fail("SANDBOX_HOSTS", list, want("want at most 64 hosts"))
		return nil
	}
	for _, e := range entries {
		h, err := parseHost(e, false)
		if err != nil {
			l.failEntry("SANDBOX_HOSTS", e, err)
			continue
		}
		if seen[h.String()] {
			l.failEntry("SANDBOX_HOSTS", e, want("want each host once (%s is listed twice)", h))
			continue
		}
		seen[h.String()] = true
		hosts = append(hosts, h)
	}
	return hosts
}

// drain reads SANDBOX_DRAIN: hosts of SANDBOX_HOSTS, by canonical name.
func (l *loader) drain(hosts []Host) []string {
	return l.list("SANDBOX_DRAIN", 64, func(e string) (string, error) {
		h, err := parseHost(e, false)
		if err != nil {
			return "", err
		}
		if !slices.ContainsFunc(hosts, func(c Host) bool { return c.String() == h.String() }) {
			return "", want("want a host listed in SANDBOX_HOSTS")
		}
		return h.String(), nil
	})
}

func (l *loader) loadAgent(c *Config) {
	a := &c.Agent
	a.Command = l.str("AGENT_COMMAND", def("AGENT_COMMAND"), parseCommand)
	a.AnthropicBaseURL = l.str("ANTHROPIC_BASE_URL", "", parsePrefixURL)
	a.AnthropicAPIKey = l.secret("ANTHROPIC_API_KEY", 1)
	a.Model = l.str("ANTHROPIC_MODEL", "", parseModel)
	a.AskModel = l.str("ASK_MODEL", a.Model, parseModel)
	a.WaitTimeout = l.millis("WAIT_TIMEOUT_MS", 50*time.Second, time.Second, 59999*time.Millisecond)
	a.AskTimeout = l.millis("ASK_TIMEOUT_MS", 45*time.Second, 5*time.Second, 10*time.Minute)
	a.NPMToken = l.secret("NPM_TOKEN", 1)
}

func (l *loader) loadGitHub(c *Config) {
	g := &c.GitHub
	g.AppID = l.integer("GITHUB_APP_ID", 0, 1, 1<<53)
	g.PrivateKeyFile = l.path("GITHUB_APP_PRIVATE_KEY_FILE", "")
	switch {
	case l.get("GITHUB_APP_ID") != "" && l.get("GITHUB_APP_PRIVATE_KEY_FILE") == "":
		l.fail("GITHUB_APP_PRIVATE_KEY_FILE", "", want("it is required when GITHUB_APP_ID is set"))
	case l.get("GITHUB_APP_ID") == "" && l.get("GITHUB_APP_PRIVATE_KEY_FILE") != "":
		l.fail("GITHUB_APP_ID", "", want("it is required when GITHUB_APP_PRIVATE_KEY_FILE is set"))
	}
	g.WebhookSecret = l.secret("GITHUB_WEBHOOK_SECRET", 1)
	g.APIURL = l.str("GITHUB_API_URL", def("GITHUB_API_URL"), parseBaseURL)
	g.WebURL = l.str("GITHUB_WEB_URL", def("GITHUB_WEB_URL"), parseBaseURL)
	g.Trigger = l.str("AGENT_TRIGGER", def("AGENT_TRIGGER"), parseTrigger)
	g.Label = l.str("AGENT_LABEL", def("AGENT_LABEL"), parseLabel)

	g.PollInterval = DefaultPollInterval
	if g.WebhookSecret.IsSet() {
		g.PollInterval = 0
	}
	switch v := l.get("POLL_INTERVAL"); strings.ToLower(v) {
	case "":
	case "0", "off":
		g.PollInterval = 0
	default:
		g.PollInterval = l.duration("POLL_INTERVAL", g.PollInterval, 10*time.Second, time.Hour)
	}

	g.AllowedLogins = l.list("GITHUB_ALLOWED_LOGINS", 1000, parseLogin)
}

func (l *loader) loadMultiUser(c *Config) {
	a := &c.Auth
	a.Mode = l.enum("AUTH_MODE", ModeSingle, ModeSingle, ModeSaaS)
	a.Signup = l.str("SIGNUP", "", func(s string) (string, error) {
		switch strings.ToLower(s) {
		case "open":
			return "open", nil
		case "invite":
			return "", nil
		}
		return "", want("want open, or invite (the same as leaving it unset)")
	})
	if a.Signup != "" && a.Mode != ModeSaaS {
		l.warn("SIGNUP=open has no effect unless AUTH_MODE=saas")
	}
	a.AdminGitHubLogins = l.list("ADMIN_GITHUB_LOGINS", 100, parseLogin)
	c.GitHub.OAuthClientID = l.str("GITHUB_OAUTH_CLIENT_ID", "", func(s string) (string, error) {
		if !matchCharset(s, 100, "._-", false) {
			return "", want("want the OAuth App's client id (letters, digits, . _ -)")
		}
		return s, nil
	})
	c.GitHub.OAuthClientSecret = l.secret("GITHUB_OAUTH_CLIENT_SECRET", 1)
	switch {
	case l.get("GITHUB_OAUTH_CLIENT_ID") != "" && l.get("GITHUB_OAUTH_CLIENT_SECRET") == "":
		l.fail("GITHUB_OAUTH_CLIENT_SECRET", "", want("it is required when GITHUB_OAUTH_CLIENT_ID is set"))
	case l.get("GITHUB_OAUTH_CLIENT_ID") == "" && l.get("GITHUB_OAUTH_CLIENT_SECRET") != "":
		l.fail("GITHUB_OAUTH_CLIENT_ID", "", want("it is required when GITHUB_OAUTH_CLIENT_SECRET is set"))
	}
	a.UserMaxBoxes = int(l.integer("USER_MAX_BOXES", 2, 1, 1000))
	a.TrialDays = int(l.integer("TRIAL_DAYS", 0, 0, 3650))
	a.BillingURL = l.str("BILLING_URL", "", parsePrefixURL)
}

// def is a variable's documented default, so code and docs share one value.
func def(name string) string { return varIndex[name].Default }

// SecretsKeyBytes returns the decoded SECRETS_KEY, or nil when it is unset
// (the key then lives in <DataDir>/secrets.key).
func (c *Config) SecretsKeyBytes() []byte {
	if !c.SecretsKey.IsSet() {
		return nil
	}
	b, err := DecodeKey(c.SecretsKey.Reveal())
	if err != nil {
		return nil // unreachable after Load
	}
	return b
}

// SlogLevel is LogLevel as a slog.Level.
func (c *Config) SlogLevel() slog.Level {
	switch c.LogLevel {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Unconfigured returns guidance for things that are not set up yet but are
// not errors either: asb starts without them and works partially. /readyz
// and the start-up log show these lines.
func (c *Config) Unconfigured() []string {
	var out []string
	if len(c.Sandbox.Hosts) == 0 {
		out = append(out, "No sandbox host: set SANDBOX_HOSTS=local (msb on this machine) or SANDBOX_HOSTS=ssh://user@host; runs cannot start until one answers.")
	}
	hasSSH := slices.ContainsFunc(c.Sandbox.Hosts, func(h Host) bool { return h.Kind == HostSSH })
	if hasSSH && c.Sandbox.SSHKeyFile == "" {
		out = append(out, "No SSH key: HOME is not set, so set SSH_KEY_FILE to the private key for the SSH hosts.")
	}
	if hasSSH && c.Sandbox.SSHKnownHosts == "" {
		out = append(out, "No known_hosts file: HOME is not set, so set SSH_KNOWN_HOSTS; SSH hosts are refused until their keys can be verified.")
	}
	if c.GitHub.AppID == 0 {
		out = append(out, "No GitHub App: open /setup on the dashboard to create one with a click, or set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY_FILE (app-manifest.yml lists the permissions and events the App needs).")
	}
	if !c.GitHub.WebhookSecret.IsSet() {
		if c.GitHub.PollInterval > 0 {
			out = append(out, fmt.Sprintf("No GITHUB_WEBHOOK_SECRET: the webhook receiver is off; the poller checks GitHub every %s instead.", fmtDuration(c.GitHub.PollInterval)))
		} else {
			out = append(out, "No GITHUB_WEBHOOK_SECRET and POLL_INTERVAL is off: GitHub comments and labels are not seen at all.")
		}
	}
	if !c.Agent.AnthropicAPIKey.IsSet() && c.Agent.AnthropicBaseURL == "" {
		out = append(out, "No model credentials: set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL for a proxy that holds them.")
	}
	if !c.OperatorToken.IsSet() {
		out = append(out, fmt.Sprintf("No MCP_HTTP_TOKEN: asb serve generates an operator token into %s on first start.", c.DataDir))
	}
	if c.publicURLDerived {
		if host, _, err := net.SplitHostPort(c.Addr); err == nil {
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				out = append(out, fmt.Sprintf("No ASB_PUBLIC_URL while listening on every interface: links in comments and the dashboard point at %s; set ASB_PUBLIC_URL to the address people reach.", c.PublicURL))
			}
		}
	}
	if c.Auth.Mode == ModeSaaS && c.Auth.Signup == "open" && len(c.Auth.AdminGitHubLogins) == 0 {
		out = append(out, "SIGNUP=open without ADMIN_GITHUB_LOGINS: the first account to sign up becomes admin; set ADMIN_GITHUB_LOGINS before opening sign-up publicly.")
	}
	return out
}
