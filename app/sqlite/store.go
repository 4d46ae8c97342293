// Package sqlite implements app.Store on SQLite through sqlx and
// mattn/go-sqlite3, plus the GitHub delivery and poll-cursor records.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/migrations"
)

// Store is the SQLite app.Store.
type Store struct {
	db *sqlx.DB
}

var _ app.Store = (*Store)(nil)

// DSN returns the connection string for a database file: WAL, a busy
// timeout, foreign keys and immediate write transactions are set here so
// that every pooled connection has them.
func DSN(path string) string {
	u := url.URL{Scheme: "file", Opaque: path}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	q.Set("_synchronous", "NORMAL")
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens (creating if needed) the database file at path and applies
// the embedded migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, migrations.FS)
}

// OpenWith is Open with another set of migrations; a nil fsys applies
// none (asb migrate applies them itself to report what it did).
func OpenWith(ctx context.Context, path string, fsys fs.FS) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
	}
	db, err := sqlx.Open("sqlite3", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// One writer at a time is SQLite's model; a few connections let reads
	// proceed beside it under WAL.
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if fsys != nil {
		if _, err := Migrate(ctx, db, fsys); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &Store{db: db}, nil
}

// DB exposes the handle for health checks and tests.
func (s *Store) DB() *sqlx.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	return s.db.GetContext(ctx, &n, `SELECT 1`)
}

// Tx runs fn in one immediate transaction.
func (s *Store) Tx(ctx context.Context, fn func(app.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", mapErr(err))
	}
	defer tx.Rollback()
	if err := fn(&txn{ctx: ctx, q: tx}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	return nil
}

// View runs fn against committed data without a write transaction.
func (s *Store) View(ctx context.Context, fn func(app.Tx) error) error {
	return fn(&txn{ctx: ctx, q: s.db})
}

// mapErr turns constraint violations into app errors, and a lock held
// by another connection past the busy timeout into a retryable one.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return app.WrapError(app.ENOTFOUND, err, "not found")
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		if se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked {
			return app.WrapError(app.EUNAVAILABLE, err, "the database is busy: another connection held its lock past the busy timeout; try again")
		}
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return app.WrapError(app.ECONFLICT, err, "already exists")
		case sqlite3.ErrConstraintForeignKey:
			return app.WrapError(app.ENOTFOUND, err, "a referenced object does not exist")
		}
	}
	return err
}
