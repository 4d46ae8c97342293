package sqlite

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"

	"github.com/jmoiron/sqlx"
)

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// Migrate applies every migration in fsys that the database has not seen,
// in order, each in its own transaction together with its row in
// schema_migrations. A failing file leaves the schema as it was before
// that file and stops with the file's name in the error.
func Migrate(ctx context.Context, db *sqlx.DB, fsys fs.FS) (applied []string, err error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	type file struct {
		version int
		name    string
	}
	var files []file
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !isSQL(e.Name()) {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_lowercase_words.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		files = append(files, file{v, e.Name()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].version < files[j].version })
	for _, f := range files {
		done, err := applyOne(ctx, db, fsys, f.version, f.name)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, f.name)
		}
	}
	return applied, nil
}

func isSQL(name string) bool { return len(name) > 4 && name[len(name)-4:] == ".sql" }

func applyOne(ctx context.Context, db *sqlx.DB, fsys fs.FS, version int, name string) (bool, error) {
	body, err := fs.ReadFile(fsys, name)
	if err != nil {
		return false, fmt.Errorf("migration %s: read: %w", name, err)
	}
	// The DSN makes this BEGIN IMMEDIATE, so two processes starting at
	// once cannot both apply the same file.
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migration %s: begin: %w", name, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version); err != nil {
		return false, fmt.Errorf("migration %s: check: %w", name, err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return false, fmt.Errorf("migration %s failed (nothing of it was applied): %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, version, name); err != nil {
		return false, fmt.Errorf("migration %s: record: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migration %s: commit: %w", name, err)
	}
	return true, nil
}
