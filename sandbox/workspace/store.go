package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asb-dev/asb/app"
)

// Options tune a Store.
type Options struct {
	Limits Limits
	// TTL is how long a workspace is kept after its upload, or after it
	// was taken, when nothing releases it. Default one hour.
	TTL time.Duration
	// MaxPerOwner caps the workspaces one account may have waiting.
	MaxPerOwner int
	// Now is the clock the TTL is measured with; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Store implements app.Workspaces on a folder of the controller:
//
//	<root>/<id>/owner       the account that uploaded it
//	<root>/<id>/tree/       the working tree, staged
//	<root>/taken-<id>/…     the same once a delegation claimed it
//	<root>/tmp-<id>/…       an upload in progress
//
// Renames make each step atomic, so a crash leaves nothing half-visible
// and the sweep removes leftovers by age.
type Store struct {
	root string
	o    Options
	mu   sync.Mutex // serialises Take against Take, Release and the sweep
}

// NewStore opens (creating it, mode 0700) the folder that holds workspaces.
func NewStore(root string, o Options) (*Store, error) {
	o.Limits = o.Limits.withDefaults()
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("workspace folder: %w", err)
	}
	return &Store{root: root, o: o}, nil
}

var _ app.Workspaces = (*Store)(nil)

const (
	takenPrefix = "taken-"
	tmpPrefix   = "tmp-"
	ownerFile   = "owner"
	treeDir     = "tree"
)

// Stage implements app.Workspaces.
func (s *Store) Stage(ctx context.Context, owner app.AccountID, r io.Reader) (string, error) {
	if owner == "" {
		return "", app.Errorf(app.EUNAUTHORIZED, "no caller identity")
	}
	if n := s.waiting(owner); n >= s.o.MaxPerOwner {
		return "", app.Errorf(app.ERATELIMIT, "you have %d uploaded workspaces waiting; delegate them or wait until they expire", n)
	}
	id := app.NewWorkspaceID()
	tmp := filepath.Join(s.root, tmpPrefix+id)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("stage a workspace: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.WriteFile(filepath.Join(tmp, ownerFile), []byte(owner), 0o600); err != nil {
		return "", fmt.Errorf("stage a workspace: %w", err)
	}
	tree := filepath.Join(tmp, treeDir)
	if err := os.Mkdir(tree, 0o755); err != nil {
		return "", fmt.Errorf("stage a workspace: %w", err)
	}
	if err := Extract(ctxReader{ctx, r}, tree, s.o.Limits); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(s.root, id)); err != nil {
		return "", fmt.Errorf("stage a workspace: %w", err)
	}
	s.touch(filepath.Join(s.root, id))
	ok = true
	return id, nil
}

// Take implements app.Workspaces.
func (s *Store) Take(ctx context.Context, owner app.AccountID, id string) (string, error) {
	if err := app.CheckWorkspaceID(id); err != nil {
		return "", err
	}
	notFound := app.Errorf(app.ENOTFOUND, "workspace %s not found (it is used once and expires after %s; upload it again)", id, s.o.TTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.root, id)
	got, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", notFound
	}
	if err != nil {
		return "", fmt.Errorf("read workspace %s: %w", id, err)
	}
	if app.AccountID(got) != owner {
		return "", notFound
	}
	if s.expired(dir) {
		_ = os.RemoveAll(dir)
		return "", notFound
	}
	taken := filepath.Join(s.root, takenPrefix+id)
	if err := os.Rename(dir, taken); err != nil {
		return "", fmt.Errorf("claim workspace %s: %w", id, err)
	}
	// The TTL now counts from the claim, so a queued delegation keeps it.
	s.touch(taken)
	return filepath.Join(taken, treeDir), nil
}

// Release implements app.Workspaces.
func (s *Store) Release(_ context.Context, id string) error {
	if err := app.CheckWorkspaceID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(os.RemoveAll(filepath.Join(s.root, id)), os.RemoveAll(filepath.Join(s.root, takenPrefix+id)))
}

// Sweep deletes every workspace, upload in progress included, older than
// the TTL, and returns how many it deleted.
func (s *Store) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := os.ReadDir(s.root)
	if err != nil {
		s.o.Logger.Warn("list uploaded workspaces", "err", err)
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.Contains(e.Name(), "ws_") {
			continue
		}
		dir := filepath.Join(s.root, e.Name())
		if !s.expired(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			s.o.Logger.Warn("delete an expired workspace", "workspace", e.Name(), "err", err)
			continue
		}
		n++
	}
	return n
}

// Run sweeps expired workspaces until ctx ends.
func (s *Store) Run(ctx context.Context) error {
	every := min(s.o.TTL/4, 5*time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n := s.Sweep(); n > 0 {
			s.o.Logger.Info("deleted expired workspaces", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// waiting counts the staged (not yet taken) workspaces of owner.
func (s *Store) waiting(owner app.AccountID) int {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "ws_") {
			continue
		}
		dir := filepath.Join(s.root, e.Name())
		if got, err := os.ReadFile(filepath.Join(dir, ownerFile)); err == nil && app.AccountID(got) == owner && !s.expired(dir) {
			n++
		}
	}
	return n
}

func (s *Store) expired(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && s.o.Now().Sub(fi.ModTime()) > s.o.TTL
}

func (s *Store) touch(dir string) {
	now := s.o.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		s.o.Logger.Warn("mark a workspace's time", "err", err)
	}
}

// ctxReader stops reading an upload once its request is gone.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
