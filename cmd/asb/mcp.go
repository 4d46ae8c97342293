package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	asbmcp "github.com/asb-dev/asb/mcp"
)

// runMCP is the stdio MCP entry for IDEs that start a local process. It
// bridges to a running controller's /mcp endpoint, so the IDE's tasks run
// on the same fleet as everything else. stdout carries the protocol; every
// message for people goes to stderr.
func runMCP(ctx context.Context, env *environment, args []string) int {
	fs := clientFlagSet(env, "mcp", "", "Serve asb's MCP tools on stdin/stdout for an IDE, forwarding to a running controller's /mcp.")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	c, code, ok := connectClient(env, "mcp")
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	server, closeRemote, err := asbmcp.Bridge(ctx, asbmcp.BridgeOptions{Endpoint: c.url("/mcp", nil), Token: c.token, Version: version})
	if err != nil {
		fmt.Fprintf(env.stderr, "asb mcp: %v\n", err)
		return 1
	}
	defer closeRemote()
	if err := asbmcp.ServeStdio(ctx, server, env.stdin, env.stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(env.stderr, "asb mcp: %v\n", err)
		return 1
	}
	return 0
}
