package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

// world is a seeded fake: org acme (members alice, bob) with a public
// repo acme/widgets (alice write, bob read, carol none) and a private
// acme/secret (alice admin), the App installed on both; dave owns
// dave/solo where the App is not installed.
type world struct {
	srv  *githubtest.Server
	inst githubtest.Installation
	ctx  context.Context
}

func newWorld(t *testing.T, opts githubtest.Options) *world {
	t.Helper()
	srv := githubtest.New(t, opts)
	srv.AddOrg("acme", "alice", "bob")
	srv.AddUser("carol")
	srv.AddUser("dave")
	srv.SetProfile("alice", "Alice Liddell", "alice@example.com")
	srv.CreateRepo("acme", "widgets", map[string]string{"README.md": "# widgets\n", "main.go": "package main\n"})
	srv.AddRepo(githubtest.RepoSpec{Owner: "acme", Name: "secret", Private: true})
	srv.CreateRepo("dave", "solo", nil)
	srv.SetPermission("acme/widgets", "alice", "write")
	srv.SetPermission("acme/widgets", "bob", "read")
	srv.SetPermission("acme/secret", "alice", "admin")
	inst := srv.AddInstallation("acme", "acme/widgets", "acme/secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &world{srv: srv, inst: inst, ctx: ctx}
}

func enterprise(t *testing.T, srv *githubtest.Server, hc *http.Client) *github.Client {
	t.Helper()
	gh, err := github.NewClient(hc).WithEnterpriseURLs(srv.URL+"/api/v3/", srv.URL+"/api/uploads/")
	if err != nil {
		t.Fatal(err)
	}
	return gh
}

func appsTransport(t *testing.T, srv *githubtest.Server) *ghinstallation.AppsTransport {
	t.Helper()
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, srv.AppID(), srv.AppPrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = srv.URL + "/api/v3"
	return atr
}

// appClient authenticates as the App (JWT).
func (w *world) appClient(t *testing.T) *github.Client {
	return enterprise(t, w.srv, &http.Client{Transport: appsTransport(t, w.srv)})
}

// botClient authenticates as the installation through ghinstallation.
func (w *world) botClient(t *testing.T) (*github.Client, *ghinstallation.Transport) {
	itr := ghinstallation.NewFromAppsTransport(appsTransport(t, w.srv), w.inst.ID)
	return enterprise(t, w.srv, &http.Client{Transport: itr}), itr
}

// userClient authenticates with a new personal token of login.
func (w *world) userClient(t *testing.T, login string) *github.Client {
	return enterprise(t, w.srv, nil).WithAuthToken(w.srv.AddToken(login))
}

func (w *world) anonClient(t *testing.T) *github.Client { return enterprise(t, w.srv, nil) }

func status(t *testing.T, err error) int {
	t.Helper()
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		t.Fatalf("want *github.ErrorResponse, got %T: %v", err, err)
	}
	return er.Response.StatusCode
}

func wantStatus(t *testing.T, err error, want int, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: want status %d, got success", what, want)
	}
	if got := status(t, err); got != want {
		t.Fatalf("%s: status %d, want %d (%v)", what, got, want, err)
	}
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
