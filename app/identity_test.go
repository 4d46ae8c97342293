package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
)

const (
	tokAlice  = "ghp_aliceAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1"
	tokAlice2 = "ghp_aliceBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB2"
	tokBob    = "github_pat_bobCCCCCCCCCCCCCCCCCCCCCCCCCC3"
)

type idHarness struct {
	svc    *app.Service
	store  *apptest.MemStore
	prober *apptest.FakeProber
	keys   *seal.Keyring
}

func newIDHarness(t *testing.T) *idHarness {
	t.Helper()
	keys, err := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	h := &idHarness{store: apptest.NewMemStore(), prober: apptest.NewFakeProber(), keys: keys}
	h.prober.Add(tokAlice, app.GitHubIdentity{Login: "Alice", Name: "Alice A", UserID: 11, Orgs: []string{"acme"}, Scopes: []string{"repo", "read:org"}}, "acme/api", "alice/site")
	h.prober.Add(tokAlice2, app.GitHubIdentity{Login: "alice", UserID: 11}, "acme/api")
	h.prober.Add(tokBob, app.GitHubIdentity{Login: "bob", UserID: 12}, "acme/api", "bob/tools")
	h.svc = app.NewService(app.Deps{Store: h.store, Sandbox: apptest.NewFakeSandbox(), Secrets: keys, GitHub: h.prober}, app.Config{})
	return h
}

func as(account app.AccountID) context.Context {
	return app.WithActor(context.Background(), app.Actor{Account: account, Name: string(account)})
}

// dump is everything the store holds that a reader of the database could
// see: the GitHub accounts and MCP servers with their sealed bytes, and the
// audit trail.
func (h *idHarness) dump(t *testing.T) []byte {
	t.Helper()
	var all []byte
	err := h.store.View(context.Background(), func(tx app.Tx) error {
		list, err := tx.ListGitHubAccounts("")
		if err != nil {
			return err
		}
		for _, a := range list {
			_, sealed, err := tx.GetGitHubAccount(a.ID)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(a)
			all = append(append(all, b...), sealed...)
		}
		servers, err := tx.ListMCPServers("")
		if err != nil {
			return err
		}
		for _, m := range servers {
			_, sealed, err := tx.GetMCPServer(m.ID)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(m)
			all = append(append(all, b...), sealed...)
		}
		audit, err := tx.ListAudit(100)
		b, _ := json.Marshal(audit)
		all = append(all, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestAddGitHubTokenProbesAndSeals(t *testing.T) {
	h := newIDHarness(t)
	acct, err := h.svc.AddGitHubToken(as("acc_a"), tokAlice)
	if err != nil {
		t.Fatal(err)
	}
	if acct.Login != "Alice" || acct.Owner != "acc_a" || acct.Name != "Alice A" || acct.UserID != 11 ||
		strings.Join(acct.Orgs, ",") != "acme" || strings.Join(acct.Scopes, ",") != "read:org,repo" ||
		acct.TokenType != "classic" || !strings.HasPrefix(acct.ID, "gha_") {
		t.Fatalf("account = %+v", acct)
	}
	stored := h.dump(t)
	if bytes.Contains(stored, []byte(tokAlice)) || bytes.Contains(stored, []byte("aliceAAAA")) {
		t.Fatal("the store holds the token in clear")
	}
	var sealed []byte
	_ = h.store.View(context.Background(), func(tx app.Tx) error {
		_, sealed, err = tx.GetGitHubAccount(acct.ID)
		return err
	})
	if plain, err := h.keys.Open(sealed, "github-account:"+acct.ID); err != nil || string(plain) != tokAlice {
		t.Fatalf("sealed token does not open under its account label: %v", err)
	}
	if _, err := h.keys.Open(sealed, "github-account:gha_other"); err == nil {
		t.Fatal("sealed token opens under another account's label")
	}

	// Re-adding the same login (any case) replaces the token in place.
	again, err := h.svc.AddGitHubToken(as("acc_a"), tokAlice2)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != acct.ID || again.Login != "alice" {
		t.Fatalf("re-add made %+v, want the same account %s", again, acct.ID)
	}
	tok, ok, err := h.svc.GitHubToken(as("acc_a"), "ALICE")
	if err != nil || !ok || tok != tokAlice2 {
		t.Fatalf("GitHubToken after replace = ok %v err %v (token replaced: %v)", ok, err, tok == tokAlice2)
	}
	list, _ := h.svc.GitHubAccounts(as("acc_a"))
	if len(list) != 1 {
		t.Fatalf("accounts = %d, want 1", len(list))
	}
	audit, _ := h.svc.Audit(app.WithActor(context.Background(), app.OperatorActor), 10)
	if len(audit) != 2 || audit[0].Action != "github.account.replace" || audit[1].Action != "github.account.add" || !strings.Contains(audit[1].Detail, "login=Alice") {
		t.Fatalf("audit = %+v", audit)
	}
}

func TestAddGitHubTokenRefusals(t *testing.T) {
	h := newIDHarness(t)
	cases := []struct{ name, token, want string }{
		{"empty", "", "no token"},
		{"short", "ghp_abc", "does not look like"},
		{"charset", "ghp_aaaaaaaaaaaaaaaaaaaaaa$(id)aaaa", "only letters"},
		{"long", "ghp_" + strings.Repeat("a", 300), "does not look like"},
		{"refused by GitHub", "ghp_unknownUUUUUUUUUUUUUUUUUUUUUUUUUUUU", "invalid or expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.svc.AddGitHubToken(as("acc_a"), c.token)
			if app.ErrorCode(err) != app.EINVALID || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want invalid %q", err, c.want)
			}
			if c.token != "" && strings.Contains(err.Error(), c.token) {
				t.Fatal("the error echoes the token")
			}
		})
	}
	if list, _ := h.svc.GitHubAccounts(as("acc_a")); len(list) != 0 {
		t.Fatalf("refused tokens were stored: %+v", list)
	}
	if _, err := h.svc.AddGitHubToken(context.Background(), tokAlice); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("no actor: %v", err)
	}
	unconfigured := app.NewService(app.Deps{Store: apptest.NewMemStore(), Sandbox: apptest.NewFakeSandbox()}, app.Config{})
	if _, err := unconfigured.AddGitHubToken(as("acc_a"), tokAlice); app.ErrorCode(err) != app.EUNAVAILABLE {
		t.Fatalf("without secrets: %v", err)
	}
}

func TestGitHubAccountsOwnership(t *testing.T) {
	h := newIDHarness(t)
	a, err := h.svc.AddGitHubToken(as("acc_a"), tokAlice)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.svc.AddGitHubToken(as("acc_b"), tokBob)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := h.svc.GitHubAccounts(as("acc_b")); len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("acc_b sees %+v", list)
	}
	op := app.WithActor(context.Background(), app.OperatorActor)
	if list, _ := h.svc.GitHubAccounts(op); len(list) != 2 {
		t.Fatalf("operator sees %d accounts, want 2", len(list))
	}
	if err := h.svc.RemoveGitHubAccount(as("acc_b"), a.ID); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("removing another's account: %v", err)
	}
	if _, ok, _ := h.svc.GitHubToken(as("acc_b"), "alice"); ok {
		t.Fatal("acc_b opened acc_a's token")
	}
	if _, err := h.svc.CheckGitHubAccess(as("acc_b"), a.ID, "acme/api"); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("checking another's account: %v", err)
	}
	if ok, err := h.svc.CheckGitHubAccess(as("acc_a"), a.ID, "acme/api"); err != nil || !ok {
		t.Fatalf("CheckGitHubAccess = %v %v", ok, err)
	}
	if ok, err := h.svc.CheckGitHubAccess(as("acc_a"), a.ID, "bob/tools"); err != nil || ok {
		t.Fatalf("CheckGitHubAccess elsewhere = %v %v", ok, err)
	}
	if err := h.svc.RemoveGitHubAccount(as("acc_a"), "../x"); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("bad id: %v", err)
	}
	if err := h.svc.RemoveGitHubAccount(as("acc_a"), a.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := h.svc.GitHubAccounts(as("acc_a")); len(list) != 0 {
		t.Fatalf("removed account still listed: %+v", list)
	}
	if err := h.svc.RemoveGitHubAccount(as("acc_a"), a.ID); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("remove twice: %v", err)
	}
}

func TestGitHubPusher(t *testing.T) {
	h := newIDHarness(t)
	for _, add := range []struct {
		owner app.AccountID
		tok   string
	}{{"acc_a", tokAlice}, {"acc_a", tokBob}, {"acc_c", tokBob}} {
		if _, err := h.svc.AddGitHubToken(as(add.owner), add.tok); err != nil {
			t.Fatal(err)
		}
	}
	comment := func(login string) app.Origin {
		return app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/api", Number: 1, Login: login}
	}
	cases := []struct {
		name      string
		q         app.PushQuery
		wantLogin string
		wantTok   string
		wantErr   string
	}{
		{"requester's token can push", app.PushQuery{Owner: app.OperatorAccount, Origin: comment("alice"), Repo: "acme/api", AppCanPush: true}, "Alice", tokAlice, ""},
		{"requester's token cannot push: the App", app.PushQuery{Owner: app.OperatorAccount, Origin: comment("alice"), Repo: "bob/tools", AppCanPush: true}, "", "", ""},
		{"requester without a token: the App", app.PushQuery{Owner: app.OperatorAccount, Origin: comment("carol"), Repo: "acme/api", AppCanPush: true}, "", "", ""},
		{"requester without a token and no App", app.PushQuery{Owner: app.OperatorAccount, Origin: comment("carol"), Repo: "acme/api"}, "", "", "carol has no stored GitHub token"},
		{"owner's one account", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginMCP}, Repo: "bob/tools"}, "bob", tokBob, ""},
		{"a dashboard run's login is not a choice", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginDashboard, Login: "acc_a"}, Repo: "bob/tools"}, "bob", tokBob, ""},
		{"owner's several accounts: ask which", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginMCP}, Repo: "acme/api", AppCanPush: true}, "", "", "several stored GitHub accounts can push to acme/api: Alice, bob"},
		{"owner chose one", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginMCP, GitHubAccount: "bob"}, Repo: "acme/api"}, "bob", tokBob, ""},
		{"owner chose one that cannot push", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginMCP, GitHubAccount: "alice"}, Repo: "bob/tools"}, "", "", "alice cannot push"},
		{"nobody can push, no App", app.PushQuery{Owner: "acc_a", Origin: app.Origin{Kind: app.OriginDashboard}, Repo: "zed/x"}, "", "", "gh_token_add"},
		{"another owner's account is not used", app.PushQuery{Owner: "acc_c", Origin: app.Origin{Kind: app.OriginMCP}, Repo: "alice/site", AppCanPush: true}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := h.svc.GitHubPusher(context.Background(), c.q)
			if c.wantErr != "" {
				if app.ErrorCode(err) != app.EINVALID || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || p.Login != c.wantLogin || p.Token != c.wantTok {
				t.Fatalf("pusher = %q (token ok %v), err %v; want %q", p.Login, p.Token == c.wantTok, err, c.wantLogin)
			}
		})
	}
}
