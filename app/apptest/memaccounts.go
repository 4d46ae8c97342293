package apptest

import (
	"slices"
	"strings"

	"github.com/asb-dev/asb/app"
)

var accountKind = memOwned[app.GitHubAccount]{
	noun:  "GitHub account",
	id:    func(a app.GitHubAccount) string { return a.ID },
	owner: func(a app.GitHubAccount) app.AccountID { return a.Owner },
	name:  func(a app.GitHubAccount) string { return a.Login },
	clone: func(a app.GitHubAccount) app.GitHubAccount {
		a.Orgs, a.Scopes = slices.Clone(a.Orgs), slices.Clone(a.Scopes)
		return a
	},
}

func (t *memTx) PutGitHubAccount(a app.GitHubAccount, sealed []byte) error {
	return accountKind.put(t.st.accounts, a, sealed)
}

func (t *memTx) GetGitHubAccount(id string) (app.GitHubAccount, []byte, error) {
	return accountKind.get(t.st.accounts, id)
}

func (t *memTx) GitHubAccountByLogin(owner app.AccountID, login string) (app.GitHubAccount, []byte, bool, error) {
	for _, m := range t.st.accounts {
		if m.rec.Owner == owner && strings.EqualFold(m.rec.Login, login) {
			return accountKind.clone(m.rec), slices.Clone(m.sealed), true, nil
		}
	}
	return app.GitHubAccount{}, nil, false, nil
}

func (t *memTx) ListGitHubAccounts(owner app.AccountID) ([]app.GitHubAccount, error) {
	return accountKind.list(t.st.accounts, owner), nil
}

func (t *memTx) DeleteGitHubAccount(id string) error {
	return accountKind.del(t.st.accounts, id)
}
