package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/sandbox"

	"github.com/asb-dev/asb/cmd/asb/internal/config"
)

// doctorReport prints one line per check and remembers failures. A
// failing or doubtful check says what is wrong, why it matters and the
// exact command or variable that fixes it: the reader is a self-hoster
// who may not know asb's insides.
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

// note is an informational line: nothing to fix.
func (r *doctorReport) note(what, detail string) {
	fmt.Fprintf(r.w, "  note  %s: %s\n", what, detail)
}

func (r *doctorReport) warn(what, why, fix string) { r.explain("warn", what, why, fix) }

func (r *doctorReport) fail(what, why, fix string) {
	r.failed++
	r.explain("FAIL", what, why, fix)
}

func (r *doctorReport) explain(level, what, why, fix string) {
	fmt.Fprintf(r.w, "  %-4s  %s\n", level, what)
	if why != "" {
		fmt.Fprintf(r.w, "        why: %s\n", indent(why))
	}
	fmt.Fprintf(r.w, "        fix: %s\n", indent(fix))
}

func runDoctor(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "doctor", "Check the configuration, the data folder, the database, the secrets key, the operator token,\nthe sandbox hosts and the GitHub App, and say what to fix. Exits 1 if any check fails.")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for each host check and each GitHub call")
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
		r.warn("configuration: "+w, "asb still starts, but the setting may not do what you expect",
			"edit .env (or the environment) as the line says; docs/configuration.md lists every variable")
	}
	doctorData(ctx, r, cfg)
	doctorHosts(ctx, r, cfg, *timeout)
	if hook := findHookBinary(env); hook == "" {
		r.warn("asb-hook binary not found next to asb",
			"boxes then run the agent without the in-box gate and guard hooks",
			"run `make build` and start bin/asb, or put asb-hook-linux-amd64/-arm64 next to the asb binary")
	} else {
		r.ok("asb-hook", hook)
	}
	doctorGitHub(ctx, r, cfg, *timeout)
	if !cfg.Agent.AnthropicAPIKey.IsSet() && cfg.Agent.AnthropicBaseURL == "" {
		r.warn("no model credentials", "the agent in the box cannot call the model, so every run fails at its first step",
			"set ANTHROPIC_API_KEY in .env, or ANTHROPIC_BASE_URL to a proxy that holds the credentials")
	} else {
		r.ok("model credentials", "set")
	}
	if r.failed > 0 {
		fmt.Fprintf(r.w, "\n%d check(s) failed. Fix them from the top: later checks often fail because of an earlier one.\n", r.failed)
		return 1
	}
	fmt.Fprintln(r.w, "\nAll checks passed.")
	return 0
}

// whoami names the user asb runs as, for chown advice.
func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

func doctorData(ctx context.Context, r *doctorReport, cfg *config.Config) {
	const why = "asb keeps its database, secrets key and operator token there and cannot start without it"
	if err := ensureDataDir(cfg); err != nil {
		r.fail("data folder "+cfg.DataDir+" cannot be created ("+err.Error()+")", why,
			fmt.Sprintf("create it for the user asb runs as (`mkdir -p %s && chown %s %s`), or set ASB_DATA_DIR to a folder it can write", cfg.DataDir, whoami(), cfg.DataDir))
		return
	}
	probe := filepath.Join(cfg.DataDir, ".doctor-write-test")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		r.fail("data folder "+cfg.DataDir+" is not writable ("+err.Error()+")", why,
			fmt.Sprintf("`chown -R %s %s` (the user asb runs as), or set ASB_DATA_DIR to a folder it can write", whoami(), cfg.DataDir))
		return
	}
	os.Remove(probe)
	if fi, err := os.Stat(cfg.DataDir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		r.warn(fmt.Sprintf("data folder %s is open to other users (mode %04o)", cfg.DataDir, fi.Mode().Perm()),
			"it holds the database with sealed GitHub tokens and the key that unseals them",
			"chmod 700 "+cfg.DataDir)
	} else {
		r.ok("data folder", cfg.DataDir)
	}

	store, err := openStore(ctx, cfg)
	if err != nil {
		r.fail("database "+dbPath(cfg)+" cannot be opened ("+err.Error()+")",
			"sessions, runs and GitHub deliveries live there; asb serve refuses to start without it",
			"if the file is damaged, stop asb and restore it from a backup (docs/runbook.md, \"Restoring from a backup\"); if it is a newer asb's database, run that version")
		return
	}
	defer store.Close()
	var check string
	if err := store.DB().GetContext(ctx, &check, "PRAGMA quick_check"); err != nil || check != "ok" {
		r.fail(fmt.Sprintf("database integrity: quick_check says %q (%v)", check, err),
			"a damaged database can lose or repeat runs",
			"stop asb and restore "+dbPath(cfg)+" from a backup (docs/runbook.md, \"Restoring from a backup\")")
	} else {
		var n int
		_ = store.DB().GetContext(ctx, &n, "SELECT count(*) FROM schema_migrations")
		r.ok("database", fmt.Sprintf("%s, %d migrations applied, integrity ok", dbPath(cfg), n))
	}
	doctorSecretsKey(ctx, r, cfg, store)
	doctorOperatorToken(r, cfg)
}

func doctorSecretsKey(ctx context.Context, r *doctorReport, cfg *config.Config, store *sqlite.Store) {
	keyFile := filepath.Join(cfg.DataDir, "secrets.key")
	if !cfg.SecretsKey.IsSet() {
		if fi, err := os.Stat(keyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			r.fail(fmt.Sprintf("secrets key %s is readable by other users (mode %04o)", keyFile, fi.Mode().Perm()),
				"anyone who reads it and the database can decrypt the stored GitHub tokens, so asb serve refuses to start with it",
				"chmod 600 "+keyFile)
			return
		}
	}
	_, _, _, err := openKeyring(ctx, cfg, store, false)
	switch {
	case err != nil && strings.Contains(err.Error(), "does not match"):
		where := "SECRETS_KEY"
		if !cfg.SecretsKey.IsSet() {
			where = keyFile
		}
		r.fail("secrets key "+where+" does not open this database's secrets",
			"stored GitHub tokens and secrets cannot be decrypted, so asb serve refuses to start",
			"restore the secrets.key (or SECRETS_KEY) that was backed up together with this database (docs/runbook.md, \"Restoring from a backup\")")
		return
	case err != nil:
		r.fail("secrets key: "+err.Error(), "asb serve refuses to start without a usable key",
			"SECRETS_KEY must be 64 hex digits or base64 of 32 bytes; "+keyFile+" must be the file asb generated (restore it from the backup taken with the database)")
		return
	case cfg.SecretsKey.IsSet():
		r.ok("secrets key", "SECRETS_KEY matches the database")
		return
	}
	if _, err := os.Stat(keyFile); err == nil {
		r.ok("secrets key", keyFile+" matches the database")
		return
	}
	var sealed bool
	_ = store.Tx(ctx, func(tx app.Tx) error {
		_, sealed, _ = tx.GetSecret(keyCheckName)
		return nil
	})
	if sealed {
		r.fail("secrets key "+keyFile+" is missing, but the database holds secrets sealed with it",
			"asb serve would make a new key that cannot open them, and refuse to start",
			"restore "+keyFile+" from the backup taken with the database, or set SECRETS_KEY to that key (docs/runbook.md)")
		return
	}
	r.note("secrets key", keyFile+" does not exist yet; asb serve creates it on first start. Back it up with the database")
}

func doctorOperatorToken(r *doctorReport, cfg *config.Config) {
	_, tokenFile, _, err := operatorToken(cfg, false)
	switch {
	case err != nil:
		r.fail("operator token: "+err.Error(),
			"the dashboard, JSON routes and MCP accept no one without it, and asb serve refuses to start",
			"delete "+tokenFile+" so asb serve generates a new one, or set MCP_HTTP_TOKEN (openssl rand -hex 32)")
	case cfg.OperatorToken.IsSet():
		r.ok("operator token", "MCP_HTTP_TOKEN is set")
	default:
		if _, statErr := os.Stat(tokenFile); statErr != nil {
			r.note("operator token", "none yet; asb serve generates one into "+tokenFile+" on first start (or set MCP_HTTP_TOKEN)")
		} else {
			r.ok("operator token", "in "+tokenFile)
		}
	}
}

func doctorHosts(ctx context.Context, r *doctorReport, cfg *config.Config, timeout time.Duration) {
	if len(cfg.Sandbox.Hosts) == 0 {
		r.fail("no sandbox host configured", "boxes run on a KVM host with msb; without one no run can start",
			"set SANDBOX_HOSTS=local (msb on this machine) or SANDBOX_HOSTS=ssh://user@host (docs/configuration.md); deploy/setup.sh prepares an SSH host")
		return
	}
	hosts, err := openHosts(cfg, nil)
	if err != nil {
		r.fail("sandbox hosts: "+app.ErrorMessage(err), "asb cannot log in to any SSH host without its key",
			"set SSH_KEY_FILE to an unencrypted private key readable by "+whoami()+" (deploy/setup.sh makes one), and authorize its public key on each host")
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
	const down = "runs placed on this host cannot start; asb keeps probing it and uses it again once it answers"
	res, err := h.transport.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	if err != nil {
		fix := "check that this user can run programs on this machine"
		if h.spec.Kind == config.HostSSH {
			fix = fmt.Sprintf("follow the message above; to try by hand: ssh -i %s -o UserKnownHostsFile=%s -p %s %s@%s true",
				cfg.Sandbox.SSHKeyFile, cfg.Sandbox.SSHKnownHosts, portOf(h.spec.Addr), h.spec.User, hostOf(h.spec.Addr))
		}
		r.fail(name+": cannot run commands: "+app.ErrorMessage(err), down, fix)
		return
	}
	if res.ExitCode != 0 {
		r.fail(name+": `true` failed with exit "+strconv.Itoa(res.ExitCode), "every msb command runs through the account's login shell",
			"give the account a working login shell: usermod -s /bin/sh <user> (on the host)")
		return
	}
	if h.spec.Kind == config.HostSSH {
		r.ok(name, "SSH reachable, host key verified")
	}
	m := sandbox.NewMSB(h.transport, cfg.Sandbox.MSBPath)
	v, err := m.Version(ctx)
	if err != nil {
		r.fail(name+": msb does not answer ("+app.ErrorMessage(err)+")", down,
			"install msb 0.6.9 on the host or set MSB_PATH to its absolute path, e.g. MSB_PATH=/root/.microsandbox/bin/msb (docs/sandbox-hosts.md)")
		return
	}
	if !strings.HasPrefix(v, "msb 0.6.") {
		r.warn(name+": "+v, "asb is built and tested against msb 0.6.9; other versions may change flags or output",
			"install msb 0.6.9 on the host")
	} else {
		r.ok(name, v)
	}
	ok, report, err := m.Doctor(ctx)
	switch {
	case err != nil:
		r.fail(name+": msb doctor did not run ("+app.ErrorMessage(err)+")", down, "run `msb doctor` on the host and fix what it reports")
	case !ok:
		r.fail(name+": msb doctor says the host is not ready:\n"+report,
			"msb boots each box as a KVM microVM; without KVM no box starts",
			"fix what msb doctor lists, on the host: usually /dev/kvm is missing (enable virtualisation, or nested virtualisation on a VM) or the user is not in the kvm group (usermod -aG kvm <user>)")
	default:
		r.ok(name, "msb doctor: KVM and host setup ready")
	}
	if cfg.Sandbox.Snapshot != "" {
		found, err := m.SnapshotExists(ctx, cfg.Sandbox.Snapshot)
		switch {
		case err != nil:
			r.fail(name+": cannot list snapshots ("+app.ErrorMessage(err)+")", down, "run `msb snapshot ls` on the host and fix what it reports")
		case !found:
			bake := "asb bake --name " + cfg.Sandbox.Snapshot
			if len(cfg.Sandbox.Hosts) > 1 {
				bake += " --host " + h.spec.String()
			}
			r.fail(name+": snapshot "+cfg.Sandbox.Snapshot+" does not exist", "boxes boot from MSB_SNAPSHOT, so none can start on this host",
				"run `"+bake+"`, or unset MSB_SNAPSHOT to boot from MSB_IMAGE")
		default:
			r.ok(name, "snapshot "+cfg.Sandbox.Snapshot+" is there")
		}
		return
	}
	found, err := m.ImageCached(ctx, cfg.Sandbox.Image)
	switch {
	case err != nil:
		r.fail(name+": cannot list images ("+app.ErrorMessage(err)+")", down, "run `msb image ls` on the host and fix what it reports")
	case !found:
		r.fail(name+": image "+cfg.Sandbox.Image+" is not pulled", "boxes boot with --pull never, so none can start on this host",
			"run `msb pull "+cfg.Sandbox.Image+"` on the host (as the user asb logs in as), or bake a snapshot with `asb bake`")
	default:
		r.ok(name, "image "+cfg.Sandbox.Image+" is pulled")
	}
}

// hostOf and portOf split a host entry's address for an ssh command line.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func portOf(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return "22"
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n             ")
}
