package apptest

import (
	"context"
	"io"
	"sync"

	"github.com/asb-dev/asb/app"
)

// FakeWorkspaces is an in-memory app.Workspaces: an upload is read and
// counted, and its "tree" is a path that names the id.
type FakeWorkspaces struct {
	mu       sync.Mutex
	owners   map[string]app.AccountID
	taken    map[string]bool
	released []string
}

var _ app.Workspaces = (*FakeWorkspaces)(nil)

// NewFakeWorkspaces returns a store with no workspaces.
func NewFakeWorkspaces() *FakeWorkspaces {
	return &FakeWorkspaces{owners: map[string]app.AccountID{}, taken: map[string]bool{}}
}

// Path is where a taken workspace's tree "is".
func (f *FakeWorkspaces) Path(id string) string { return "/fake/workspaces/" + id }

func (f *FakeWorkspaces) Stage(ctx context.Context, owner app.AccountID, r io.Reader) (string, error) {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", app.Errorf(app.EINVALID, "the workspace archive is empty")
	}
	id := app.NewWorkspaceID()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owners[id] = owner
	return id, nil
}

func (f *FakeWorkspaces) Take(ctx context.Context, owner app.AccountID, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.owners[id]; !ok || o != owner || f.taken[id] {
		return "", app.Errorf(app.ENOTFOUND, "workspace %s not found", id)
	}
	f.taken[id] = true
	return f.Path(id), nil
}

func (f *FakeWorkspaces) Release(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.owners, id)
	f.released = append(f.released, id)
	return nil
}

// Released lists the ids released so far, in order.
func (f *FakeWorkspaces) Released() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.released...)
}
