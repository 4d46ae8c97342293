package storetest

import (
	"context"
	"testing"

	"github.com/asb-dev/asb/app"
)

func testUsers(t *testing.T, s app.Store) {
	ann := app.Account{ID: "acc_ann", Username: "ann", Email: "ann@example.com", GitHubLogin: "Ann-GH",
		PasswordHash: "h1", Plan: "", TrialEndsAt: t0.Add(48), CreatedAt: t0}
	bob := app.Account{ID: "acc_bob", Username: "bob", CreatedAt: t0.Add(1)}
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertAccount(&ann); err != nil {
			return err
		}
		return tx.InsertAccount(&bob)
	})
	for _, dup := range []app.Account{
		{ID: "acc_x1", Username: "ann", CreatedAt: t0},
		{ID: "acc_x2", Username: "x2", GitHubLogin: "ann-gh", CreatedAt: t0},
	} {
		err := s.Tx(context.Background(), func(tx app.Tx) error { return tx.InsertAccount(&dup) })
		wantCode(t, err, app.ECONFLICT)
	}
	view(t, s, func(tx app.Tx) error {
		got, err := tx.GetAccount("acc_ann")
		if err != nil || got.Username != "ann" || got.Email != "ann@example.com" || got.PasswordHash != "h1" ||
			!got.TrialEndsAt.Equal(t0.Add(48)) || got.Admin || got.Disabled || !got.CreatedAt.Equal(t0) {
			t.Fatalf("GetAccount = %+v %v", got, err)
		}
		if got, err := tx.AccountByUsername("bob"); err != nil || got.ID != "acc_bob" {
			t.Fatalf("by username = %+v %v", got, err)
		}
		if got, err := tx.AccountByGitHubLogin("ANN-gh"); err != nil || got.ID != "acc_ann" {
			t.Fatalf("by GitHub login = %+v %v", got, err)
		}
		_, err = tx.AccountByGitHubLogin("")
		wantCode(t, err, app.ENOTFOUND)
		_, err = tx.AccountByUsername("nobody")
		wantCode(t, err, app.ENOTFOUND)
		all, err := tx.ListAccounts()
		pos := map[app.AccountID]int{}
		for i, a := range all {
			pos[a.ID] = i + 1
		}
		if err != nil || pos["acc_ann"] == 0 || pos["acc_bob"] != pos["acc_ann"]+1 {
			t.Fatalf("ListAccounts (oldest first) = %+v %v", all, err)
		}
		return nil
	})
	ann.Plan, ann.Disabled, ann.Admin, ann.PasswordHash = app.PlanPro, true, true, "h2"
	tx(t, s, func(tx app.Tx) error { return tx.UpdateAccount(&ann) })
	view(t, s, func(tx app.Tx) error {
		got, _ := tx.GetAccount("acc_ann")
		if got.Plan != app.PlanPro || !got.Disabled || !got.Admin || got.PasswordHash != "h2" {
			t.Fatalf("after update = %+v", got)
		}
		return nil
	})
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		return tx.UpdateAccount(&app.Account{ID: "acc_none", Username: "none"})
	})
	wantCode(t, err, app.ENOTFOUND)
}

func testKeysAndDevices(t *testing.T, s app.Store) {
	acct := app.Account{ID: "acc_kim", Username: "kim", CreatedAt: t0}
	k1 := app.APIKey{ID: "key_a", Account: "acc_kim", Name: "laptop", Kind: app.KeyKindKey, Prefix: "asb_k_abc", CreatedAt: t0}
	k2 := app.APIKey{ID: "key_b", Account: "acc_kim", Name: "invite", Kind: app.KeyKindInvite, CreatedAt: t0.Add(1)}
	d1 := app.Device{ID: "dev_a", Account: "acc_kim", UserAgent: "Firefox", ClientIP: "10.0.0.1", CreatedAt: t0, SeenAt: t0}
	tx(t, s, func(tx app.Tx) error {
		if err := tx.InsertAccount(&acct); err != nil {
			return err
		}
		if err := tx.InsertAPIKey(&k1, []byte("digest-a")); err != nil {
			return err
		}
		if err := tx.InsertAPIKey(&k2, []byte("digest-b")); err != nil {
			return err
		}
		return tx.InsertDevice(&d1, []byte("dev-digest"))
	})
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		k := k1
		k.ID = "key_c"
		return tx.InsertAPIKey(&k, []byte("digest-a"))
	})
	wantCode(t, err, app.ECONFLICT)
	err = s.Tx(context.Background(), func(tx app.Tx) error {
		k := k1
		k.ID, k.Account = "key_d", "acc_missing"
		return tx.InsertAPIKey(&k, []byte("digest-d"))
	})
	wantCode(t, err, app.ENOTFOUND)
	view(t, s, func(tx app.Tx) error {
		got, err := tx.APIKeyByDigest([]byte("digest-a"))
		if err != nil || got.ID != "key_a" || got.Name != "laptop" || got.Prefix != "asb_k_abc" || got.Kind != app.KeyKindKey || !got.Live() {
			t.Fatalf("by digest = %+v %v", got, err)
		}
		_, err = tx.APIKeyByDigest([]byte("nope"))
		wantCode(t, err, app.ENOTFOUND)
		list, err := tx.ListAPIKeys("acc_kim")
		if err != nil || len(list) != 2 || list[0].ID != "key_b" {
			t.Fatalf("ListAPIKeys = %+v %v", list, err)
		}
		d, err := tx.DeviceByDigest([]byte("dev-digest"))
		if err != nil || d.ID != "dev_a" || d.UserAgent != "Firefox" || !d.SeenAt.Equal(t0) {
			t.Fatalf("device = %+v %v", d, err)
		}
		return nil
	})
	k1.LastUsedAt, k1.RevokedAt, k1.Name = t0.Add(5), t0.Add(6), "renamed (ignored)"
	d1.SeenAt, d1.RevokedAt = t0.Add(7), t0.Add(8)
	tx(t, s, func(tx app.Tx) error {
		if err := tx.UpdateAPIKey(&k1); err != nil {
			return err
		}
		return tx.UpdateDevice(&d1)
	})
	view(t, s, func(tx app.Tx) error {
		got, _ := tx.APIKeyByDigest([]byte("digest-a"))
		if !got.LastUsedAt.Equal(t0.Add(5)) || !got.RevokedAt.Equal(t0.Add(6)) || got.Live() || got.Name != "laptop" {
			t.Fatalf("after update = %+v", got)
		}
		ds, err := tx.ListDevices("acc_kim")
		if err != nil || len(ds) != 1 || !ds[0].SeenAt.Equal(t0.Add(7)) || !ds[0].RevokedAt.Equal(t0.Add(8)) {
			t.Fatalf("devices = %+v %v", ds, err)
		}
		return nil
	})
	err = s.Tx(context.Background(), func(tx app.Tx) error { return tx.UpdateDevice(&app.Device{ID: "dev_none"}) })
	wantCode(t, err, app.ENOTFOUND)
}
