package apptest

import (
	"sort"
	"strings"

	"github.com/asb-dev/asb/app"
)

type memKey struct {
	key    app.APIKey
	digest string
}

type memDevice struct {
	dev    app.Device
	digest string
}

func (t *memTx) InsertAccount(a *app.Account) error {
	for _, o := range t.st.users {
		if o.ID == a.ID || o.Username == a.Username ||
			a.GitHubLogin != "" && strings.EqualFold(o.GitHubLogin, a.GitHubLogin) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.users[a.ID] = *a
	return nil
}

func (t *memTx) GetAccount(id app.AccountID) (app.Account, error) {
	a, ok := t.st.users[id]
	if !ok {
		return app.Account{}, app.Errorf(app.ENOTFOUND, "account %s not found", id)
	}
	return a, nil
}

func (t *memTx) AccountByUsername(username string) (app.Account, error) {
	for _, a := range t.st.users {
		if a.Username == username {
			return a, nil
		}
	}
	return app.Account{}, app.Errorf(app.ENOTFOUND, "account %s not found", username)
}

func (t *memTx) AccountByGitHubLogin(login string) (app.Account, error) {
	for _, a := range t.st.users {
		if login != "" && strings.EqualFold(a.GitHubLogin, login) {
			return a, nil
		}
	}
	return app.Account{}, app.Errorf(app.ENOTFOUND, "no account for %s", login)
}

func (t *memTx) UpdateAccount(a *app.Account) error {
	if _, ok := t.st.users[a.ID]; !ok {
		return app.Errorf(app.ENOTFOUND, "account %s not found", a.ID)
	}
	for _, o := range t.st.users {
		if o.ID != a.ID && (o.Username == a.Username ||
			a.GitHubLogin != "" && strings.EqualFold(o.GitHubLogin, a.GitHubLogin)) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.users[a.ID] = *a
	return nil
}

func (t *memTx) ListAccounts() ([]app.Account, error) {
	out := make([]app.Account, 0, len(t.st.users))
	for _, a := range t.st.users {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (t *memTx) InsertAPIKey(k *app.APIKey, digest []byte) error {
	if _, ok := t.st.users[k.Account]; !ok {
		return app.Errorf(app.ENOTFOUND, "a referenced object does not exist")
	}
	for id, o := range t.st.keys {
		if id == k.ID || o.digest == string(digest) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.keys[k.ID] = memKey{key: *k, digest: string(digest)}
	return nil
}

func (t *memTx) APIKeyByDigest(digest []byte) (app.APIKey, error) {
	for _, o := range t.st.keys {
		if o.digest == string(digest) {
			return o.key, nil
		}
	}
	return app.APIKey{}, app.Errorf(app.ENOTFOUND, "not found")
}

func (t *memTx) ListAPIKeys(account app.AccountID) ([]app.APIKey, error) {
	out := []app.APIKey{}
	for _, o := range t.st.keys {
		if o.key.Account == account {
			out = append(out, o.key)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func (t *memTx) UpdateAPIKey(k *app.APIKey) error {
	o, ok := t.st.keys[k.ID]
	if !ok {
		return app.Errorf(app.ENOTFOUND, "API key %s not found", k.ID)
	}
	o.key.LastUsedAt, o.key.RevokedAt = k.LastUsedAt, k.RevokedAt
	t.st.keys[k.ID] = o
	return nil
}

func (t *memTx) InsertDevice(d *app.Device, digest []byte) error {
	if _, ok := t.st.users[d.Account]; !ok {
		return app.Errorf(app.ENOTFOUND, "a referenced object does not exist")
	}
	for id, o := range t.st.devices {
		if id == d.ID || o.digest == string(digest) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.devices[d.ID] = memDevice{dev: *d, digest: string(digest)}
	return nil
}

func (t *memTx) DeviceByDigest(digest []byte) (app.Device, error) {
	for _, o := range t.st.devices {
		if o.digest == string(digest) {
			return o.dev, nil
		}
	}
	return app.Device{}, app.Errorf(app.ENOTFOUND, "not found")
}

func (t *memTx) ListDevices(account app.AccountID) ([]app.Device, error) {
	out := []app.Device{}
	for _, o := range t.st.devices {
		if o.dev.Account == account {
			out = append(out, o.dev)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func (t *memTx) UpdateDevice(d *app.Device) error {
	o, ok := t.st.devices[d.ID]
	if !ok {
		return app.Errorf(app.ENOTFOUND, "device %s not found", d.ID)
	}
	o.dev.SeenAt, o.dev.RevokedAt = d.SeenAt, d.RevokedAt
	t.st.devices[d.ID] = o
	return nil
}
