package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/asb-dev/asb/app"
)

func testGitHubAccounts(t *testing.T, s app.Store) {
	alice := app.GitHubAccount{ID: "gha_alice1", Owner: "acc_a", Login: "Alice", Name: "Alice A", UserID: 7,
		Orgs: []string{"acme"}, Scopes: []string{"repo"}, TokenType: "classic", AddedAt: t0, CheckedAt: t0}
	bob := app.GitHubAccount{ID: "gha_bob1", Owner: "acc_a", Login: "bob", TokenType: "fine-grained", AddedAt: t0, CheckedAt: t0}
	// The same login stored by another owner is a separate account.
	alice2 := alice
	alice2.ID, alice2.Owner = "gha_alice2", "acc_b"
	tx(t, s, func(tx app.Tx) error {
		for _, a := range []app.GitHubAccount{bob, alice, alice2} {
			if err := tx.PutGitHubAccount(a, []byte("sealed-"+a.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		dup := alice
		dup.ID, dup.Login = "gha_dup", "ALICE"
		return tx.PutGitHubAccount(dup, []byte("x"))
	})
	if app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("second account for the same owner and login: %v, want conflict", err)
	}
	view(t, s, func(tx app.Tx) error {
		got, sealed, err := tx.GetGitHubAccount("gha_alice1")
		if err != nil || string(sealed) != "sealed-gha_alice1" {
			t.Fatalf("GetGitHubAccount = %v %q %v", got, sealed, err)
		}
		if got.Login != "Alice" || got.Name != "Alice A" || got.UserID != 7 || got.Owner != "acc_a" ||
			!slices.Equal(got.Orgs, []string{"acme"}) || !slices.Equal(got.Scopes, []string{"repo"}) ||
			got.TokenType != "classic" || !got.AddedAt.Equal(t0) || !got.CheckedAt.Equal(t0) {
			t.Fatalf("account round trip: %+v", got)
		}
		if _, _, err := tx.GetGitHubAccount("gha_nope"); app.ErrorCode(err) != app.ENOTFOUND {
			t.Fatalf("missing account: %v", err)
		}
		byLogin, sealed, ok, err := tx.GitHubAccountByLogin("acc_b", "alice")
		if err != nil || !ok || byLogin.ID != "gha_alice2" || string(sealed) != "sealed-gha_alice2" {
			t.Fatalf("by login = %v %v %v", byLogin.ID, ok, err)
		}
		if _, _, ok, err := tx.GitHubAccountByLogin("acc_b", "bob"); ok || err != nil {
			t.Fatalf("another owner's login found: %v %v", ok, err)
		}
		mine, err := tx.ListGitHubAccounts("acc_a")
		if err != nil || len(mine) != 2 || mine[0].ID != "gha_alice1" || mine[1].ID != "gha_bob1" {
			t.Fatalf("owner's list = %+v %v", mine, err)
		}
		all, err := tx.ListGitHubAccounts("")
		if err != nil || len(all) != 3 {
			t.Fatalf("all = %+v %v", all, err)
		}
		return nil
	})
	// Replacing by id keeps one row and takes the new token and metadata.
	tx(t, s, func(tx app.Tx) error {
		re := alice
		re.Scopes, re.CheckedAt = []string{"repo", "read:org"}, t0.Add(1)
		return tx.PutGitHubAccount(re, []byte("sealed-new"))
	})
	view(t, s, func(tx app.Tx) error {
		got, sealed, err := tx.GetGitHubAccount("gha_alice1")
		if err != nil || string(sealed) != "sealed-new" || len(got.Scopes) != 2 || !got.CheckedAt.Equal(t0.Add(1)) {
			t.Fatalf("after replace = %+v %q %v", got, sealed, err)
		}
		mine, _ := tx.ListGitHubAccounts("acc_a")
		if len(mine) != 2 {
			t.Fatalf("replace added a row: %d", len(mine))
		}
		return nil
	})
	tx(t, s, func(tx app.Tx) error { return tx.DeleteGitHubAccount("gha_alice1") })
	err = s.Tx(context.Background(), func(tx app.Tx) error { return tx.DeleteGitHubAccount("gha_alice1") })
	if app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("delete twice: %v", err)
	}
	view(t, s, func(tx app.Tx) error {
		if _, _, ok, _ := tx.GitHubAccountByLogin("acc_a", "alice"); ok {
			t.Fatal("account survived delete")
		}
		return nil
	})
}
