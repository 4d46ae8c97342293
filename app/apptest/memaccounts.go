package apptest

import (
	"slices"
	"sort"
	"strings"

	"github.com/asb-dev/asb/app"
)

type memAccount struct {
	acct   app.GitHubAccount
	sealed []byte
}

func cloneAccount(a app.GitHubAccount) app.GitHubAccount {
	a.Orgs, a.Scopes = slices.Clone(a.Orgs), slices.Clone(a.Scopes)
	return a
}

func (t *memTx) PutGitHubAccount(a app.GitHubAccount, sealed []byte) error {
	for id, m := range t.st.accounts {
		if id != a.ID && m.acct.Owner == a.Owner && strings.EqualFold(m.acct.Login, a.Login) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.accounts[a.ID] = memAccount{acct: cloneAccount(a), sealed: slices.Clone(sealed)}
	return nil
}

func (t *memTx) GetGitHubAccount(id string) (app.GitHubAccount, []byte, error) {
	m, ok := t.st.accounts[id]
	if !ok {
		return app.GitHubAccount{}, nil, app.Errorf(app.ENOTFOUND, "GitHub account %s not found", id)
	}
	return cloneAccount(m.acct), slices.Clone(m.sealed), nil
}

func (t *memTx) GitHubAccountByLogin(owner app.AccountID, login string) (app.GitHubAccount, []byte, bool, error) {
	for _, m := range t.st.accounts {
		if m.acct.Owner == owner && strings.EqualFold(m.acct.Login, login) {
			return cloneAccount(m.acct), slices.Clone(m.sealed), true, nil
		}
	}
	return app.GitHubAccount{}, nil, false, nil
}

func (t *memTx) ListGitHubAccounts(owner app.AccountID) ([]app.GitHubAccount, error) {
	out := []app.GitHubAccount{}
	for _, m := range t.st.accounts {
		if owner == "" || m.acct.Owner == owner {
			out = append(out, cloneAccount(m.acct))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		li, lj := strings.ToLower(out[i].Login), strings.ToLower(out[j].Login)
		if li != lj {
			return li < lj
		}
		return out[i].Owner < out[j].Owner
	})
	return out, nil
}

func (t *memTx) DeleteGitHubAccount(id string) error {
	if _, ok := t.st.accounts[id]; !ok {
		return app.Errorf(app.ENOTFOUND, "GitHub account %s not found", id)
	}
	delete(t.st.accounts, id)
	return nil
}
