package sqlite

import (
	"strings"

	"github.com/asb-dev/asb/app"
)

type accountRow struct {
	ID           string `db:"id"`
	Username     string `db:"username"`
	Email        string `db:"email"`
	GitHubLogin  string `db:"github_login"`
	PasswordHash string `db:"password_hash"`
	Admin        bool   `db:"admin"`
	Plan         string `db:"plan"`
	TrialEndsAt  string `db:"trial_ends_at"`
	Disabled     bool   `db:"disabled"`
	CreatedAt    string `db:"created_at"`
}

func (r accountRow) account() app.Account {
	return app.Account{ID: app.AccountID(r.ID), Username: r.Username, Email: r.Email, GitHubLogin: r.GitHubLogin,
		PasswordHash: r.PasswordHash, Admin: r.Admin, Plan: r.Plan, TrialEndsAt: parseTime(r.TrialEndsAt),
		Disabled: r.Disabled, CreatedAt: parseTime(r.CreatedAt)}
}

const accountCols = `id, username, email, github_login, password_hash, admin, plan, trial_ends_at, disabled, created_at`

func (t *txn) InsertAccount(a *app.Account) error {
	_, err := t.exec(`INSERT INTO accounts (`+accountCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		string(a.ID), a.Username, a.Email, a.GitHubLogin, a.PasswordHash, a.Admin, a.Plan,
		fmtTime(a.TrialEndsAt), a.Disabled, fmtTime(a.CreatedAt))
	return err
}

func (t *txn) getAccount(what string, key any, query string) (app.Account, error) {
	var r accountRow
	if err := t.get(&r, `SELECT `+accountCols+` FROM accounts WHERE `+query, key); err != nil {
		return app.Account{}, notFound(err, what, key)
	}
	return r.account(), nil
}

func (t *txn) GetAccount(id app.AccountID) (app.Account, error) {
	return t.getAccount("account", string(id), `id = ?`)
}

func (t *txn) AccountByUsername(username string) (app.Account, error) {
	return t.getAccount("account", username, `username = ?`)
}

func (t *txn) AccountByGitHubLogin(login string) (app.Account, error) {
	if login == "" {
		return app.Account{}, app.Errorf(app.ENOTFOUND, "no account for an empty login")
	}
	return t.getAccount("account for GitHub login", strings.ToLower(login), `github_login <> '' AND lower(github_login) = ?`)
}

func (t *txn) UpdateAccount(a *app.Account) error {
	res, err := t.exec(`UPDATE accounts SET username=?, email=?, github_login=?, password_hash=?, admin=?, plan=?,
		trial_ends_at=?, disabled=? WHERE id=?`,
		a.Username, a.Email, a.GitHubLogin, a.PasswordHash, a.Admin, a.Plan, fmtTime(a.TrialEndsAt), a.Disabled, string(a.ID))
	if err != nil {
		return err
	}
	return mustAffect(res, "account", a.ID)
}

func (t *txn) ListAccounts() ([]app.Account, error) {
	return selectRows(t, noErr(accountRow.account), `SELECT `+accountCols+` FROM accounts ORDER BY created_at, id`)
}

type apiKeyRow struct {
	ID         string `db:"id"`
	AccountID  string `db:"account_id"`
	Name       string `db:"name"`
	Kind       string `db:"kind"`
	Prefix     string `db:"prefix"`
	CreatedAt  string `db:"created_at"`
	LastUsedAt string `db:"last_used_at"`
	RevokedAt  string `db:"revoked_at"`
}

func (r apiKeyRow) key() app.APIKey {
	return app.APIKey{ID: r.ID, Account: app.AccountID(r.AccountID), Name: r.Name, Kind: r.Kind, Prefix: r.Prefix,
		CreatedAt: parseTime(r.CreatedAt), LastUsedAt: parseTime(r.LastUsedAt), RevokedAt: parseTime(r.RevokedAt)}
}

const apiKeyCols = `id, account_id, name, kind, prefix, created_at, last_used_at, revoked_at`

func (t *txn) InsertAPIKey(k *app.APIKey, digest []byte) error {
	_, err := t.exec(`INSERT INTO api_keys (id, account_id, name, kind, prefix, hash, created_at, last_used_at, revoked_at)
		VALUES (?,?,?,?,?,?,?,?,?)`, k.ID, string(k.Account), k.Name, k.Kind, k.Prefix, digest,
		fmtTime(k.CreatedAt), fmtTime(k.LastUsedAt), fmtTime(k.RevokedAt))
	return err
}

func (t *txn) APIKeyByDigest(digest []byte) (app.APIKey, error) {
	var r apiKeyRow
	if err := t.get(&r, `SELECT `+apiKeyCols+` FROM api_keys WHERE hash = ?`, digest); err != nil {
		return app.APIKey{}, notFound(err, "API key", "")
	}
	return r.key(), nil
}

func (t *txn) ListAPIKeys(account app.AccountID) ([]app.APIKey, error) {
	return selectRows(t, noErr(apiKeyRow.key),
		`SELECT `+apiKeyCols+` FROM api_keys WHERE account_id = ? ORDER BY created_at DESC, id DESC`, string(account))
}

func (t *txn) UpdateAPIKey(k *app.APIKey) error {
	res, err := t.exec(`UPDATE api_keys SET last_used_at = ?, revoked_at = ? WHERE id = ?`,
		fmtTime(k.LastUsedAt), fmtTime(k.RevokedAt), k.ID)
	if err != nil {
		return err
	}
	return mustAffect(res, "API key", k.ID)
}

type deviceRow struct {
	ID        string `db:"id"`
	AccountID string `db:"account_id"`
	UserAgent string `db:"user_agent"`
	ClientIP  string `db:"client_ip"`
	CreatedAt string `db:"created_at"`
	SeenAt    string `db:"seen_at"`
	RevokedAt string `db:"revoked_at"`
}

func (r deviceRow) device() app.Device {
	return app.Device{ID: r.ID, Account: app.AccountID(r.AccountID), UserAgent: r.UserAgent, ClientIP: r.ClientIP,
		CreatedAt: parseTime(r.CreatedAt), SeenAt: parseTime(r.SeenAt), RevokedAt: parseTime(r.RevokedAt)}
}

const deviceCols = `id, account_id, user_agent, client_ip, created_at, seen_at, revoked_at`

func (t *txn) InsertDevice(d *app.Device, digest []byte) error {
	_, err := t.exec(`INSERT INTO devices (id, account_id, hash, user_agent, client_ip, created_at, seen_at, revoked_at)
		VALUES (?,?,?,?,?,?,?,?)`, d.ID, string(d.Account), digest, d.UserAgent, d.ClientIP,
		fmtTime(d.CreatedAt), fmtTime(d.SeenAt), fmtTime(d.RevokedAt))
	return err
}

func (t *txn) DeviceByDigest(digest []byte) (app.Device, error) {
	var r deviceRow
	if err := t.get(&r, `SELECT `+deviceCols+` FROM devices WHERE hash = ?`, digest); err != nil {
		return app.Device{}, notFound(err, "device", "")
	}
	return r.device(), nil
}

func (t *txn) ListDevices(account app.AccountID) ([]app.Device, error) {
	return selectRows(t, noErr(deviceRow.device),
		`SELECT `+deviceCols+` FROM devices WHERE account_id = ? ORDER BY created_at DESC, id DESC`, string(account))
}

func (t *txn) UpdateDevice(d *app.Device) error {
	res, err := t.exec(`UPDATE devices SET seen_at = ?, revoked_at = ? WHERE id = ?`,
		fmtTime(d.SeenAt), fmtTime(d.RevokedAt), d.ID)
	if err != nil {
		return err
	}
	return mustAffect(res, "device", d.ID)
}

func mustAffect(res interface{ RowsAffected() (int64, error) }, what string, id any) error {
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return app.Errorf(app.ENOTFOUND, "%s %v not found", what, id)
	}
	return nil
}
