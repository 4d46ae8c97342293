package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

// TestBundleRouteServesTheUploadersCommitsOnly checks GET /bundle: the
// owner of a run on an uploaded working tree downloads the bundle of the
// agent's commits; no token is 401, another owner's run 404, and a
// malformed folder or run id 400.
func TestBundleRouteServesTheUploadersCommitsOnly(t *testing.T) {
	const name = "asb-s-1-work-abcdef012345.bundle"
	alice := app.Actor{Account: "acc_alice", Name: "alice"}
	e := newAPI(t, envConfig{
		sandbox: func(sb *apptest.FakeSandbox) {
			sb.Bundles = func(box app.BoxRef, sources []app.Source) []app.Bundle {
				return []app.Bundle{{Source: sources[0], Path: "/srv/bundles/" + name, Commits: []string{"abc"}}}
			}
			sb.BundleFiles = map[string]string{name: "# v2 git bundle\nBYTES"}
		},
		service: func(d *app.Deps, _ *app.Config) { d.Workspaces = apptest.NewFakeWorkspaces() },
		options: func(o *web.Options) {
			o.Authenticator = web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
				switch tok, _ := web.BearerToken(r); tok {
				case "alice-key":
					return alice, nil
				case "bob-key":
					return app.Actor{Account: "acc_bob", Name: "bob"}, nil
				}
				return web.OperatorTokenAuthenticator(testToken).Authenticate(r)
			})
		},
	})
	actx := app.WithActor(e.ctx, alice)
	ws, err := e.svc.StageWorkspace(actx, strings.NewReader("tar"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.svc.Delegate(actx, app.DelegateRequest{Task: "fix it", Sources: []app.Source{{Workspace: ws}}})
	if err != nil {
		t.Fatal(err)
	}
	v := e.waitState(t, d.Session.ID, "done")
	run := string(v.Current.ID)
	path := "/bundle?run=" + run + "&dir=work"

	r := e.do(t, "GET", path, nil, "Authorization", "Bearer alice-key")
	e.mustOK(t, r)
	if r.body != "# v2 git bundle\nBYTES" || r.header.Get("Content-Type") != "application/octet-stream" ||
		r.header.Get("Content-Length") != "21" {
		t.Fatalf("bundle = %v %q", r.header, r.body)
	}
	errorOf(t, e.do(t, "GET", path, nil, "Authorization", ""), http.StatusUnauthorized)
	errorOf(t, e.do(t, "GET", path, nil, "Authorization", "Bearer bob-key"), http.StatusNotFound)
	for _, bad := range []string{
		"/bundle?run=" + run + "&dir=../bundles",
		"/bundle?run=" + run,
		"/bundle?run=../../etc&dir=work",
		"/bundle?dir=work",
	} {
		errorOf(t, e.do(t, "GET", bad, nil, "Authorization", "Bearer alice-key"), http.StatusBadRequest)
	}
	errorOf(t, e.do(t, "GET", "/bundle?run="+run+"&dir=other", nil, "Authorization", "Bearer alice-key"), http.StatusNotFound)
}
