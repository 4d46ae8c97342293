package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/asb-dev/asb/sandbox"
)

func runBake(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "bake", "Build the pool snapshot on a sandbox host: boot MSB_IMAGE with open egress, install git and the\nagent CLI, and save it as a snapshot. Then set MSB_SNAPSHOT to its name so boxes boot ready to work.")
	name := fs.String("name", "agent-base", "snapshot name")
	hostFlag := fs.String("host", "", "host to bake on (default: the first in SANDBOX_HOSTS)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, ok := commandConfig(env)
	if !ok {
		return 2
	}
	log := newLogger(cfg, env.stderr)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hosts, err := openHosts(cfg, log)
	if err != nil {
		fmt.Fprintln(env.stderr, "asb bake:", err)
		return 1
	}
	defer closeHosts(hosts)
	h, err := pickHost(hosts, *hostFlag)
	if err != nil {
		fmt.Fprintln(env.stderr, "asb bake:", err)
		return 2
	}
	m := sandbox.NewMSB(h.transport, cfg.Sandbox.MSBPath)
	spec := sandbox.BakeSpec{Name: *name, Image: cfg.Sandbox.Image, MemoryMiB: cfg.Sandbox.MemoryMiB,
		Script: sandbox.DefaultBakeScript(cfg.Agent.Command), Progress: env.stderr}
	if err := sandbox.Bake(ctx, m, spec, log); err != nil {
		fmt.Fprintln(env.stderr, "asb bake:", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "Snapshot %s is ready on %s. Set MSB_SNAPSHOT=%s in .env and restart asb.\n", *name, h.spec, *name)
	return 0
}

func pickHost(hosts []host, name string) (host, error) {
	if len(hosts) == 0 {
		return host{}, fmt.Errorf("no sandbox host configured: set SANDBOX_HOSTS")
	}
	if name == "" {
		return hosts[0], nil
	}
	for _, h := range hosts {
		if h.spec.String() == name || h.spec.Raw == name {
			return h, nil
		}
	}
	var names []string
	for _, h := range hosts {
		names = append(names, h.spec.String())
	}
	return host{}, fmt.Errorf("host %q is not in SANDBOX_HOSTS (%v)", name, names)
}
