package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, env ...string) *Config {
	t.Helper()
	c, err := Load(env, "")
	if err != nil {
		t.Fatalf("Load(%q): %v", env, err)
	}
	return c
}

func loadErr(t *testing.T, env ...string) error {
	t.Helper()
	c, err := Load(env, "")
	if err == nil {
		t.Fatalf("Load(%q) = %+v, want an error", env, c)
	}
	if c != nil {
		t.Errorf("Load returned a config with its error")
	}
	return err
}

func TestDefaults(t *testing.T) {
	got := mustLoad(t)
	want := &Config{
		Addr:      "127.0.0.1:8787",
		PublicURL: "http://127.0.0.1:8787",
		DataDir:   "./data",
		LogFormat: "text",
		LogLevel:  "info",
		// 100 MiB
		WorkspaceMaxBytes: 104857600,
		Sandbox: SandboxConfig{
			MSBPath:     "msb",
			Image:       "node",
			MemoryMiB:   1024,
			IdleTimeout: 15 * time.Minute,
			MaxDuration: time.Hour,
			MaxBoxes:    5,
			PoolSize:    1,
		},
		Agent: AgentConfig{
			Command:     "claude",
			WaitTimeout: 50 * time.Second,
			AskTimeout:  45 * time.Second,
		},
		GitHub: GitHubConfig{
			APIURL:       "https://api.github.com/",
			WebURL:       "https://github.com/",
			Trigger:      "/agent",
			Label:        "agent",
			PollInterval: 60 * time.Second,
		},
		Auth: AuthConfig{
			Mode:               ModeSingle,
			UserMaxBoxes:       2,
			MutationsPerMinute: 60,
		},
		publicURLDerived: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if got.SlogLevel() != slog.LevelInfo || got.SecretsKeyBytes() != nil {
		t.Error("derived defaults wrong")
	}
}

func TestDefaultsUseHome(t *testing.T) {
	c := mustLoad(t, "HOME=/home/op")
	if c.Sandbox.SSHKeyFile != "/home/op/.ssh/id_ed25519" || c.Sandbox.SSHKnownHosts != "/home/op/.ssh/known_hosts" {
		t.Errorf("ssh defaults: %q %q", c.Sandbox.SSHKeyFile, c.Sandbox.SSHKnownHosts)
	}
	c = mustLoad(t, "HOME=/home/op", "SSH_KEY_FILE=~/keys/k", "ASB_DATA_DIR=~/asb", "GITHUB_APP_ID=1", "GITHUB_APP_PRIVATE_KEY_FILE=~/app.pem")
	if c.Sandbox.SSHKeyFile != "/home/op/keys/k" || c.DataDir != "/home/op/asb" || c.GitHub.PrivateKeyFile != "/home/op/app.pem" {
		t.Errorf("~ expansion: %q %q %q", c.Sandbox.SSHKeyFile, c.DataDir, c.GitHub.PrivateKeyFile)
	}
	err := loadErr(t, "SSH_KEY_FILE=~/k") // no HOME
	if !strings.Contains(err.Error(), "SSH_KEY_FILE") || !strings.Contains(err.Error(), "HOME") {
		t.Errorf("error = %v", err)
	}
}

// The Default column of Vars is what Load really uses: writing the default
// explicitly changes nothing.
func TestVarDefaultsMatchLoad(t *testing.T) {
	base := mustLoad(t, "HOME=/home/op")
	for _, v := range Vars() {
		if v.Default == "" {
			continue
		}
		got := mustLoad(t, "HOME=/home/op", v.Name+"="+v.Default)
		got.publicURLDerived = base.publicURLDerived
		if !reflect.DeepEqual(got, base) {
			t.Errorf("%s=%s differs from unset:\n got %+v\nwant %+v", v.Name, v.Default, got, base)
		}
	}
}

func TestVarsTable(t *testing.T) {
	seen := map[string]bool{}
	sections := []string{SectionServer, SectionAuth, SectionSandbox, SectionAgent, SectionGitHub, SectionMultiUse, SectionLegacy}
	last := 0
	for _, v := range Vars() {
		if seen[v.Name] {
			t.Errorf("%s listed twice", v.Name)
		}
		seen[v.Name] = true
		i := slices.Index(sections, v.Section)
		if i < last {
			t.Errorf("%s: section %q out of order", v.Name, v.Section)
		}
		last = i
		if v.Description == "" || !validEnvName(v.Name) {
			t.Errorf("%s: bad entry", v.Name)
		}
		if v.Secret && v.Default != "" {
			t.Errorf("%s: a secret has no default", v.Name)
		}
	}
	// Every variable named in SPEC §7 is present.
	for _, name := range strings.Fields(`ASB_ADDR ASB_PUBLIC_URL ASB_DATA_DIR MCP_HTTP_TOKEN SANDBOX_HOSTS VPS_SSH
		SSH_KEY_FILE SSH_KNOWN_HOSTS MSB_PATH MSB_IMAGE MSB_SNAPSHOT MSB_MEMORY MSB_IDLE_TIMEOUT MSB_MAX_DURATION
		MSB_MAX_BOXES POOL_SIZE EGRESS_DOMAINS EGRESS_ALLOW_ALL AGENT_COMMAND ANTHROPIC_BASE_URL ANTHROPIC_API_KEY
		ANTHROPIC_MODEL ASK_MODEL WAIT_TIMEOUT_MS ASK_TIMEOUT_MS GITHUB_APP_ID GITHUB_APP_PRIVATE_KEY_FILE
		GITHUB_WEBHOOK_SECRET GITHUB_API_URL GITHUB_WEB_URL AGENT_TRIGGER AGENT_LABEL POLL_INTERVAL AUTH_MODE SIGNUP
		ADMIN_GITHUB_LOGINS GITHUB_OAUTH_CLIENT_ID GITHUB_OAUTH_CLIENT_SECRET USER_MAX_BOXES TRIAL_DAYS BILLING_URL
		SECRETS_KEY NPM_TOKEN LOG_FORMAT LOG_LEVEL`) {
		if !seen[name] {
			t.Errorf("SPEC variable %s missing from Vars", name)
		}
	}
	// Vars returns a copy.
	Vars()[0].Name = "CHANGED"
	if Vars()[0].Name == "CHANGED" {
		t.Error("Vars exposes the table")
	}
}

// validProbe sets each variable to a valid non-default value. Setting it
// must change the Config: proof that Load reads it.
var validProbe = map[string][]string{
	"ASB_ADDR":                    {"ASB_ADDR=0.0.0.0:9000"},
	"ASB_PUBLIC_URL":              {"ASB_PUBLIC_URL=https://asb.example.com/"},
	"ASB_DATA_DIR":                {"ASB_DATA_DIR=/var/lib/asb"},
	"ASB_TRUST_PROXY":             {"ASB_TRUST_PROXY=yes"},
	"LOG_FORMAT":                  {"LOG_FORMAT=JSON"},
	"LOG_LEVEL":                   {"LOG_LEVEL=debug"},
	"WORKSPACE_DIR":               {"WORKSPACE_DIR=/src/project"},
	"WORKSPACE_MAX_BYTES":         {"WORKSPACE_MAX_BYTES=2097152"},
	"MCP_HTTP_TOKEN":              {"MCP_HTTP_TOKEN=0123456789abcdef0123"},
	"SECRETS_KEY":                 {"SECRETS_KEY=" + strings.Repeat("1f", 32)},
	"MUTATIONS_PER_MINUTE":        {"MUTATIONS_PER_MINUTE=120"},
	"SANDBOX_HOSTS":               {"SANDBOX_HOSTS=local"},
	"SANDBOX_DRAIN":               {"SANDBOX_HOSTS=local,ssh://root@kvm2.example.com", "SANDBOX_DRAIN=ssh://root@kvm2.example.com:22"},
	"VPS_SSH":                     {"VPS_SSH=root@vps.example.com"},
	"SSH_KEY_FILE":                {"SSH_KEY_FILE=/etc/asb/key"},
	"SSH_KNOWN_HOSTS":             {"SSH_KNOWN_HOSTS=/etc/asb/known_hosts"},
	"MSB_PATH":                    {"MSB_PATH=/opt/msb/bin/msb"},
	"MSB_IMAGE":                   {"MSB_IMAGE=python:3.12"},
	"MSB_SNAPSHOT":                {"MSB_SNAPSHOT=agent-base"},
	"MSB_MEMORY":                  {"MSB_MEMORY=2G"},
	"MSB_IDLE_TIMEOUT":            {"MSB_IDLE_TIMEOUT=30m"},
	"MSB_MAX_DURATION":            {"MSB_MAX_DURATION=2h"},
	"MSB_MAX_BOXES":               {"MSB_MAX_BOXES=8"},
	"POOL_SIZE":                   {"POOL_SIZE=0"},
	"EGRESS_DOMAINS":              {"EGRESS_DOMAINS=pypi.org"},
	"EGRESS_ALLOW_ALL":            {"EGRESS_ALLOW_ALL=1"},
	"AGENT_COMMAND":               {"AGENT_COMMAND=/usr/local/bin/fake-agent"},
	"ANTHROPIC_BASE_URL":          {"ANTHROPIC_BASE_URL=https://ccproxy.example.com"},
	"ANTHROPIC_API_KEY":           {"ANTHROPIC_API_KEY=dummy"},
	"ANTHROPIC_MODEL":             {"ANTHROPIC_MODEL=opus"},
	"ASK_MODEL":                   {"ASK_MODEL=haiku"},
	"WAIT_TIMEOUT_MS":             {"WAIT_TIMEOUT_MS=20000"},
	"ASK_TIMEOUT_MS":              {"ASK_TIMEOUT_MS=30000"},
	"NPM_TOKEN":                   {"NPM_TOKEN=npm_abc"},
	"GITHUB_APP_ID":               {"GITHUB_APP_ID=42", "GITHUB_APP_PRIVATE_KEY_FILE=/k.pem"},
	"GITHUB_APP_PRIVATE_KEY_FILE": {"GITHUB_APP_ID=42", "GITHUB_APP_PRIVATE_KEY_FILE=/other.pem"},
	"GITHUB_WEBHOOK_SECRET":       {"GITHUB_WEBHOOK_SECRET=whsec"},
	"GITHUB_API_URL":              {"GITHUB_API_URL=http://127.0.0.1:5000/api/v3"},
	"GITHUB_WEB_URL":              {"GITHUB_WEB_URL=https://ghe.example.com"},
	"AGENT_TRIGGER":               {"AGENT_TRIGGER=/bot"},
	"AGENT_LABEL":                 {"AGENT_LABEL=bot"},
	"POLL_INTERVAL":               {"POLL_INTERVAL=30s"},
	"GITHUB_ALLOWED_LOGINS":       {"GITHUB_ALLOWED_LOGINS=octocat"},
	"AUTH_MODE":                   {"AUTH_MODE=saas"},
	"SIGNUP":                      {"SIGNUP=open"},
	"ADMIN_GITHUB_LOGINS":         {"ADMIN_GITHUB_LOGINS=octocat"},
	"GITHUB_OAUTH_CLIENT_ID":      {"GITHUB_OAUTH_CLIENT_ID=Iv1.a", "GITHUB_OAUTH_CLIENT_SECRET=s"},
	"GITHUB_OAUTH_CLIENT_SECRET":  {"GITHUB_OAUTH_CLIENT_ID=Iv1.a", "GITHUB_OAUTH_CLIENT_SECRET=t"},
	"USER_MAX_BOXES":              {"USER_MAX_BOXES=3"},
	"TRIAL_DAYS":                  {"TRIAL_DAYS=7"},
	"BILLING_URL":                 {"BILLING_URL=https://pay.example.com"},
	"MCP_HTTP_HOST":               {"MCP_HTTP_HOST=0.0.0.0"},
	"MCP_HTTP_PORT":               {"MCP_HTTP_PORT=9999"},
	"MSB":                         {"MSB=/root/.local/bin/msb"},
	"MSB_POOL_SIZE":               {"MSB_POOL_SIZE=3"},
}

// invalidProbe sets each variable to a bad value; the error must name it.
var invalidProbe = map[string]string{
	"ASB_ADDR": "nonsense", "ASB_PUBLIC_URL": "asb.example.com", "ASB_DATA_DIR": "a\x01b",
	"ASB_TRUST_PROXY": "maybe", "LOG_FORMAT": "xml", "LOG_LEVEL": "trace", "WORKSPACE_DIR": "${workspaceFolder}", "WORKSPACE_MAX_BYTES": "100M",
	"MCP_HTTP_TOKEN": "short", "SECRETS_KEY": "abcd", "MUTATIONS_PER_MINUTE": "0",
	"SANDBOX_HOSTS": "ssh://root@vps;id", "SANDBOX_DRAIN": "ssh://root@elsewhere", "VPS_SSH": "vps-alias", "SSH_KEY_FILE": "~bob/k", "SSH_KNOWN_HOSTS": "~bob/kh",
	"MSB_PATH": "msb --debug", "MSB_IMAGE": "-x", "MSB_SNAPSHOT": "a b", "MSB_MEMORY": "lots",
	"MSB_IDLE_TIMEOUT": "1d", "MSB_MAX_DURATION": "0", "MSB_MAX_BOXES": "0", "POOL_SIZE": "-1",
	"EGRESS_DOMAINS": "example.com:443", "EGRESS_ALLOW_ALL": "sure", "AGENT_COMMAND": "claude -p",
	"ANTHROPIC_BASE_URL": "ftp://x.example.com", "ANTHROPIC_API_KEY": "a b", "ANTHROPIC_MODEL": "a b",
	"ASK_MODEL": "$(id)", "WAIT_TIMEOUT_MS": "60000", "ASK_TIMEOUT_MS": "1000", "NPM_TOKEN": "a b",
	"GITHUB_APP_ID": "abc", "GITHUB_APP_PRIVATE_KEY_FILE": "~bob/k.pem", "GITHUB_WEBHOOK_SECRET": "a b",
	"GITHUB_API_URL": "api.github.com", "GITHUB_WEB_URL": "github.com", "AGENT_TRIGGER": "agent",
	"AGENT_LABEL": "agent:x", "POLL_INTERVAL": "5s", "GITHUB_ALLOWED_LOGINS": "-bad-",
	"AUTH_MODE": "multi", "SIGNUP": "closed", "ADMIN_GITHUB_LOGINS": "a_b", "GITHUB_OAUTH_CLIENT_ID": "a b",
	"GITHUB_OAUTH_CLIENT_SECRET": "a b", "USER_MAX_BOXES": "0", "TRIAL_DAYS": "-1", "BILLING_URL": "x",
	"MCP_HTTP_HOST": "a b", "MCP_HTTP_PORT": "0", "MSB": "a;b", "MSB_POOL_SIZE": "101",
}

func TestEveryVarIsRead(t *testing.T) {
	base := mustLoad(t)
	for _, v := range Vars() {
		probe, ok := validProbe[v.Name]
		if !ok {
			t.Errorf("%s: no valid probe in this test", v.Name)
			continue
		}
		got := mustLoad(t, probe...)
		got.Warnings = nil
		if reflect.DeepEqual(got, base) {
			t.Errorf("%s: setting %q changed nothing", v.Name, probe)
		}

		bad, ok := invalidProbe[v.Name]
		if !ok {
			t.Errorf("%s: no invalid probe in this test", v.Name)
			continue
		}
		err := loadErr(t, v.Name+"="+bad)
		var ve *VarError
		if !errors.As(err, &ve) || ve.Var != v.Name {
			t.Errorf("%s=%q: error %v does not name it", v.Name, bad, err)
			continue
		}
		if v.Secret && (!ve.Hidden || strings.Contains(err.Error(), bad)) {
			t.Errorf("%s: secret shown: %v", v.Name, err)
		}
		if !v.Secret && !strings.Contains(err.Error(), strings.TrimSpace(bad)) && bad != "a\x01b" {
			t.Errorf("%s: error does not show the bad value: %v", v.Name, err)
		}
		if !strings.Contains(ve.Want, "want") && !strings.Contains(ve.Want, "required") {
			t.Errorf("%s: error does not say what is accepted: %v", v.Name, err)
		}
	}
	// Internal cross-check: the loader looked at every declared name.
	l := &loader{vals: map[string]string{}, read: map[string]bool{}}
	l.load()
	for _, v := range Vars() {
		if !l.read[v.Name] {
			t.Errorf("%s is declared but never read", v.Name)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"ASB_ADDR=nonsense"}, `ASB_ADDR="nonsense": want host:port, e.g. 127.0.0.1:8787`},
		{[]string{"MSB_MEMORY=lots"}, `MSB_MEMORY="lots": want a memory size`},
		{[]string{"WAIT_TIMEOUT_MS=60000"}, `WAIT_TIMEOUT_MS="60000": want milliseconds from 1000 to 59999`},
		{[]string{"MSB_IDLE_TIMEOUT=10s"}, `MSB_IDLE_TIMEOUT="10s": want a duration from 30s to 168h`},
		{[]string{"MCP_HTTP_TOKEN=short"}, `MCP_HTTP_TOKEN (value hidden): want at least 16 characters`},
		{[]string{"EGRESS_DOMAINS=ok.example.com bad$ *.com"}, `EGRESS_DOMAINS entry "bad$": want a domain name`},
		{[]string{"EGRESS_DOMAINS=ok.example.com bad$ *.com"}, `EGRESS_DOMAINS entry "*.com"`},
		{[]string{"SANDBOX_HOSTS=local,local"}, `SANDBOX_HOSTS entry "local": want each host once`},
		{[]string{"SANDBOX_HOSTS=root@vps"}, `the ssh:// prefix is required`},
		{[]string{"SANDBOX_HOSTS=local", "SANDBOX_DRAIN=ssh://root@kvm9"}, `SANDBOX_DRAIN entry "ssh://root@kvm9": want a host listed in SANDBOX_HOSTS`},
		{[]string{"SANDBOX_HOSTS=ssh://root:pw@vps"}, `SANDBOX_HOSTS entry "ssh://root:xxxxx@vps": want no password`},
		{[]string{"ANTHROPIC_BASE_URL=https://u:pw@p.example.com"}, `ANTHROPIC_BASE_URL="https://u:xxxxx@p.example.com": want a URL without user:password@`},
		{[]string{"GITHUB_APP_ID=7"}, `GITHUB_APP_PRIVATE_KEY_FILE is not set: it is required when GITHUB_APP_ID is set`},
		{[]string{"GITHUB_APP_PRIVATE_KEY_FILE=/k"}, `GITHUB_APP_ID is not set: it is required when GITHUB_APP_PRIVATE_KEY_FILE is set`},
		{[]string{"GITHUB_OAUTH_CLIENT_ID=x"}, `GITHUB_OAUTH_CLIENT_SECRET is not set: it is required when GITHUB_OAUTH_CLIENT_ID is set`},
		{[]string{"GITHUB_OAUTH_CLIENT_SECRET=x"}, `GITHUB_OAUTH_CLIENT_ID is not set`},
		{[]string{"LOG_FORMAT=xml"}, `LOG_FORMAT="xml": want one of: text, json`},
		{[]string{"ASB_ADDR=" + strings.Repeat("x", 200)}, `ASB_ADDR="` + strings.Repeat("x", 80) + `"…: want host:port`},
		{[]string{"ANTHROPIC_MODEL=" + strings.Repeat("m", maxValueLen+1)}, `want at most 8192 bytes`},
	}
	for _, tc := range tests {
		err := loadErr(t, tc.env...)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q):\n got %v\nwant it to contain %s", tc.env, err, tc.want)
		}
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("garbage line\nLOG_LEVEL=loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load([]string{"ASB_ADDR=nonsense", "MSB_MEMORY=lots", "AGENT_TRIGGER=agent", "POOL_SIZE=x"}, envFile)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{envFile + ":1:", "LOG_LEVEL", "ASB_ADDR", "MSB_MEMORY", "AGENT_TRIGGER", "POOL_SIZE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 6 {
		t.Errorf("want 6 lines, got %d:\n%v", n, err)
	}
}

func TestRealEnvWinsOverDotenv(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, ".env")
	content := "# config\nexport ASB_ADDR=127.0.0.1:1111\nLOG_FORMAT=json\nLOG_LEVEL='warn'\r\n" +
		"AGENT_LABEL=\"from-file\" # comment\nMSB_MEMORY=2G\nASB_PUBLIC_URL=https://x.example.com/#not-a-comment-but-invalid\n"
	if err := os.WriteFile(envFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load([]string{
		"ASB_ADDR=127.0.0.1:2222",   // env wins
		"MSB_MEMORY=",               // empty env still wins: default applies
		"ASB_PUBLIC_URL=",           // the file's invalid value is overridden
		"MALFORMED_ENTRY_NO_EQUALS", // ignored
		"=C:=C:\\",                  // Windows oddity, ignored
		"SOME_UNKNOWN_VAR=whatever", // ignored
	}, envFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:2222" || c.LogFormat != "json" || c.LogLevel != "warn" || c.GitHub.Label != "from-file" ||
		c.Sandbox.MemoryMiB != 1024 || c.PublicURL != "http://127.0.0.1:2222" {
		t.Errorf("got %+v", c)
	}

	// Missing file is fine; an unreadable one is not.
	if _, err := Load(nil, filepath.Join(dir, "nope")); err != nil {
		t.Errorf("missing .env: %v", err)
	}
	if _, err := Load(nil, dir); err == nil {
		t.Error("a directory as .env: no error")
	}
}

func TestSandboxHosts(t *testing.T) {
	c := mustLoad(t, "SANDBOX_HOSTS= local , ssh://root@203.0.113.7,ssh://d@vps.example.com:2222 ")
	want := []Host{
		{Kind: HostLocal, Raw: "local"},
		{Kind: HostSSH, User: "root", Addr: "203.0.113.7:22", Raw: "ssh://root@203.0.113.7"},
		{Kind: HostSSH, User: "d", Addr: "vps.example.com:2222", Raw: "ssh://d@vps.example.com:2222"},
	}
	if !reflect.DeepEqual(c.Sandbox.Hosts, want) {
		t.Errorf("hosts = %+v", c.Sandbox.Hosts)
	}
	c = mustLoad(t, "VPS_SSH=root@vps.example.com")
	if len(c.Sandbox.Hosts) != 1 || c.Sandbox.Hosts[0].String() != "ssh://root@vps.example.com:22" || len(c.Warnings) != 0 {
		t.Errorf("VPS_SSH: %+v %q", c.Sandbox.Hosts, c.Warnings)
	}
	c = mustLoad(t, "SANDBOX_HOSTS=local", "VPS_SSH=anything that would be invalid")
	if len(c.Sandbox.Hosts) != 1 || c.Sandbox.Hosts[0].Kind != HostLocal || !hasWarning(c, "VPS_SSH is ignored") {
		t.Errorf("SANDBOX_HOSTS should win: %+v %q", c.Sandbox.Hosts, c.Warnings)
	}
	for _, dup := range []string{"local,LOCAL", "ssh://r@h,ssh://r@h:22", "ssh://r@h, SSH://r@h"} {
		err := loadErr(t, "SANDBOX_HOSTS="+dup)
		if !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("%s: %v", dup, err)
		}
	}
	err := loadErr(t, "SANDBOX_HOSTS="+strings.Repeat("ssh://r@h,", 65))
	if !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("too many hosts: %v", err)
	}
}

func TestPollInterval(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, 60 * time.Second},
		{[]string{"GITHUB_WEBHOOK_SECRET=s"}, 0},
		{[]string{"POLL_INTERVAL=0"}, 0},
		{[]string{"POLL_INTERVAL=OFF"}, 0},
		{[]string{"POLL_INTERVAL=2m"}, 2 * time.Minute},
		{[]string{"POLL_INTERVAL=10"}, 10 * time.Second},
		{[]string{"POLL_INTERVAL=30s", "GITHUB_WEBHOOK_SECRET=s"}, 30 * time.Second},
	} {
		if got := mustLoad(t, tc.env...).GitHub.PollInterval; got != tc.want {
			t.Errorf("%q: PollInterval = %v, want %v", tc.env, got, tc.want)
		}
	}
	for _, bad := range []string{"9s", "2h", "-1m", "soon"} {
		loadErr(t, "POLL_INTERVAL="+bad)
	}
}

func TestNormalisation(t *testing.T) {
	c := mustLoad(t,
		"AGENT_TRIGGER=/Agent",
		"EGRESS_DOMAINS=Pypi.org, pypi.org files.pythonhosted.org\t*.Example.com,",
		"GITHUB_ALLOWED_LOGINS=OctoCat,octocat , hubot",
		"ADMIN_GITHUB_LOGINS=Admin",
		"ANTHROPIC_MODEL=opus",
		"GITHUB_API_URL=https://ghe.example.com/api/v3",
		"ANTHROPIC_BASE_URL=https://proxy.example.com/",
		"LOG_LEVEL=WARN",
		"SIGNUP=invite",
		"AUTH_MODE=SaaS",
	)
	if c.GitHub.Trigger != "/agent" ||
		!slices.Equal(c.Sandbox.EgressDomains, []string{"pypi.org", "files.pythonhosted.org", "*.example.com"}) ||
		!slices.Equal(c.GitHub.AllowedLogins, []string{"octocat", "hubot"}) ||
		!slices.Equal(c.Auth.AdminGitHubLogins, []string{"admin"}) ||
		c.Agent.AskModel != "opus" ||
		c.GitHub.APIURL != "https://ghe.example.com/api/v3/" ||
		c.Agent.AnthropicBaseURL != "https://proxy.example.com" ||
		c.LogLevel != "warn" || c.SlogLevel() != slog.LevelWarn ||
		c.Auth.Signup != "" || c.Auth.Mode != ModeSaaS {
		t.Errorf("got %+v", c)
	}
	if c := mustLoad(t, "ANTHROPIC_MODEL=opus", "ASK_MODEL=haiku"); c.Agent.AskModel != "haiku" {
		t.Errorf("AskModel = %q", c.Agent.AskModel)
	}
	if c := mustLoad(t, "MSB_IDLE_TIMEOUT=900", "MSB_MAX_DURATION=1h30m", "MSB_MEMORY=1.5G"); c.Sandbox.IdleTimeout != 15*time.Minute ||
		c.Sandbox.MaxDuration != 90*time.Minute || c.Sandbox.MemoryMiB != 1536 {
		t.Errorf("sandbox: %+v", c.Sandbox)
	}
	key := strings.Repeat("a1", 32)
	if b := mustLoad(t, "SECRETS_KEY="+key).SecretsKeyBytes(); len(b) != 32 || b[0] != 0xa1 {
		t.Errorf("SecretsKeyBytes = %x", b)
	}
}

func TestPublicURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8787": "http://127.0.0.1:8787",
		"0.0.0.0:8787":   "http://127.0.0.1:8787",
		":9000":          "http://127.0.0.1:9000",
		"[::]:9000":      "http://127.0.0.1:9000",
		"[::1]:9000":     "http://[::1]:9000",
		"localhost:80":   "http://localhost:80",
	} {
		if got := mustLoad(t, "ASB_ADDR="+addr).PublicURL; got != want {
			t.Errorf("ASB_ADDR=%s: PublicURL = %s, want %s", addr, got, want)
		}
	}
	if got := mustLoad(t, "ASB_ADDR=0.0.0.0:1", "ASB_PUBLIC_URL=https://asb.example.com/").PublicURL; got != "https://asb.example.com" {
		t.Errorf("explicit PublicURL = %s", got)
	}
}

func TestLegacyNames(t *testing.T) {
	c := mustLoad(t, "MCP_HTTP_HOST=0.0.0.0", "MCP_HTTP_PORT=9999", "MSB=/root/.local/bin/msb", "MSB_POOL_SIZE=3")
	if c.Addr != "0.0.0.0:9999" || c.Sandbox.MSBPath != "/root/.local/bin/msb" || c.Sandbox.PoolSize != 3 {
		t.Errorf("legacy: %+v", c)
	}
	for _, w := range []string{"ASB_ADDR=0.0.0.0:9999", "MSB_PATH=/root/.local/bin/msb", "POOL_SIZE=3"} {
		if !hasWarning(c, w) {
			t.Errorf("no warning mentioning %s: %q", w, c.Warnings)
		}
	}
	if c := mustLoad(t, "MCP_HTTP_PORT=9999"); c.Addr != "127.0.0.1:9999" {
		t.Errorf("port only: %s", c.Addr)
	}
	c = mustLoad(t, "ASB_ADDR=127.0.0.1:1", "MCP_HTTP_PORT=9999", "MSB_PATH=msb", "MSB=/x/msb", "POOL_SIZE=2", "MSB_POOL_SIZE=3")
	if c.Addr != "127.0.0.1:1" || c.Sandbox.MSBPath != "msb" || c.Sandbox.PoolSize != 2 || !hasWarning(c, "ignored because ASB_ADDR") {
		t.Errorf("new names should win: %+v %q", c, c.Warnings)
	}
	c = mustLoad(t, "SSH_EXTRA_OPTS=-o X=y", "VPS_STAGING_DIR=/x", "WAIT_INTERVAL_MS=3000", "SSH_PERSIST=120")
	for _, name := range []string{"SSH_EXTRA_OPTS", "VPS_STAGING_DIR", "WAIT_INTERVAL_MS", "SSH_PERSIST"} {
		if !hasWarning(c, name+" is set but no longer used") {
			t.Errorf("no obsolete warning for %s: %q", name, c.Warnings)
		}
	}
	if c := mustLoad(t, "SIGNUP=open"); !hasWarning(c, "SIGNUP=open has no effect") {
		t.Errorf("SIGNUP without saas: %q", c.Warnings)
	}
}

func TestUnconfigured(t *testing.T) {
	fresh := mustLoad(t)
	for _, want := range []string{"No sandbox host", "No GitHub App", "GITHUB_APP_PRIVATE_KEY_FILE", "No GITHUB_WEBHOOK_SECRET", "every 1m ",
		"No model credentials", "No MCP_HTTP_TOKEN"} {
		if !containsLine(fresh.Unconfigured(), want) {
			t.Errorf("fresh config lacks %q: %q", want, fresh.Unconfigured())
		}
	}
	full := mustLoad(t, "HOME=/root", "SANDBOX_HOSTS=ssh://root@vps", "GITHUB_APP_ID=1", "GITHUB_APP_PRIVATE_KEY_FILE=/k.pem",
		"GITHUB_WEBHOOK_SECRET=w", "ANTHROPIC_API_KEY=k", "MCP_HTTP_TOKEN=0123456789abcdef")
	if u := full.Unconfigured(); len(u) != 0 {
		t.Errorf("fully configured: %q", u)
	}
	noHome := mustLoad(t, "SANDBOX_HOSTS=ssh://root@vps")
	if !containsLine(noHome.Unconfigured(), "SSH_KEY_FILE") || !containsLine(noHome.Unconfigured(), "SSH_KNOWN_HOSTS") {
		t.Errorf("ssh without HOME: %q", noHome.Unconfigured())
	}
	if c := mustLoad(t, "POLL_INTERVAL=off"); !containsLine(c.Unconfigured(), "not seen at all") {
		t.Errorf("no webhook, no poller: %q", c.Unconfigured())
	}
	if c := mustLoad(t, "ASB_ADDR=0.0.0.0:8787"); !containsLine(c.Unconfigured(), "ASB_PUBLIC_URL") {
		t.Errorf("wildcard bind: %q", c.Unconfigured())
	}
	if c := mustLoad(t, "AUTH_MODE=saas", "SIGNUP=open"); !containsLine(c.Unconfigured(), "first account") {
		t.Errorf("open sign-up without admins: %q", c.Unconfigured())
	}
}

func hasWarning(c *Config, sub string) bool { return containsLine(c.Warnings, sub) }

func containsLine(lines []string, sub string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) })
}

func TestUndeclaredNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("reading an undeclared variable did not panic")
		}
	}()
	(&loader{vals: map[string]string{}, read: map[string]bool{}}).get("NOT_DECLARED")
}

func TestTooLongReportedOnce(t *testing.T) {
	err := loadErr(t, "GITHUB_APP_ID="+strings.Repeat("1", maxValueLen+1))
	if n := strings.Count(err.Error(), "GITHUB_APP_ID"); n != 1 {
		t.Errorf("reported %d times: %v", n, err)
	}
}
