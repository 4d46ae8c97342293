// Command asb is the agent-sandbox controller: a self-hosted GitHub App bot
// that runs coding agents in microVMs. See README.md and docs/.
//
// main is the only place that knows every concrete type: it parses the
// configuration once and wires the adapters into the core. It holds no
// business logic.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) int
}

// environment is what a subcommand may touch; tests supply their own.
type environment struct {
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// dotenv is the .env file to read; "" means ".env" in the working directory.
	dotenv string
	// ready, when set, receives the listening address once serve accepts requests.
	ready chan<- string
	// hookBinary overrides where serve finds the asb-hook binary (tests).
	hookBinary string
}

func commands() []command {
	return []command{
		{"serve", "run the controller: HTTP (health, readiness, metrics), the scheduler", runServe},
		{"migrate", "apply database migrations and exit", runMigrate},
		{"user", "manage users of a multi-user controller: add, token, plan, list (as the operator)", runUser},
		{"doctor", "check the configuration, the database and the hosts, and say what to fix", runDoctor},
		{"bake", "build the pool snapshot (agent CLI and git preinstalled) on a sandbox host", runBake},
		{"monitor", "list the fleet of a running controller (waiting runs first)", runMonitor},
		{"watch", "follow one session live: agent output, state changes, questions", runWatch},
		{"ask", "ask a session's read-only co-pilot a question (or one per line from stdin)", runAsk},
		{"mcp", "serve the MCP tools on stdio for an IDE, forwarding to a running controller", runMCP},
		{"healthcheck", "exit 0 if the controller on ASB_ADDR answers /healthz (container health checks)", runHealthcheck},
		{"version", "print the version", runVersion},
	}
}

func main() {
	env := &environment{environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(run(context.Background(), env, os.Args[1:]))
}

func run(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "asb: unknown command %q\n\n", args[0])
	usage(env.stderr)
	return 2
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("asb runs coding agents in microVMs, driven from GitHub, MCP and a dashboard.\n\nUsage:\n  asb <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'asb <command> --help' for a command's flags. Configuration comes from the environment\nand a .env file in the working directory; see docs/configuration.md.\n")
	io.WriteString(w, b.String())
}

func runVersion(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "version", "Print the version.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fmt.Fprintf(env.stdout, "asb %s\n", version)
	return 0
}
