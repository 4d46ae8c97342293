package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/asb-dev/asb/app"
)

func testMCPServers(t *testing.T, s app.Store) {
	docs := app.MCPServer{ID: "mcp_docs1", Owner: "acc_a", Name: "Docs", URL: "https://docs.example.com/mcp",
		HeaderNames: []string{"Authorization"}, AddedAt: t0}
	bare := app.MCPServer{ID: "mcp_bare1", Owner: "acc_a", Name: "bare", URL: "http://10.0.0.1:8080/mcp", AddedAt: t0}
	// The same name stored by another owner is a separate server.
	docs2 := docs
	docs2.ID, docs2.Owner = "mcp_docs2", "acc_b"
	tx(t, s, func(tx app.Tx) error {
		for _, m := range []app.MCPServer{docs, bare, docs2} {
			if err := tx.PutMCPServer(m, []byte("sealed-"+m.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	err := s.Tx(context.Background(), func(tx app.Tx) error {
		dup := docs
		dup.ID, dup.Name = "mcp_dup", "DOCS"
		return tx.PutMCPServer(dup, []byte("x"))
	})
	if app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("second server of the same owner and name: %v, want conflict", err)
	}
	view(t, s, func(tx app.Tx) error {
		got, sealed, err := tx.GetMCPServer("mcp_docs1")
		if err != nil || string(sealed) != "sealed-mcp_docs1" {
			t.Fatalf("GetMCPServer = %+v %q %v", got, sealed, err)
		}
		if got.Name != "Docs" || got.Owner != "acc_a" || got.URL != docs.URL ||
			!slices.Equal(got.HeaderNames, []string{"Authorization"}) || !got.AddedAt.Equal(t0) {
			t.Fatalf("server round trip: %+v", got)
		}
		if _, _, err := tx.GetMCPServer("mcp_nope"); app.ErrorCode(err) != app.ENOTFOUND {
			t.Fatalf("missing server: %v", err)
		}
		mine, err := tx.ListMCPServers("acc_a")
		if err != nil || len(mine) != 2 || mine[0].ID != "mcp_bare1" || mine[1].ID != "mcp_docs1" {
			t.Fatalf("owner's list = %+v %v", mine, err)
		}
		if len(mine[0].HeaderNames) != 0 {
			t.Fatalf("a server without headers lists %v", mine[0].HeaderNames)
		}
		theirs, err := tx.ListMCPServers("acc_b")
		if err != nil || len(theirs) != 1 || theirs[0].ID != "mcp_docs2" {
			t.Fatalf("other owner's list = %+v %v", theirs, err)
		}
		all, err := tx.ListMCPServers("")
		if err != nil || len(all) != 3 {
			t.Fatalf("all = %+v %v", all, err)
		}
		return nil
	})
	// Replacing by id keeps one row and takes the new headers and URL.
	tx(t, s, func(tx app.Tx) error {
		re := docs
		re.URL, re.HeaderNames = "https://docs.example.com/v2/mcp", []string{"Authorization", "X-Team"}
		return tx.PutMCPServer(re, []byte("sealed-new"))
	})
	view(t, s, func(tx app.Tx) error {
		got, sealed, err := tx.GetMCPServer("mcp_docs1")
		if err != nil || string(sealed) != "sealed-new" || got.URL != "https://docs.example.com/v2/mcp" || len(got.HeaderNames) != 2 {
			t.Fatalf("after replace = %+v %q %v", got, sealed, err)
		}
		if mine, _ := tx.ListMCPServers("acc_a"); len(mine) != 2 {
			t.Fatalf("replace added a row: %d", len(mine))
		}
		return nil
	})
	tx(t, s, func(tx app.Tx) error { return tx.DeleteMCPServer("mcp_docs1") })
	err = s.Tx(context.Background(), func(tx app.Tx) error { return tx.DeleteMCPServer("mcp_docs1") })
	if app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("delete twice: %v", err)
	}
	view(t, s, func(tx app.Tx) error {
		if mine, _ := tx.ListMCPServers("acc_a"); len(mine) != 1 || mine[0].ID != "mcp_bare1" {
			t.Fatalf("after delete = %+v", mine)
		}
		return nil
	})
}
