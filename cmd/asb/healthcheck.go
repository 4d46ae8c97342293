package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// runHealthcheck asks a running controller's /healthz, for container
// health checks: the runtime image has no curl, and the binary already
// knows where it listens.
func runHealthcheck(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "healthcheck", "Ask the controller on ASB_ADDR (or --url) whether it is up: exit 0 when /healthz answers 200,\n1 otherwise. For Docker's HEALTHCHECK and other supervisors.")
	url := fs.String("url", "", "base URL of the controller (default: http:// + ASB_ADDR, with a wildcard host replaced by loopback)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	base := *url
	if base == "" {
		cfg, ok := commandConfig(env)
		if !ok {
			return 1
		}
		base = "http://" + dialAddr(cfg.Addr)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		fmt.Fprintf(env.stderr, "asb healthcheck: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(env.stderr, "asb healthcheck: %s/healthz does not answer: %v\n", base, err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(env.stderr, "asb healthcheck: %s/healthz answered %s\n", base, resp.Status)
		return 1
	}
	fmt.Fprintln(env.stdout, "ok")
	return 0
}

// dialAddr turns a listen address into one to connect to: a wildcard or
// empty host means "every interface", which loopback reaches.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() == nil:
		host = "::1"
	case ip != nil && ip.IsUnspecified():
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
