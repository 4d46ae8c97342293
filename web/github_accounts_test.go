package web_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/web"
)

func TestGitHubAccountsRoutes(t *testing.T) {
	const tok = "ghp_webTESTTESTTESTTESTTESTTESTTESTTEST01"
	keys, err := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	prober := apptest.NewFakeProber()
	prober.Add(tok, app.GitHubIdentity{Login: "alice", Orgs: []string{"acme"}, Scopes: []string{"repo"}}, "acme/api")
	e := &apiEnv{store: apptest.NewMemStore(), sandbox: apptest.NewFakeSandbox(), logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.svc = app.NewService(app.Deps{Store: e.store, Sandbox: e.sandbox, Secrets: keys, GitHub: prober, Logger: log}, app.Config{})
	bob := app.Actor{Account: "acc_bob", Name: "bob"}
	e.srv = httptest.NewServer(web.New(web.Options{Service: e.svc, Logger: log, MutationsPerMinute: 10000,
		Authenticator: web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
			if k, _ := web.BearerToken(r); k == "bob-key" {
				return bob, nil
			}
			return web.OperatorTokenAuthenticator(testToken).Authenticate(r)
		})}))
	t.Cleanup(e.srv.Close)

	r := e.do(t, "POST", "/github/accounts.json", map[string]any{"token": tok, "repo": "acme/api"})
	e.mustOK(t, r)
	var added struct {
		Account app.GitHubAccount `json:"account"`
		Repo    string            `json:"repo"`
		CanPush bool              `json:"can_push"`
	}
	r.json(t, &added)
	if added.Account.Login != "alice" || !strings.HasPrefix(added.Account.ID, "gha_") || !added.CanPush || added.Repo != "acme/api" {
		t.Fatalf("added = %s", r.body)
	}
	if strings.Contains(r.body, tok) {
		t.Fatal("the answer holds the token")
	}

	r = e.do(t, "GET", "/github/accounts.json", nil)
	e.mustOK(t, r)
	var list struct {
		Accounts []app.GitHubAccount `json:"accounts"`
	}
	r.json(t, &list)
	if len(list.Accounts) != 1 || list.Accounts[0].ID != added.Account.ID || strings.Contains(r.body, tok) {
		t.Fatalf("list = %s", r.body)
	}

	// Bob sees none of the operator's accounts and cannot remove them.
	r = e.do(t, "GET", "/github/accounts.json", nil, "Authorization", "Bearer bob-key")
	e.mustOK(t, r)
	r.json(t, &list)
	if len(list.Accounts) != 0 || !strings.Contains(r.body, "[]") {
		t.Fatalf("bob's list = %q", r.body)
	}
	errorOf(t, e.do(t, "DELETE", "/github/accounts.json?id="+added.Account.ID, nil, "Authorization", "Bearer bob-key"), http.StatusNotFound)

	// Refusals: bad token (never echoed), bad repo, missing id, no credentials.
	msg := errorOf(t, e.do(t, "POST", "/github/accounts.json", map[string]any{"token": "ghp_unknownXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"}), http.StatusBadRequest)
	if !strings.Contains(msg, "invalid or expired") || strings.Contains(msg, "ghp_unknown") {
		t.Fatalf("bad token: %q", msg)
	}
	errorOf(t, e.do(t, "POST", "/github/accounts.json", map[string]any{"token": tok, "repo": "not a repo"}), http.StatusBadRequest)
	errorOf(t, e.do(t, "DELETE", "/github/accounts.json", nil), http.StatusBadRequest)
	errorOf(t, e.do(t, "GET", "/github/accounts.json", nil, "Authorization", ""), http.StatusUnauthorized)

	r = e.do(t, "DELETE", "/github/accounts.json?id="+added.Account.ID, nil)
	e.mustOK(t, r)
	r = e.do(t, "GET", "/github/accounts.json", nil)
	r.json(t, &list)
	if len(list.Accounts) != 0 {
		t.Fatalf("after delete: %s", r.body)
	}
	if strings.Contains(e.logs.String(), tok) {
		t.Fatal("the token reached the log")
	}
}
