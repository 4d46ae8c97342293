package github

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/github/githubtest"
)

func TestUserClientsRepos(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	srv.AddUser("alice")
	srv.AddOrg("acme", "alice")
	srv.CreateRepo("alice", "site", nil)
	srv.CreateRepo("acme", "widgets", nil)
	srv.CreateRepo("acme", "gadgets", nil)
	srv.CreateRepo("acme", "public-docs", nil) // visible to alice, not hers to push
	srv.AddRepo(githubtest.RepoSpec{Owner: "acme", Name: "secret", Private: true})
	srv.SetPermission("acme/widgets", "alice", "write")
	srv.SetPermission("acme/gadgets", "alice", "read")
	srv.SetPermission("acme/secret", "alice", "maintain")
	srv.AddUser("bob")
	srv.CreateRepo("bob", "tools", nil)
	tok := srv.AddToken("alice", "repo")
	u, err := NewUserClients(srv.APIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := u.Repos(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "alice/site,acme/widgets,acme/secret" {
		t.Fatalf("Repos = %v", got)
	}
	srv.RevokeToken(tok)
	if _, err := u.Repos(context.Background(), tok); app.ErrorCode(err) != app.EUNAUTHORIZED || strings.Contains(err.Error(), tok) {
		t.Fatalf("revoked token: %v", err)
	}
}

// TestUserClientsReposIsBounded pages through /user/repos but stops at
// its bound (made small here: 7 repositories, 3 a page).
func TestUserClientsReposIsBounded(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	srv.AddUser("alice")
	for i := range 10 {
		srv.CreateRepo("alice", fmt.Sprintf("r%03d", i), nil)
	}
	tok := srv.AddToken("alice", "repo")
	u, err := NewUserClients(srv.APIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	u.repoPage, u.repoLimit = 3, 7
	got, err := u.Repos(context.Background(), tok)
	if err != nil || len(got) != 7 {
		t.Fatalf("Repos = %d repos, %v", len(got), err)
	}
	pages := 0
	for _, q := range srv.Requests(nil) {
		if q.Path == "/api/v3/user/repos" {
			pages++
		}
	}
	if pages != 3 {
		t.Fatalf("GET /user/repos called %d times, want 3", pages)
	}
}
