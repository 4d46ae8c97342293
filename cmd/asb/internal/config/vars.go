package config

// Var documents one environment variable. docs/configuration.md and
// .env.example are checked against this list by the tests, and Load
// refuses (by panicking in tests) to read a name that is not in it, so the
// three cannot drift apart.
type Var struct {
	Name    string
	Section string // the docs/configuration.md section it is listed under
	// Default is the value Load uses when the variable is unset, written
	// as a user would write it. Empty when there is none, or when the
	// default is derived from other variables (Description says how).
	Default     string
	Description string
	Secret      bool // never echoed in errors, logs or dumps
}

// Sections of docs/configuration.md, in order.
const (
	SectionServer   = "Server"
	SectionAuth     = "Auth"
	SectionSandbox  = "Sandbox hosts"
	SectionAgent    = "Agent"
	SectionGitHub   = "GitHub"
	SectionMultiUse = "Multi-user"
	SectionLegacy   = "Legacy names"
)

var vars = []Var{
	// Server
	{Name: "ASB_ADDR", Section: SectionServer, Default: "127.0.0.1:8787",
		Description: "Address the HTTP server listens on (`host:port`; an empty host means every interface)."},
	{Name: "ASB_PUBLIC_URL", Section: SectionServer,
		Description: "URL people and GitHub reach asb at; used in links, the GitHub App manifest and OAuth callbacks. Default `http://` + `ASB_ADDR` (`127.0.0.1` when the host is empty or `0.0.0.0`)."},
	{Name: "ASB_DATA_DIR", Section: SectionServer, Default: "./data",
		Description: "Directory for asb's state: the SQLite database, the generated operator token and `secrets.key`. `~/` is expanded."},
	{Name: "ASB_TRUST_PROXY", Section: SectionServer, Default: "false",
		Description: "Trust `X-Forwarded-For`/`X-Forwarded-Proto` from a reverse proxy for client addresses (rate limits, sign-in throttling). Enable only behind a proxy that sets them."},
	{Name: "LOG_FORMAT", Section: SectionServer, Default: "text",
		Description: "Log format: `text` or `json`."},
	{Name: "LOG_LEVEL", Section: SectionServer, Default: "info",
		Description: "Log level: `debug`, `info`, `warn` or `error`."},
	{Name: "WORKSPACE_DIR", Section: SectionServer,
		Description: "`asb mcp` (stdio) only: absolute path of the IDE's working tree (inside a git repository). A `delegate` with `source: \"local\"`, or with no `repo`/`repos`, uploads what git would commit from it (uncommitted changes and untracked files included, `.gitignore` respected) plus `.git`, and the box works on that copy."},
	{Name: "WORKSPACE_MAX_BYTES", Section: SectionServer, Default: "104857600",
		Description: "Largest working tree (tar stream, `.git` included) `POST /workspaces` accepts, in bytes (1 MiB-10 GiB); larger uploads get 413. `asb mcp` checks it before uploading. Uploads are deleted once shipped into a box, or after an hour."},

	// Auth
	{Name: "MCP_HTTP_TOKEN", Section: SectionAuth, Secret: true,
		Description: "Operator token: the root identity for the dashboard, JSON routes and `/mcp` (at least 16 characters). Unset: `asb serve` generates one into the data directory on first start and says where."},
	{Name: "SECRETS_KEY", Section: SectionAuth, Secret: true,
		Description: "AES-256 key for secrets stored in the database: 64 hex digits or base64 of 32 bytes. Unset: generated into `<ASB_DATA_DIR>/secrets.key` (mode 0600). Back it up: without it stored tokens cannot be read."},
	{Name: "MUTATIONS_PER_MINUTE", Section: SectionAuth, Default: "60",
		Description: "Mutating requests (start, answer, tear down, …) allowed per caller per minute (1-100000)."},

	// Sandbox hosts
	{Name: "SANDBOX_HOSTS", Section: SectionSandbox,
		Description: "Comma-separated hosts that run `msb`: `local` and/or `ssh://user@host[:port]` (port 22 by default). Unset: `VPS_SSH`, else no host (asb starts but cannot run boxes)."},
	{Name: "SANDBOX_DRAIN", Section: SectionSandbox,
		Description: "Hosts of `SANDBOX_HOSTS` that take no new boxes (spelled as there): their sessions go on, their warm boxes are removed; when their last session ends they can be taken out of service."},
	{Name: "VPS_SSH", Section: SectionSandbox,
		Description: "The first version's single host: `user@host[:port]` or `ssh://user@host[:port]`. Read only when `SANDBOX_HOSTS` is unset. SSH config aliases are not supported."},
	{Name: "SSH_KEY_FILE", Section: SectionSandbox, Default: "~/.ssh/id_ed25519",
		Description: "Private key for SSH hosts."},
	{Name: "SSH_KNOWN_HOSTS", Section: SectionSandbox, Default: "~/.ssh/known_hosts",
		Description: "known_hosts file that SSH host keys are verified against (unknown hosts are refused)."},
	{Name: "MSB_PATH", Section: SectionSandbox, Default: "msb",
		Description: "The `msb` program on each host: a name looked up on the non-interactive `PATH`, or an absolute path such as `/root/.microsandbox/bin/msb`."},
	{Name: "MSB_IMAGE", Section: SectionSandbox, Default: "node",
		Description: "OCI image boxes boot from when there is no snapshot. It must already be cached on the host (`msb pull`); asb runs with `--pull never`."},
	{Name: "MSB_SNAPSHOT", Section: SectionSandbox,
		Description: "Snapshot boxes boot from (made by `asb bake`). Unset: boot from `MSB_IMAGE`."},
	{Name: "MSB_MEMORY", Section: SectionSandbox, Default: "1G",
		Description: "Memory per box: `512M`, `1G`, `1.5G`, `2048` (MiB); 256M to 256G."},
	{Name: "MSB_IDLE_TIMEOUT", Section: SectionSandbox, Default: "15m",
		Description: "An idle box is stopped after this (its disk stays; asb restarts it on the next answer or follow-up): `90s`, `15m`, `1h`, `1h30m` or bare seconds; 30s to 168h."},
	{Name: "MSB_MAX_DURATION", Section: SectionSandbox, Default: "1h",
		Description: "Hard limit on one boot of a box, counted from each start; same forms, 1m to 720h."},
	{Name: "MSB_MAX_BOXES", Section: SectionSandbox, Default: "5",
		Description: "Session boxes per host (warm-pool boxes not counted), 1-1000."},
	{Name: "POOL_SIZE", Section: SectionSandbox, Default: "1",
		Description: "Booted, ready boxes kept per host so a run starts without a boot; 0 disables the pool (0-100)."},
	{Name: "EGRESS_DOMAINS", Section: SectionSandbox,
		Description: "Extra domains boxes may reach on port 443, comma- or space-separated; `*.example.com` allows subdomains. The model endpoint and package registries are always allowed."},
	{Name: "EGRESS_ALLOW_ALL", Section: SectionSandbox, Default: "false",
		Description: "Open boxes' network to everything instead of the allowlist. Weakens the security model; see docs/security.md."},

	// Agent
	{Name: "AGENT_COMMAND", Section: SectionAgent, Default: "claude",
		Description: "The agent program inside the box (a name on `PATH` or an absolute path, no arguments). Tests use a scripted agent."},
	{Name: "ANTHROPIC_BASE_URL", Section: SectionAgent,
		Description: "Model endpoint or proxy (e.g. ccproxy) passed to the agent; its host is always allowed out. Unset: the agent's default (`https://api.anthropic.com`)."},
	{Name: "ANTHROPIC_API_KEY", Section: SectionAgent, Secret: true,
		Description: "API key the agent uses for the model endpoint."},
	{Name: "ANTHROPIC_MODEL", Section: SectionAgent,
		Description: "Model for the agent. Unset: the agent's default."},
	{Name: "ASK_MODEL", Section: SectionAgent,
		Description: "Model for the read-only co-pilot (`ask`). Unset: `ANTHROPIC_MODEL`."},
	{Name: "WAIT_TIMEOUT_MS", Section: SectionAgent, Default: "50000",
		Description: "How long `delegate`/`resume`/`status` block before answering \"still running\" (1000-59999: MCP clients give up at 60 s)."},
	{Name: "ASK_TIMEOUT_MS", Section: SectionAgent, Default: "45000",
		Description: "Cap on one co-pilot answer (5000-600000; keep it under 60000 for MCP callers)."},
	{Name: "NPM_TOKEN", Section: SectionAgent, Secret: true,
		Description: "npm registry token given to the agent for installs of private packages."},

	// GitHub
	{Name: "GITHUB_APP_ID", Section: SectionGitHub,
		Description: "GitHub App id. Unset: use the App created through `/setup` (stored in the database), if any. Needs `GITHUB_APP_PRIVATE_KEY_FILE`."},
	{Name: "GITHUB_APP_PRIVATE_KEY_FILE", Section: SectionGitHub,
		Description: "Path to the App's private key (PEM). `~/` is expanded."},
	{Name: "GITHUB_WEBHOOK_SECRET", Section: SectionGitHub, Secret: true,
		Description: "Secret GitHub signs webhook deliveries with. Unset: the webhook receiver stays off and the poller is used."},
	{Name: "GITHUB_API_URL", Section: SectionGitHub, Default: "https://api.github.com/",
		Description: "REST API base; `https://HOST/api/v3/` for GitHub Enterprise Server. A trailing `/` is added."},
	{Name: "GITHUB_WEB_URL", Section: SectionGitHub, Default: "https://github.com/",
		Description: "Web base for links and clones; `https://HOST/` for GitHub Enterprise Server."},
	{Name: "AGENT_TRIGGER", Section: SectionGitHub, Default: "/agent",
		Description: "Comment command that starts or continues a run: `/` plus one word, matched case-insensitively."},
	{Name: "AGENT_LABEL", Section: SectionGitHub, Default: "agent",
		Description: "Issue label that starts a run; state labels are derived from it (`agent:working`, …). Up to 40 letters, digits, `.`, `_`, `-`."},
	{Name: "POLL_INTERVAL", Section: SectionGitHub,
		Description: "How often the poller asks GitHub for new comments and labels (10s to 1h; `0` or `off` disables). Default: `60s` when `GITHUB_WEBHOOK_SECRET` is unset, off when it is set. Setting it runs the poller alongside webhooks (nothing runs twice)."},
	{Name: "GITHUB_ALLOWED_LOGINS", Section: SectionGitHub,
		Description: "Extra GitHub logins allowed to trigger runs besides people with write access, comma-separated."},

	// Multi-user
	{Name: "AUTH_MODE", Section: SectionMultiUse, Default: "single",
		Description: "`single` (one operator, the token) or `saas` (accounts, sign-in, per-user ownership and quotas)."},
	{Name: "SIGNUP", Section: SectionMultiUse,
		Description: "`open` shows a public sign-up form; unset (or `invite`) means accounts are created by an admin."},
	{Name: "ADMIN_GITHUB_LOGINS", Section: SectionMultiUse,
		Description: "GitHub logins that become admins when they sign in with GitHub, comma-separated. Unset: the first account becomes admin, so set this before opening sign-up."},
	{Name: "GITHUB_OAUTH_CLIENT_ID", Section: SectionMultiUse,
		Description: "OAuth client id for \"Continue with GitHub\" (callback `<ASB_PUBLIC_URL>/auth/github/callback`). Set with the secret, or neither."},
	{Name: "GITHUB_OAUTH_CLIENT_SECRET", Section: SectionMultiUse, Secret: true,
		Description: "OAuth client secret for \"Continue with GitHub\"."},
	{Name: "USER_MAX_BOXES", Section: SectionMultiUse, Default: "2",
		Description: "Concurrent boxes per user in `saas` mode (1-1000)."},
	{Name: "TRIAL_DAYS", Section: SectionMultiUse, Default: "0",
		Description: "Free-trial length for new accounts; 0 means no clock (self-hosting). After it, an account can read but not start runs until an admin makes it `pro`."},
	{Name: "BILLING_URL", Section: SectionMultiUse,
		Description: "Where the Upgrade button points (http/https)."},

	// Legacy names from the first version, read so that old .env files keep working.
	{Name: "MCP_HTTP_HOST", Section: SectionLegacy,
		Description: "With `MCP_HTTP_PORT`, builds `ASB_ADDR` when that is unset (host defaults to `127.0.0.1`)."},
	{Name: "MCP_HTTP_PORT", Section: SectionLegacy,
		Description: "With `MCP_HTTP_HOST`, builds `ASB_ADDR` when that is unset (port defaults to `8787`)."},
	{Name: "MSB", Section: SectionLegacy,
		Description: "Old name of `MSB_PATH`, read when that is unset."},
	{Name: "MSB_POOL_SIZE", Section: SectionLegacy,
		Description: "Old name of `POOL_SIZE`, read when that is unset."},
}

// obsoleteVars were read by the first version and mean nothing now. They
// are not errors (an old .env must still start), but Load warns so nobody
// believes they still take effect.
var obsoleteVars = map[string]string{
	"VPS_STAGING_DIR":  "the controller stages nothing on the host any more",
	"SSH_PERSIST":      "asb keeps one SSH connection per host open itself",
	"SSH_EXTRA_OPTS":   "asb speaks SSH itself; use SANDBOX_HOSTS, SSH_KEY_FILE and SSH_KNOWN_HOSTS",
	"WAIT_INTERVAL_MS": "watched runs are polled every second",
}

// Vars returns the documented variables, in documentation order.
func Vars() []Var {
	out := make([]Var, len(vars))
	copy(out, vars)
	return out
}

var varIndex = func() map[string]Var {
	m := make(map[string]Var, len(vars))
	for _, v := range vars {
		m[v.Name] = v
	}
	return m
}()
