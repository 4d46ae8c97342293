package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox"

	"github.com/asb-dev/asb/cmd/asb/internal/config"
)

// doctorReport prints one line per check and remembers failures.
type doctorReport struct {
	w      io.Writer
	failed int
}

func (r *doctorReport) ok(what, detail string) {
	fmt.Fprintf(r.w, "  ok    %s", what)
	if detail != "" {
		fmt.Fprintf(r.w, ": %s", detail)
	}
	fmt.Fprintln(r.w)
}

func (r *doctorReport) warn(what, fix string) {
	fmt.Fprintf(r.w, "  warn  %s\n        → %s\n", what, fix)
}

func (r *doctorReport) fail(what, fix string) {
	r.failed++
	fmt.Fprintf(r.w, "  FAIL  %s\n        → %s\n", what, fix)
}

func runDoctor(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "doctor", "Check the configuration, the data folder, the database, the secrets key, the operator token,\nthe sandbox hosts and the GitHub App, and say what to fix. Exits 1 if any check fails.")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for each host check")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	r := &doctorReport{w: env.stdout}
	fmt.Fprintln(r.w, "asb doctor")
	cfg, err := loadConfig(env)
	if err != nil {
		printConfigError(env.stdout, err)
		return 1
	}
	r.ok("configuration", fmt.Sprintf("listening on %s, public URL %s", cfg.Addr, cfg.PublicURL))
	for _, w := range cfg.Warnings {
		r.warn("configuration: "+w, "update .env as the warning says")
	}
	doctorData(ctx, r, cfg)
	doctorHosts(ctx, r, cfg, *timeout)
	if hook := findHookBinary(env); hook == "" {
		r.warn("asb-hook binary not found next to asb", "run `make build`: without it boxes run without the gate and guard hooks")
	} else {
		r.ok("asb-hook", hook)
	}
	doctorGitHub(r, cfg)
	if !cfg.Agent.AnthropicAPIKey.IsSet() && cfg.Agent.AnthropicBaseURL == "" {
		r.warn("no model credentials", "set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL for a proxy that holds them")
	} else {
		r.ok("model credentials", "set")
	}
	if r.failed > 0 {
		fmt.Fprintf(r.w, "\n%d check(s) failed.\n", r.failed)
		return 1
	}
	fmt.Fprintln(r.w, "\nAll checks passed.")
	return 0
}

func doctorData(ctx context.Context, r *doctorReport, cfg *config.Config) {
	if err := ensureDataDir(cfg); err != nil {
		r.fail("data folder "+cfg.DataDir, fmt.Sprintf("%v; set ASB_DATA_DIR to a folder asb can write", err))
		return
	}
	probe := filepath.Join(cfg.DataDir, ".doctor-write-test")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		r.fail("data folder "+cfg.DataDir+" is not writable", "fix its owner and permissions, or set ASB_DATA_DIR")
		return
	}
	os.Remove(probe)
	r.ok("data folder", cfg.DataDir)

	store, err := openStore(ctx, cfg)
	if err != nil {
		r.fail("database "+dbPath(cfg), fmt.Sprintf("%v; restore it from a backup or move it aside to start fresh", err))
		return
	}
	defer store.Close()
	var check string
	if err := store.DB().GetContext(ctx, &check, "PRAGMA quick_check"); err != nil || check != "ok" {
		r.fail("database integrity", fmt.Sprintf("quick_check says %q (%v); restore from a backup (docs/runbook.md)", check, err))
	} else {
		var n int
		_ = store.DB().GetContext(ctx, &n, "SELECT count(*) FROM schema_migrations")
		r.ok("database", fmt.Sprintf("%s, %d migrations applied, integrity ok", dbPath(cfg), n))
	}

	_, keyFile, _, err := openKeyring(ctx, cfg, store, false)
	switch {
	case err != nil:
		r.fail("secrets key", err.Error())
	case cfg.SecretsKey.IsSet():
		r.ok("secrets key", "SECRETS_KEY matches the database")
	default:
		if _, statErr := os.Stat(keyFile); statErr != nil {
			r.warn("secrets key "+keyFile+" does not exist yet", "asb serve creates it on first start; back it up with the database")
		} else {
			r.ok("secrets key", keyFile+" matches the database")
		}
	}

	_, tokenFile, _, err := operatorToken(cfg, false)
	switch {
	case err != nil:
		r.fail("operator token", err.Error())
	case cfg.OperatorToken.IsSet():
		r.ok("operator token", "MCP_HTTP_TOKEN is set")
	default:
		if _, statErr := os.Stat(tokenFile); statErr != nil {
			r.warn("no operator token yet", "asb serve generates one into "+tokenFile+" on first start, or set MCP_HTTP_TOKEN")
		} else {
			r.ok("operator token", "in "+tokenFile)
		}
	}
}

func doctorHosts(ctx context.Context, r *doctorReport, cfg *config.Config, timeout time.Duration) {
	if len(cfg.Sandbox.Hosts) == 0 {
		r.fail("no sandbox host configured", "set SANDBOX_HOSTS=local (msb on this machine) or SANDBOX_HOSTS=ssh://user@host (docs/configuration.md)")
		return
	}
	hosts, err := openHosts(cfg, nil)
	if err != nil {
		r.fail("sandbox hosts", err.Error())
		return
	}
	defer closeHosts(hosts)
	for _, h := range hosts {
		hctx, cancel := context.WithTimeout(ctx, timeout)
		doctorHost(hctx, r, cfg, h)
		cancel()
	}
}

// doctorHost checks one host in the order a self-hoster fixes things:
// reach it, then msb, then KVM, then the image or snapshot.
func doctorHost(ctx context.Context, r *doctorReport, cfg *config.Config, h host) {
	name := "host " + h.spec.String()
	res, err := h.transport.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	if err != nil {
		r.fail(name+": cannot run commands", err.Error())
		return
	}
	if res.ExitCode != 0 {
		r.fail(name+": `true` failed", "check the account's login shell on the host")
		return
	}
	if h.spec.Kind == config.HostSSH {
		r.ok(name, "SSH reachable, host key verified")
	}
	m := sandbox.NewMSB(h.transport, cfg.Sandbox.MSBPath)
	v, err := m.Version(ctx)
	if err != nil {
		r.fail(name+": msb does not answer", fmt.Sprintf("install msb 0.6.9 on the host or set MSB_PATH (%s)", app.ErrorMessage(err)))
		return
	}
	if !strings.HasPrefix(v, "msb 0.6.") {
		r.warn(name+": "+v, "asb is built and tested against msb 0.6.9")
	} else {
		r.ok(name, v)
	}
	ok, report, err := m.Doctor(ctx)
	switch {
	case err != nil:
		r.fail(name+": msb doctor did not run", err.Error())
	case !ok:
		r.fail(name+": msb doctor says the host is not ready", indent(report))
	default:
		r.ok(name, "msb doctor: KVM and host setup ready")
	}
	if cfg.Sandbox.Snapshot != "" {
		found, err := m.SnapshotExists(ctx, cfg.Sandbox.Snapshot)
		switch {
		case err != nil:
			r.fail(name+": cannot list snapshots", app.ErrorMessage(err))
		case !found:
			r.fail(name+": snapshot "+cfg.Sandbox.Snapshot+" does not exist", "run `asb bake --name "+cfg.Sandbox.Snapshot+"`, or unset MSB_SNAPSHOT to boot from MSB_IMAGE")
		default:
			r.ok(name, "snapshot "+cfg.Sandbox.Snapshot+" is there")
		}
		return
	}
	found, err := m.ImageCached(ctx, cfg.Sandbox.Image)
	switch {
	case err != nil:
		r.fail(name+": cannot list images", app.ErrorMessage(err))
	case !found:
		r.fail(name+": image "+cfg.Sandbox.Image+" is not pulled", "boxes boot with --pull never: run `msb pull "+cfg.Sandbox.Image+"` on the host")
	default:
		r.ok(name, "image "+cfg.Sandbox.Image+" is pulled")
	}
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n          ")
}

func doctorGitHub(r *doctorReport, cfg *config.Config) {
	gh := cfg.GitHub
	if gh.AppID == 0 {
		r.warn("no GitHub App configured", "set GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY_FILE and GITHUB_WEBHOOK_SECRET (app-manifest.yml lists the permissions and events)")
	} else if _, err := os.ReadFile(gh.PrivateKeyFile); err != nil {
		r.fail(fmt.Sprintf("GitHub App %d: private key unreadable", gh.AppID), fmt.Sprintf("check GITHUB_APP_PRIVATE_KEY_FILE (%v)", err))
	} else {
		r.ok("GitHub App", fmt.Sprintf("id %d, key file readable", gh.AppID))
	}
	if !gh.WebhookSecret.IsSet() {
		r.warn("no GITHUB_WEBHOOK_SECRET: the webhook receiver is off", "set it to the App's webhook secret, or rely on the poller (POLL_INTERVAL)")
	}
}
