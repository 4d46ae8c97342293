package apptest

import (
	"slices"
	"sort"
	"strings"

	"github.com/asb-dev/asb/app"
)

// memSealed is one stored record with its sealed secret.
type memSealed[T any] struct {
	rec    T
	sealed []byte
}

// memOwned holds, once, how the in-memory store keeps records that one
// owner stores under a name unique to that owner (case-insensitively) and
// that carry a sealed secret: GitHub accounts (by login) and MCP servers
// (by name).
type memOwned[T any] struct {
	noun  string // "GitHub account", in the ENOTFOUND error
	id    func(T) string
	owner func(T) app.AccountID
	name  func(T) string
	clone func(T) T
}

func (k memOwned[T]) put(m map[string]memSealed[T], rec T, sealed []byte) error {
	for id, o := range m {
		if id != k.id(rec) && k.owner(o.rec) == k.owner(rec) && strings.EqualFold(k.name(o.rec), k.name(rec)) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	m[k.id(rec)] = memSealed[T]{rec: k.clone(rec), sealed: slices.Clone(sealed)}
	return nil
}

func (k memOwned[T]) get(m map[string]memSealed[T], id string) (T, []byte, error) {
	o, ok := m[id]
	if !ok {
		var zero T
		return zero, nil, app.Errorf(app.ENOTFOUND, "%s %s not found", k.noun, id)
	}
	return k.clone(o.rec), slices.Clone(o.sealed), nil
}

// list returns owner's records ("" for every owner's) by name, then owner.
func (k memOwned[T]) list(m map[string]memSealed[T], owner app.AccountID) []T {
	out := []T{}
	for _, o := range m {
		if owner == "" || k.owner(o.rec) == owner {
			out = append(out, k.clone(o.rec))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ni, nj := strings.ToLower(k.name(out[i])), strings.ToLower(k.name(out[j]))
		if ni != nj {
			return ni < nj
		}
		return k.owner(out[i]) < k.owner(out[j])
	})
	return out
}

func (k memOwned[T]) del(m map[string]memSealed[T], id string) error {
	if _, ok := m[id]; !ok {
		return app.Errorf(app.ENOTFOUND, "%s %s not found", k.noun, id)
	}
	delete(m, id)
	return nil
}
