package sqlite

import (
	"strings"

	"github.com/asb-dev/asb/app"
)

type githubAccountRow struct {
	ID        string `db:"id"`
	Owner     string `db:"owner"`
	Login     string `db:"login"`
	LoginKey  string `db:"login_key"`
	Name      string `db:"name"`
	UserID    int64  `db:"user_id"`
	Orgs      string `db:"orgs"`
	Scopes    string `db:"scopes"`
	TokenType string `db:"token_type"`
	Sealed    []byte `db:"sealed"`
	AddedAt   string `db:"added_at"`
	CheckedAt string `db:"checked_at"`
}

func (r githubAccountRow) account() (app.GitHubAccount, error) {
	a := app.GitHubAccount{ID: r.ID, Owner: app.AccountID(r.Owner), Login: r.Login, Name: r.Name, UserID: r.UserID,
		TokenType: r.TokenType, AddedAt: parseTime(r.AddedAt), CheckedAt: parseTime(r.CheckedAt)}
	if err := fromJSON(r.Orgs, &a.Orgs); err != nil {
		return a, err
	}
	return a, fromJSON(r.Scopes, &a.Scopes)
}

func (t *txn) PutGitHubAccount(a app.GitHubAccount, sealed []byte) error {
	orgs, scopes := a.Orgs, a.Scopes
	if orgs == nil {
		orgs = []string{}
	}
	if scopes == nil {
		scopes = []string{}
	}
	_, err := t.exec(`INSERT INTO github_accounts (id, owner, login, login_key, name, user_id, orgs, scopes, token_type, sealed, added_at, checked_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET owner=excluded.owner, login=excluded.login, login_key=excluded.login_key,
		name=excluded.name, user_id=excluded.user_id, orgs=excluded.orgs, scopes=excluded.scopes,
		token_type=excluded.token_type, sealed=excluded.sealed, added_at=excluded.added_at, checked_at=excluded.checked_at`,
		a.ID, string(a.Owner), a.Login, strings.ToLower(a.Login), a.Name, a.UserID, toJSON(orgs), toJSON(scopes),
		a.TokenType, sealed, fmtTime(a.AddedAt), fmtTime(a.CheckedAt))
	return err
}

func (t *txn) GetGitHubAccount(id string) (app.GitHubAccount, []byte, error) {
	var r githubAccountRow
	if err := t.get(&r, `SELECT * FROM github_accounts WHERE id = ?`, id); err != nil {
		return app.GitHubAccount{}, nil, notFound(err, "GitHub account", id)
	}
	a, err := r.account()
	return a, r.Sealed, err
}

func (t *txn) GitHubAccountByLogin(owner app.AccountID, login string) (app.GitHubAccount, []byte, bool, error) {
	var r githubAccountRow
	err := t.get(&r, `SELECT * FROM github_accounts WHERE owner = ? AND login_key = ?`, string(owner), strings.ToLower(login))
	if app.ErrorCode(err) == app.ENOTFOUND {
		return app.GitHubAccount{}, nil, false, nil
	}
	if err != nil {
		return app.GitHubAccount{}, nil, false, err
	}
	a, err := r.account()
	return a, r.Sealed, err == nil, err
}

func (t *txn) ListGitHubAccounts(owner app.AccountID) ([]app.GitHubAccount, error) {
	q, args := ownedQuery("github_accounts", "login_key", owner)
	return selectRows(t, githubAccountRow.account, q, args...)
}

func (t *txn) DeleteGitHubAccount(id string) error {
	res, err := t.exec(`DELETE FROM github_accounts WHERE id = ?`, id)
	return rowsOrNotFound(res, err, "GitHub account", id)
}
