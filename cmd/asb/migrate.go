package main

import (
	"context"
	"fmt"

	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/migrations"
)

func runMigrate(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "migrate", "Apply the database migrations (serve also does this at start) and exit.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, ok := commandConfig(env)
	if !ok {
		return 2
	}
	if err := ensureDataDir(cfg); err != nil {
		fmt.Fprintln(env.stderr, "asb migrate:", err)
		return 1
	}
	store, err := sqlite.OpenWith(ctx, dbPath(cfg), nil)
	if err != nil {
		fmt.Fprintln(env.stderr, "asb migrate:", err)
		return 1
	}
	defer store.Close()
	applied, err := sqlite.Migrate(ctx, store.DB(), migrations.FS)
	for _, name := range applied {
		fmt.Fprintf(env.stdout, "applied %s\n", name)
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "asb migrate:", err)
		return 1
	}
	if len(applied) == 0 {
		fmt.Fprintf(env.stdout, "%s is up to date\n", dbPath(cfg))
	}
	return 0
}
