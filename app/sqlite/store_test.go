package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/app/storetest"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "asb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) app.Store { return openStore(t) })
}

func TestDSNSettingsReachEveryConnection(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	// Hold several connections at once so the pool opens more than one.
	var conns []func()
	for i := 0; i < 3; i++ {
		c, err := s.DB().Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		var fk, busy int
		if err := c.GetContext(ctx, &mode, "PRAGMA journal_mode"); err != nil {
			t.Fatal(err)
		}
		if err := c.GetContext(ctx, &fk, "PRAGMA foreign_keys"); err != nil {
			t.Fatal(err)
		}
		if err := c.GetContext(ctx, &busy, "PRAGMA busy_timeout"); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != 10000 {
			t.Fatalf("connection %d: journal_mode=%s foreign_keys=%d busy_timeout=%d", i, mode, fk, busy)
		}
		conns = append(conns, func() { c.Close() })
	}
	for _, c := range conns {
		c()
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sqlite")
	ctx := context.Background()
	fsys := fstest.MapFS{
		"0001_one.sql": {Data: []byte("CREATE TABLE one (a INTEGER);")},
		"0002_two.sql": {Data: []byte("CREATE TABLE two (b INTEGER); INSERT INTO two VALUES (1);")},
		"README.md":    {Data: []byte("not a migration")},
	}
	s, err := sqlite.OpenWith(ctx, path, fsys)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A second start applies nothing: the INSERT would double the row.
	s, err = sqlite.OpenWith(ctx, path, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.DB().GetContext(ctx, &n, "SELECT count(*) FROM two"); err != nil || n != 1 {
		t.Fatalf("rows in two = %d (%v); a migration ran twice", n, err)
	}
	applied, err := sqlite.Migrate(ctx, s.DB(), fsys)
	if err != nil || len(applied) != 0 {
		t.Fatalf("re-run applied %v, %v", applied, err)
	}
	if err := s.DB().GetContext(ctx, &n, "SELECT count(*) FROM schema_migrations"); err != nil || n != 2 {
		t.Fatalf("schema_migrations rows = %d (%v)", n, err)
	}
}

func TestFailingMigrationLeavesSchemaUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sqlite")
	ctx := context.Background()
	good := fstest.MapFS{"0001_one.sql": {Data: []byte("CREATE TABLE one (a INTEGER);")}}
	s, err := sqlite.OpenWith(ctx, path, good)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	bad := fstest.MapFS{
		"0001_one.sql":    good["0001_one.sql"],
		"0002_broken.sql": {Data: []byte("CREATE TABLE half (a INTEGER); ALTER TABLE one ADD COLUMN b TEXT; CREATE TABLEX oops;")},
	}
	_, err = sqlite.OpenWith(ctx, path, bad)
	if err == nil || !strings.Contains(err.Error(), "0002_broken.sql") {
		t.Fatalf("error %v does not name the failing file", err)
	}
	s, err = sqlite.OpenWith(ctx, path, good)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.DB().GetContext(ctx, &n, "SELECT count(*) FROM sqlite_master WHERE name = 'half'"); err != nil || n != 0 {
		t.Fatalf("table from the failed migration exists (%d, %v)", n, err)
	}
	if err := s.DB().GetContext(ctx, &n, "SELECT count(*) FROM pragma_table_info('one') WHERE name = 'b'"); err != nil || n != 0 {
		t.Fatalf("column from the failed migration exists (%d, %v)", n, err)
	}
	if err := s.DB().GetContext(ctx, &n, "SELECT count(*) FROM schema_migrations WHERE version = 2"); err != nil || n != 0 {
		t.Fatalf("failed migration recorded (%d, %v)", n, err)
	}
}

func TestMigrationNamesAreChecked(t *testing.T) {
	ctx := context.Background()
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":    {"1_x.sql": {Data: []byte("SELECT 1;")}},
		"dup version": {"0001_a.sql": {Data: []byte("SELECT 1;")}, "0001_b.sql": {Data: []byte("SELECT 1;")}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sqlite.OpenWith(ctx, filepath.Join(t.TempDir(), "m.sqlite"), fsys)
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestDeliveriesAreRecordedOnce(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	now := time.Now()
	for i := 0; i < 5; i++ {
		isNew, err := s.RecordDelivery(ctx, "d-1", "issue_comment", "created", []byte(`{}`), now)
		if err != nil {
			t.Fatal(err)
		}
		if isNew != (i == 0) {
			t.Fatalf("attempt %d: new=%v", i, isNew)
		}
	}
	pending, err := s.PendingDeliveries(ctx, 10)
	if err != nil || len(pending) != 1 || pending[0].ID != "d-1" {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if err := s.MarkDeliveryProcessed(ctx, "d-1", now, ""); err != nil {
		t.Fatal(err)
	}
	if pending, _ := s.PendingDeliveries(ctx, 10); len(pending) != 0 {
		t.Fatalf("still pending: %+v", pending)
	}
	if err := s.MarkDeliveryProcessed(ctx, "d-unknown", now, ""); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("unknown delivery: %v", err)
	}
}

func TestCursors(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	v, etag, err := s.Cursor(ctx, "repo:acme/api:comments")
	if err != nil || v != "" || etag != "" {
		t.Fatalf("empty cursor = %q %q %v", v, etag, err)
	}
	if err := s.PutCursor(ctx, "repo:acme/api:comments", "2026-11-29T10:00:00Z", `W/"abc"`, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCursor(ctx, "repo:acme/api:comments", "2026-11-29T11:00:00Z", `W/"def"`, time.Now()); err != nil {
		t.Fatal(err)
	}
	v, etag, err = s.Cursor(ctx, "repo:acme/api:comments")
	if err != nil || v != "2026-11-29T11:00:00Z" || etag != `W/"def"` {
		t.Fatalf("cursor = %q %q %v", v, etag, err)
	}
}
