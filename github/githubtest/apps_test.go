package githubtest_test

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

func TestAppJWTEndpoints(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	app := w.appClient(t)

	a, _, err := app.Apps.Get(w.ctx, "")
	must(t, err, "GET /app")
	if a.GetID() != w.srv.AppID() || a.GetSlug() != "asb-test" || a.GetPermissions().GetContents() != "write" {
		t.Fatalf("app = %+v", a)
	}
	insts, _, err := app.Apps.ListInstallations(w.ctx, nil)
	must(t, err, "GET /app/installations")
	if len(insts) != 1 || insts[0].GetID() != w.inst.ID || insts[0].GetAccount().GetLogin() != "acme" ||
		insts[0].GetTargetType() != "Organization" || insts[0].GetAppID() != w.srv.AppID() {
		t.Fatalf("installations = %+v", insts)
	}
	in, _, err := app.Apps.FindRepositoryInstallation(w.ctx, "acme", "secret")
	must(t, err, "GET /repos/acme/secret/installation")
	if in.GetID() != w.inst.ID {
		t.Fatalf("installation of acme/secret = %d", in.GetID())
	}
	_, _, err = app.Apps.FindRepositoryInstallation(w.ctx, "dave", "solo")
	wantStatus(t, err, http.StatusNotFound, "installation of a repo without the App")

	// A JWT only reaches the App endpoints.
	_, _, err = app.Repositories.Get(w.ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusForbidden, "JWT on a repository endpoint")

	// A JWT signed by another key, or an installation token on /app, is refused.
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	must(t, err, "key")
	atr := ghinstallation.NewAppsTransportFromPrivateKey(http.DefaultTransport, w.srv.AppID(), other)
	atr.BaseURL = w.srv.URL + "/api/v3"
	_, _, err = enterprise(t, w.srv, &http.Client{Transport: atr}).Apps.Get(w.ctx, "")
	wantStatus(t, err, http.StatusUnauthorized, "JWT with a foreign key")
	bot, _ := w.botClient(t)
	_, _, err = bot.Apps.ListInstallations(w.ctx, nil)
	wantStatus(t, err, http.StatusUnauthorized, "installation token on /app/installations")

	// Scoped token: one repository, contents read only.
	tok, _, err := app.Apps.CreateInstallationToken(w.ctx, w.inst.ID, &github.InstallationTokenOptions{
		Repositories: []string{"widgets"},
		Permissions:  &github.InstallationPermissions{Contents: github.String("read"), Metadata: github.String("read")},
	})
	must(t, err, "POST access_tokens")
	if left := time.Until(tok.GetExpiresAt().Time); left < 59*time.Minute || left > 61*time.Minute {
		t.Fatalf("expires_at in %v, want an hour", left)
	}
	if len(tok.Repositories) != 1 || tok.Repositories[0].GetFullName() != "acme/widgets" || tok.GetPermissions().GetContents() != "read" {
		t.Fatalf("token = %+v", tok)
	}
	scoped := enterprise(t, w.srv, nil).WithAuthToken(tok.GetToken())
	_, _, err = scoped.Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "scoped token reads its repo")
	_, _, err = scoped.Repositories.Get(w.ctx, "acme", "secret")
	wantStatus(t, err, http.StatusNotFound, "scoped token on another private repo")
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "t"})
	_, _, err = scoped.Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusForbidden, "comment without issues permission")

	_, _, err = app.Apps.CreateInstallationToken(w.ctx, w.inst.ID, &github.InstallationTokenOptions{Repositories: []string{"solo"}})
	wantStatus(t, err, http.StatusUnprocessableEntity, "token for a repo outside the installation")
	_, _, err = app.Apps.CreateInstallationToken(w.ctx, w.inst.ID, &github.InstallationTokenOptions{
		Permissions: &github.InstallationPermissions{Administration: github.String("write")},
	})
	wantStatus(t, err, http.StatusUnprocessableEntity, "token with ungranted permissions")
	_, _, err = app.Apps.CreateInstallationToken(w.ctx, 999, nil)
	wantStatus(t, err, http.StatusNotFound, "token for an unknown installation")

	// The record names the credential, never the secret.
	for _, q := range w.srv.Requests(githubtest.Match("POST", "/api/v3/app/installations/*/access_tokens")) {
		if q.Header.Get("Authorization") != "" {
			t.Fatal("Authorization header recorded")
		}
		if q.Status == http.StatusCreated && q.Auth != githubtest.AuthApp {
			t.Fatalf("access token request recorded as %s", q.Auth)
		}
	}
}

func TestInstallationToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	bot, itr := w.botClient(t)

	repos, _, err := bot.Apps.ListRepos(w.ctx, nil)
	must(t, err, "GET /installation/repositories")
	if repos.GetTotalCount() != 2 || repos.Repositories[0].GetFullName() != "acme/widgets" || !repos.Repositories[1].GetPrivate() {
		t.Fatalf("repos = %+v", repos)
	}
	r, _, err := bot.Repositories.Get(w.ctx, "acme", "secret")
	must(t, err, "private repo in the installation")
	if r.GetDefaultBranch() != "main" || !r.GetPermissions()["push"] || r.GetCloneURL() != w.srv.URL+"/acme/secret.git" {
		t.Fatalf("repo = %+v", r)
	}
	// Outside the installation: public repos read, writes refused.
	_, _, err = bot.Repositories.Get(w.ctx, "dave", "solo")
	must(t, err, "public repo outside the installation")
	w.srv.AddIssue("dave/solo", githubtest.IssueSpec{Author: "dave", Title: "hi"})
	_, _, err = bot.Issues.CreateComment(w.ctx, "dave", "solo", 1, &github.IssueComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusForbidden, "comment outside the installation")
	_, _, err = bot.Users.Get(w.ctx, "")
	wantStatus(t, err, http.StatusForbidden, "GET /user with an installation token")

	tok, err := itr.Token(w.ctx)
	must(t, err, "Token")
	if exp, _, _ := itr.Expiry(); time.Until(exp) < 59*time.Minute {
		t.Fatalf("expiry %v", exp)
	}
	mints := w.srv.Requests(githubtest.Match("POST", "/api/v3/app/installations/*/access_tokens"))
	if len(mints) != 1 {
		t.Fatalf("%d token mints for one hour-long token", len(mints))
	}
	for _, q := range w.srv.Requests(githubtest.Match("GET", "/api/v3/repos/acme/secret")) {
		if q.Auth != githubtest.AuthInstallation || q.InstallationID != w.inst.ID || q.Login != "asb-test[bot]" {
			t.Fatalf("recorded %+v", q)
		}
	}

	// Revoked and uninstalled tokens answer 401 Bad credentials.
	w.srv.RevokeToken(tok)
	_, _, err = enterprise(t, w.srv, nil).WithAuthToken(tok).Repositories.Get(w.ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusUnauthorized, "revoked token")
	other := w.srv.InstallationToken(w.inst.ID)
	w.srv.RemoveInstallation(w.inst.ID)
	_, _, err = enterprise(t, w.srv, nil).WithAuthToken(other).Repositories.Get(w.ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusUnauthorized, "token of a removed installation")
	var er *github.ErrorResponse
	if !asErr(err, &er) || er.Message != "Bad credentials" {
		t.Fatalf("message = %v", err)
	}
}

func TestInstallationTokenRefreshAndExpiry(t *testing.T) {
	t.Parallel()
	// Tokens under a minute are re-minted by ghinstallation on every call.
	w := newWorld(t, githubtest.Options{TokenTTL: 30 * time.Second})
	bot, _ := w.botClient(t)
	for i := 0; i < 3; i++ {
		_, _, err := bot.Repositories.Get(w.ctx, "acme", "widgets")
		must(t, err, "GET repo")
	}
	if n := len(w.srv.Requests(githubtest.Match("POST", "/api/v3/app/installations/*/access_tokens"))); n != 3 {
		t.Fatalf("%d mints, want 3", n)
	}

	short := newWorld(t, githubtest.Options{TokenTTL: time.Second})
	tok := short.srv.InstallationToken(short.inst.ID)
	time.Sleep(1100 * time.Millisecond)
	_, _, err := enterprise(t, short.srv, nil).WithAuthToken(tok).Repositories.Get(short.ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusUnauthorized, "expired token")
}
