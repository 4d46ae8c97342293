package apptest

import (
	"sort"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

var keyCreds = memCreds[app.APIKey]{
	noun:    "API key",
	id:      func(k app.APIKey) string { return k.ID },
	account: func(k app.APIKey) app.AccountID { return k.Account },
	created: func(k app.APIKey) time.Time { return k.CreatedAt },
}

var deviceCreds = memCreds[app.Device]{
	noun:    "device",
	id:      func(d app.Device) string { return d.ID },
	account: func(d app.Device) app.AccountID { return d.Account },
	created: func(d app.Device) time.Time { return d.CreatedAt },
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
	return keyCreds.insert(t, t.st.keys, *k, digest)
}

func (t *memTx) APIKeyByDigest(digest []byte) (app.APIKey, error) {
	return keyCreds.byDigest(t.st.keys, digest)
}

func (t *memTx) ListAPIKeys(account app.AccountID) ([]app.APIKey, error) {
	return keyCreds.list(t.st.keys, account), nil
}

func (t *memTx) UpdateAPIKey(k *app.APIKey) error {
	return keyCreds.update(t.st.keys, k.ID, func(o *app.APIKey) { o.LastUsedAt, o.RevokedAt = k.LastUsedAt, k.RevokedAt })
}

func (t *memTx) InsertDevice(d *app.Device, digest []byte) error {
	return deviceCreds.insert(t, t.st.devices, *d, digest)
}

func (t *memTx) DeviceByDigest(digest []byte) (app.Device, error) {
	return deviceCreds.byDigest(t.st.devices, digest)
}

func (t *memTx) ListDevices(account app.AccountID) ([]app.Device, error) {
	return deviceCreds.list(t.st.devices, account), nil
}

func (t *memTx) UpdateDevice(d *app.Device) error {
	return deviceCreds.update(t.st.devices, d.ID, func(o *app.Device) { o.SeenAt, o.RevokedAt = d.SeenAt, d.RevokedAt })
}
