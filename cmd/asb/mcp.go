package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	asbmcp "github.com/asb-dev/asb/mcp"
	"github.com/asb-dev/asb/sandbox/workspace"
)

// runMCP is the stdio MCP entry for IDEs that start a local process. It
// bridges to a running controller's /mcp endpoint, so the IDE's tasks run
// on the same fleet as everything else. stdout carries the protocol; every
// message for people goes to stderr.
func runMCP(ctx context.Context, env *environment, args []string) int {
	fs := clientFlagSet(env, "mcp", "", "Serve asb's MCP tools on stdin/stdout for an IDE, forwarding to a running controller's /mcp.\n"+
		"With WORKSPACE_DIR set (the project's absolute path, a git checkout), a delegate with source local, or with no\n"+
		"repo, uploads what git would commit from it (uncommitted changes included, .gitignore respected) plus .git.")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	c, code, ok := connectClient(env, "mcp")
	if !ok {
		return code
	}
	cfg, err := loadConfig(env)
	if err != nil {
		printConfigError(env.stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	o := asbmcp.BridgeOptions{Endpoint: c.url("/mcp", nil), Token: c.token, Version: version}
	if cfg.WorkspaceDir != "" {
		o.Workspace = workspaceUpload(c, cfg.WorkspaceDir, cfg.WorkspaceMaxBytes)
		// Said at start too, so a misconfiguration shows in the IDE's MCP log.
		if _, err := workspace.Root(ctx, cfg.WorkspaceDir); err != nil {
			fmt.Fprintf(env.stderr, "asb mcp: warning: WORKSPACE_DIR: %v; delegations of the local tree will be refused\n", err)
		}
	}
	server, closeRemote, err := asbmcp.Bridge(ctx, o)
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

// workspaceUpload lets the bridge ship dir (WORKSPACE_DIR) to the
// controller: what git would commit from it, plus .git.
func workspaceUpload(c *apiClient, dir string, maxBytes int64) *asbmcp.WorkspaceUpload {
	return &asbmcp.WorkspaceUpload{
		URL:       c.url("/workspaces", nil),
		Dir:       dir,
		BundleURL: c.url("/bundle", nil),
		Fetch:     fetchBundle(dir),
		Prepare: func(ctx context.Context) (asbmcp.Tree, error) {
			tree, err := workspace.List(ctx, dir, workspace.Limits{MaxBytes: maxBytes})
			if err != nil {
				return asbmcp.Tree{}, err
			}
			return asbmcp.Tree{Files: tree.Files, Bytes: tree.Bytes, Write: tree.Pack}, nil
		},
	}
}

// fetchBundle imports a bundle's HEAD as a new local branch of the
// repository holding dir. git fetch writes only that ref (it refuses the
// checked-out branch and a non-fast-forward), so the user's current
// branch, index and working tree are never touched.
func fetchBundle(dir string) func(ctx context.Context, bundle, branch string) error {
	return func(ctx context.Context, bundle, branch string) error {
		cmd := exec.CommandContext(ctx, "git", "-C", dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			bundle, "HEAD:refs/heads/"+branch)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			msg := strings.TrimSpace(string(out))
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			return fmt.Errorf("git fetch into %s: %v: %s", branch, err, msg)
		}
		return nil
	}
}
