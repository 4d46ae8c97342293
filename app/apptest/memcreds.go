package apptest

import (
	"sort"
	"time"

	"github.com/asb-dev/asb/app"
)

// memDigested is a credential stored with the digest of its secret.
type memDigested[T any] struct {
	rec    T
	digest string
}

// memCreds holds, once, how the in-memory store keeps an account's
// credentials that are found by the digest of their secret: API keys and
// signed-in devices.
type memCreds[T any] struct {
	noun    string // "API key", in the update's ENOTFOUND error
	id      func(T) string
	account func(T) app.AccountID
	created func(T) time.Time
}

// insert stores rec for an existing account; its id and digest are unique.
func (k memCreds[T]) insert(t *memTx, m map[string]memDigested[T], rec T, digest []byte) error {
	if _, ok := t.st.users[k.account(rec)]; !ok {
		return app.Errorf(app.ENOTFOUND, "a referenced object does not exist")
	}
	for id, o := range m {
		if id == k.id(rec) || o.digest == string(digest) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	m[k.id(rec)] = memDigested[T]{rec: rec, digest: string(digest)}
	return nil
}

func (k memCreds[T]) byDigest(m map[string]memDigested[T], digest []byte) (T, error) {
	for _, o := range m {
		if o.digest == string(digest) {
			return o.rec, nil
		}
	}
	var zero T
	return zero, app.Errorf(app.ENOTFOUND, "not found")
}

// list returns account's credentials, newest first.
func (k memCreds[T]) list(m map[string]memDigested[T], account app.AccountID) []T {
	out := []T{}
	for _, o := range m {
		if k.account(o.rec) == account {
			out = append(out, o.rec)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if ci, cj := k.created(out[i]), k.created(out[j]); !ci.Equal(cj) {
			return ci.After(cj)
		}
		return k.id(out[i]) > k.id(out[j])
	})
	return out
}

// update changes the stored credential id with apply.
func (k memCreds[T]) update(m map[string]memDigested[T], id string, apply func(*T)) error {
	o, ok := m[id]
	if !ok {
		return app.Errorf(app.ENOTFOUND, "%s %s not found", k.noun, id)
	}
	apply(&o.rec)
	m[id] = o
	return nil
}
