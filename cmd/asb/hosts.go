package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
	"github.com/asb-dev/asb/sandbox"
)

// host pairs a configured host with its transport.
type host struct {
	spec      config.Host
	transport sandbox.Transport
}

// openHosts builds one transport per configured host. SSH transports dial
// lazily, so this never blocks on a host that is down.
func openHosts(cfg *config.Config, log *slog.Logger) ([]host, error) {
	var out []host
	for _, h := range cfg.Sandbox.Hosts {
		var t sandbox.Transport
		switch h.Kind {
		case config.HostLocal:
			t = sandbox.NewLocalTransport(log)
		case config.HostSSH:
			st, err := sandbox.NewSSHTransport(sandbox.SSHConfig{
				User: h.User, Addr: h.Addr, KeyFile: cfg.Sandbox.SSHKeyFile, KnownHostsFile: cfg.Sandbox.SSHKnownHosts,
				DialTimeout: 10 * time.Second, Logger: log,
			})
			if err != nil {
				closeHosts(out)
				return nil, fmt.Errorf("host %s: %w", h, err)
			}
			t = st
		default:
			closeHosts(out)
			return nil, fmt.Errorf("host %s: unknown kind %q", h, h.Kind)
		}
		out = append(out, host{spec: h, transport: t})
	}
	return out, nil
}

func closeHosts(hs []host) {
	for _, h := range hs {
		h.transport.Close()
	}
}

// modelHost is the model endpoint's host name, which boxes must reach.
func modelHost(cfg *config.Config) string {
	if cfg.Agent.AnthropicBaseURL != "" {
		if u, err := url.Parse(cfg.Agent.AnthropicBaseURL); err == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}
	return "api.anthropic.com"
}

// registryHosts are the package registries a coding agent needs. GitHub is
// deliberately absent: the controller clones and pushes, and an open path
// to github.com would be a way out for anything the agent reads.
var registryHosts = []string{
	"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "proxy.golang.org", "sum.golang.org",
	"index.crates.io", "static.crates.io", "rubygems.org", "repo.maven.apache.org",
}

// egress is the boxes' base network policy.
func egress(cfg *config.Config) sandbox.Egress {
	if cfg.Sandbox.EgressAllowAll {
		return sandbox.Egress{AllowAll: true}
	}
	domains := append([]string{modelHost(cfg)}, registryHosts...)
	return sandbox.Egress{Domains: append(domains, cfg.Sandbox.EgressDomains...)}
}

// newFleet puts the configured hosts under one placement, pool and
// reconcile loop.
func newFleet(cfg *config.Config, store app.Store, hosts []host, log *slog.Logger) (*sandbox.Fleet, error) {
	specs := make([]sandbox.HostSpec, 0, len(hosts))
	for _, h := range hosts {
		specs = append(specs, sandbox.HostSpec{Name: h.spec.String(), Transport: h.transport, MSBPath: cfg.Sandbox.MSBPath,
			MaxBoxes: cfg.Sandbox.MaxBoxes, Drain: slices.Contains(cfg.Sandbox.Drain, h.spec.String())})
	}
	return sandbox.NewFleet(sandbox.FleetConfig{
		Hosts: specs, Store: store, Logger: log,
		Defaults: sandbox.BoxDefaults{
			Image: cfg.Sandbox.Image, Snapshot: cfg.Sandbox.Snapshot, MemoryMiB: cfg.Sandbox.MemoryMiB,
			IdleTimeout: cfg.Sandbox.IdleTimeout, MaxDuration: cfg.Sandbox.MaxDuration,
			Egress: egress(cfg), PoolSize: cfg.Sandbox.PoolSize,
		},
	})
}

// newSandbox runs agents in the fleet's boxes as configured.
func newSandbox(cfg *config.Config, env *environment, fleet *sandbox.Fleet, fetch func(context.Context, app.Source) (string, func(), error), log *slog.Logger) *sandbox.Sandbox {
	rc := sandbox.RuntimeConfig{
		Fetch:        fetch,
		AgentCommand: cfg.Agent.Command,
		Model:        cfg.Agent.Model,
		AskModel:     cfg.Agent.AskModel,
		AgentEnv:     map[string]string{},
		AgentSecrets: map[string]string{},
		BundleDir:    filepath.Join(cfg.DataDir, "bundles"),
	}
	if cfg.Agent.AnthropicBaseURL != "" {
		rc.AgentEnv["ANTHROPIC_BASE_URL"] = cfg.Agent.AnthropicBaseURL
	}
	if cfg.Agent.Model != "" {
		rc.AgentEnv["ANTHROPIC_MODEL"] = cfg.Agent.Model
	}
	if cfg.Agent.AnthropicAPIKey.IsSet() {
		rc.AgentSecrets["ANTHROPIC_API_KEY"] = cfg.Agent.AnthropicAPIKey.Reveal()
	}
	if cfg.Agent.NPMToken.IsSet() {
		rc.AgentSecrets["NPM_TOKEN"] = cfg.Agent.NPMToken.Reveal()
	}
	if hook := findHookBinary(env); hook != "" {
		rc.HookBinary = hook
		rc.HookSettings = sandbox.HookSettings()
	} else {
		log.Warn("the asb-hook binary was not found next to asb (run make build): boxes run without the gate and guard hooks")
	}
	return sandbox.New(fleet, rc, log)
}

// findHookBinary looks for the Linux asb-hook build that make build puts
// next to asb.
func findHookBinary(env *environment) string {
	if env.hookBinary != "" {
		return env.hookBinary
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	for _, name := range []string{"asb-hook-linux-" + runtime.GOARCH, "asb-hook"} {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// fleetCheck is the readiness check once a fleet runs: at least one host
// answered its last probe.
func fleetCheck(f *sandbox.Fleet) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		hs, err := f.Hosts(ctx)
		if err != nil {
			return err
		}
		var problems []string
		for _, h := range hs {
			if h.Healthy {
				return nil
			}
			p := h.Problem
			if h.Checked.IsZero() {
				p = "not checked yet"
			}
			problems = append(problems, fmt.Sprintf("%s: %s", h.Name, p))
		}
		return fmt.Errorf("no sandbox host answers: %s", strings.Join(problems, "; "))
	}
}

// drainCheck reports, on /readyz, each draining host and how many
// session boxes it still holds; at 0 it can leave service.
func drainCheck(f *sandbox.Fleet) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		hs, err := f.Hosts(ctx)
		if err != nil {
			return err
		}
		var draining []string
		for _, h := range hs {
			if h.Draining {
				draining = append(draining, fmt.Sprintf("%s: %d session boxes left", h.Name, h.Boxes))
			}
		}
		if len(draining) == 0 {
			return nil
		}
		return fmt.Errorf("draining (SANDBOX_DRAIN) %s", strings.Join(draining, "; "))
	}
}

// unconfiguredSandbox stands in for the sandbox driver until hosts can
// take boxes: runs stay in "starting" and retry, with a clear reason,
// instead of failing.
type unconfiguredSandbox struct{ reason string }

func (u unconfiguredSandbox) err() error { return app.Errorf(app.EUNAVAILABLE, "%s", u.reason) }

func (u unconfiguredSandbox) EnsureBox(context.Context, app.BoxSpec) (app.BoxRef, error) {
	return app.BoxRef{}, u.err()
}
func (u unconfiguredSandbox) Launch(context.Context, app.BoxRef, app.Turn) error { return u.err() }
func (u unconfiguredSandbox) Poll(context.Context, app.BoxRef, app.TurnRef, int64) (app.Progress, error) {
	return app.Progress{}, u.err()
}
func (u unconfiguredSandbox) Collect(context.Context, app.BoxRef, []app.Source) ([]app.Bundle, error) {
	return nil, u.err()
}
func (u unconfiguredSandbox) Kill(context.Context, app.BoxRef, app.TurnRef) error { return u.err() }
func (u unconfiguredSandbox) Remove(context.Context, app.BoxRef) error            { return u.err() }
func (u unconfiguredSandbox) Ask(context.Context, app.BoxRef, app.AskRequest) (app.AskAnswer, error) {
	return app.AskAnswer{}, u.err()
}
func (u unconfiguredSandbox) ListFiles(context.Context, app.BoxRef, string) ([]app.FileInfo, error) {
	return nil, u.err()
}
func (u unconfiguredSandbox) ReadFile(context.Context, app.BoxRef, string, int64, io.Writer) error {
	return u.err()
}
func (u unconfiguredSandbox) OpenBundle(string) (io.ReadCloser, int64, error) { return nil, 0, u.err() }
