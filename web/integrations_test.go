package web_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
	"github.com/asb-dev/asb/web"
)

const (
	integToken  = "ghp_integTESTTESTTESTTESTTESTTESTTESTTE01"
	integSecret = "Bearer integ-mcp-secret-XYZ"
)

// integrationsEnv is an API over a Service that can store GitHub tokens
// and MCP servers, with "bob-key" as a second, ordinary caller.
func integrationsEnv(t *testing.T) *apiEnv {
	t.Helper()
	keys, err := seal.New(bytes.Repeat([]byte{3}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	prober := apptest.NewFakeProber()
	prober.Add(integToken, app.GitHubIdentity{Login: "alice", Name: "Alice <A>", Orgs: []string{"acme", "tools"}, Scopes: []string{"repo"}}, "acme/api")
	return newAPI(t, envConfig{noRun: true, secrets: keys, github: prober, options: func(o *web.Options) {
		o.Authenticator = web.AuthenticatorFunc(func(r *http.Request) (app.Actor, error) {
			if k, _ := web.BearerToken(r); k == "bob-key" {
				return app.Actor{Account: "acc_bob", Name: "bob"}, nil
			}
			return web.OperatorTokenAuthenticator(testToken).Authenticate(r)
		})
	}})
}

func TestIntegrationsPageAddsAndRemovesAGitHubAccount(t *testing.T) {
	e := integrationsEnv(t)
	b := signedIn(t, e)
	res := b.get("/integrations")
	if res.status != 200 || !strings.Contains(res.body, "No GitHub account stored yet") || !strings.Contains(res.body, "No MCP server yet") {
		t.Fatalf("empty page = %d\n%s", res.status, res.body)
	}
	// A token GitHub refuses: the error is next to the field, the token is not sent back.
	const unknown = "ghp_unknownXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
	res = b.post("/integrations/github", url.Values{"token": {unknown}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="gh-token-error"`) || !strings.Contains(res.body, "invalid or expired") {
		t.Fatalf("bad token = %d\n%s", res.status, res.body)
	}
	if strings.Contains(res.body, unknown) {
		t.Fatal("the refused token was rendered back")
	}
	res = b.post("/integrations/github", url.Values{"token": {integToken}})
	loc := res.header.Get("Location")
	if res.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/integrations?done=github&id=gha_") {
		t.Fatalf("add = %d → %q\n%s", res.status, loc, res.body)
	}
	res = b.get(loc)
	for _, want := range []string{"Added GitHub account alice", "organisations: acme, tools", "scopes: repo", "Alice &lt;A&gt;", `data-account="gha_`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("page after adding lacks %q", want)
		}
	}
	if strings.Contains(res.body, integToken) || strings.Contains(e.logs.String(), integToken) {
		t.Fatal("the token was rendered or logged")
	}
	id := strings.TrimPrefix(loc, "/integrations?done=github&id=")
	id = strings.TrimSuffix(id, "#github")
	// Removing asks first, and only the confirmation removes.
	res = b.post("/integrations/remove", url.Values{"kind": {"github"}, "id": {id}})
	if res.status != 200 || !strings.Contains(res.body, "Remove the GitHub account alice and its token?") || !strings.Contains(res.body, `name="confirm" value="yes"`) {
		t.Fatalf("remove without confirmation = %d\n%s", res.status, res.body)
	}
	if list, _ := e.svc.GitHubAccounts(e.ctx); len(list) != 1 {
		t.Fatal("asking for a confirmation removed the account")
	}
	res = b.post("/integrations/remove", url.Values{"kind": {"github"}, "id": {id}, "confirm": {"yes"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("confirmed remove = %d\n%s", res.status, res.body)
	}
	if list, _ := e.svc.GitHubAccounts(e.ctx); len(list) != 0 {
		t.Fatalf("after remove: %+v", list)
	}
	if res = b.post("/integrations/remove", url.Values{"kind": {"github"}, "id": {id}, "confirm": {"yes"}}); res.status != http.StatusNotFound {
		t.Fatalf("removing twice = %d", res.status)
	}
}

func TestIntegrationsPageAddsAndRemovesAnMCPServer(t *testing.T) {
	e := integrationsEnv(t)
	b := signedIn(t, e)
	// Errors land next to their field; header values are never sent back.
	cases := []struct {
		form  url.Values
		field string
	}{
		{url.Values{"name": {"a b"}, "url": {"https://x.example.com"}, "headers": {"Authorization: " + integSecret}}, "mcp-name-error"},
		{url.Values{"name": {"docs"}, "url": {"javascript:alert(1)"}, "headers": {"Authorization: " + integSecret}}, "mcp-url-error"},
		{url.Values{"name": {"docs"}, "url": {"https://x.example.com"}, "headers": {"Authorization " + integSecret}}, "mcp-headers-error"},
		{url.Values{"name": {"docs"}, "url": {"https://x.example.com"}, "headers": {"Bad Name: " + integSecret}}, "mcp-headers-error"},
	}
	for _, c := range cases {
		res := b.post("/integrations/mcp", c.form)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="`+c.field+`"`) {
			t.Errorf("%v = %d, want the error at %s\n%s", c.form, res.status, c.field, res.body)
		}
		if strings.Contains(res.body, "integ-mcp-secret") {
			t.Errorf("%v: a header value was rendered back", c.form)
		}
	}
	res := b.post("/integrations/mcp", url.Values{"name": {"docs"}, "url": {"https://docs.example.com/mcp"},
		"headers": {"Authorization: " + integSecret + "\r\n\r\nX-Team: core\r\n"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("add = %d\n%s", res.status, res.body)
	}
	res = b.get(res.header.Get("Location"))
	for _, want := range []string{"MCP server saved", "<strong>docs</strong>", "https://docs.example.com/mcp", "Authorization, X-Team"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("page after adding lacks %q", want)
		}
	}
	if strings.Contains(res.body, "integ-mcp-secret") || strings.Contains(e.logs.String(), "integ-mcp-secret") {
		t.Fatal("a header value was rendered or logged")
	}
	list, err := e.svc.MCPServers(e.ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("stored = %+v %v", list, err)
	}
	res = b.post("/integrations/remove", url.Values{"kind": {"mcp"}, "id": {list[0].ID}})
	if res.status != 200 || !strings.Contains(res.body, "Remove the MCP server docs") {
		t.Fatalf("remove without confirmation = %d\n%s", res.status, res.body)
	}
	if res = b.post("/integrations/remove", url.Values{"kind": {"mcp"}, "id": {list[0].ID}, "confirm": {"yes"}}); res.status != http.StatusSeeOther {
		t.Fatalf("confirmed remove = %d", res.status)
	}
	if list, _ := e.svc.MCPServers(e.ctx); len(list) != 0 {
		t.Fatalf("after remove: %+v", list)
	}
	if res = b.post("/integrations/remove", url.Values{"kind": {"other"}, "id": {"x"}}); res.status != http.StatusBadRequest {
		t.Fatalf("unknown kind = %d", res.status)
	}
}

func TestIntegrationChangesNeedTheCSRFToken(t *testing.T) {
	e := integrationsEnv(t)
	m, err := e.svc.AddMCPServer(e.ctx, app.MCPServerInput{Name: "keep", URL: "https://keep.example.com/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	b := signedIn(t, e)
	cases := []struct {
		path string
		form url.Values
	}{
		{"/integrations/github", url.Values{"token": {integToken}}},
		{"/integrations/mcp", url.Values{"name": {"new"}, "url": {"https://new.example.com/mcp"}}},
		{"/integrations/remove", url.Values{"kind": {"mcp"}, "id": {m.ID}, "confirm": {"yes"}}},
	}
	for _, c := range cases {
		for _, tok := range []string{"", "wrong"} {
			f := url.Values{"csrf": {tok}}
			for k, v := range c.form {
				f[k] = v
			}
			if res := b.post(c.path, f); res.status != http.StatusForbidden {
				t.Errorf("POST %s with CSRF %q = %d, want 403", c.path, tok, res.status)
			}
		}
	}
	// The JSON routes take the cookie too, but never without the token.
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/mcp-servers.json", `{"name":"new","url":"https://new.example.com/mcp"}`},
		{"DELETE", "/mcp-servers.json?id=" + m.ID, ""},
		{"POST", "/github/accounts.json", `{"token":"` + integToken + `"}`},
	} {
		for _, tok := range []string{"", "wrong"} {
			r, _ := http.NewRequest(req.method, e.srv.URL+req.path, strings.NewReader(req.body))
			r.Header.Set("Content-Type", "application/json")
			if tok != "" {
				r.Header.Set("X-CSRF-Token", tok)
			}
			if res := b.send(r); res.status != http.StatusForbidden {
				t.Errorf("%s %s with the cookie and CSRF %q = %d, want 403", req.method, req.path, tok, res.status)
			}
		}
	}
	accts, _ := e.svc.GitHubAccounts(e.ctx)
	servers, _ := e.svc.MCPServers(e.ctx)
	if len(accts) != 0 || len(servers) != 1 || servers[0].ID != m.ID {
		t.Fatalf("refused changes changed something: %d accounts, servers %+v", len(accts), servers)
	}
	// With the token the same cookie request goes through.
	r, _ := http.NewRequest("POST", e.srv.URL+"/mcp-servers.json", strings.NewReader(`{"name":"new","url":"https://new.example.com/mcp"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-CSRF-Token", b.csrf)
	if res := b.send(r); res.status != http.StatusOK {
		t.Errorf("POST /mcp-servers.json with the cookie and its CSRF token = %d %s", res.status, res.body)
	}
	// Without a session the page goes to the gate and changes answer 401.
	anon := newBrowser(t, e)
	if res := anon.get("/integrations"); res.status != http.StatusSeeOther {
		t.Errorf("GET /integrations without a session = %d", res.status)
	}
	if res := anon.post("/integrations/mcp", url.Values{"name": {"x"}, "url": {"https://x.example.com"}, "csrf": {"x"}}); res.status != http.StatusUnauthorized {
		t.Errorf("POST without a session = %d", res.status)
	}
}

func TestMCPServersRoutes(t *testing.T) {
	e := integrationsEnv(t)
	r := e.do(t, "POST", "/mcp-servers.json", map[string]any{"name": "docs", "url": "https://docs.example.com/mcp",
		"headers": map[string]string{"Authorization": integSecret}})
	e.mustOK(t, r)
	var added struct {
		Server app.MCPServer `json:"server"`
	}
	r.json(t, &added)
	if !strings.HasPrefix(added.Server.ID, "mcp_") || added.Server.Name != "docs" || strings.Join(added.Server.HeaderNames, ",") != "Authorization" {
		t.Fatalf("added = %s", r.body)
	}
	if strings.Contains(r.body, "integ-mcp-secret") {
		t.Fatal("the answer holds a header value")
	}
	r = e.do(t, "GET", "/mcp-servers.json", nil)
	e.mustOK(t, r)
	var list struct {
		Servers []app.MCPServer `json:"servers"`
	}
	r.json(t, &list)
	if len(list.Servers) != 1 || list.Servers[0].ID != added.Server.ID || strings.Contains(r.body, "integ-mcp-secret") {
		t.Fatalf("list = %s", r.body)
	}
	// Bob sees none of them and cannot remove them.
	r = e.do(t, "GET", "/mcp-servers.json", nil, "Authorization", "Bearer bob-key")
	e.mustOK(t, r)
	if r.json(t, &list); len(list.Servers) != 0 || !strings.Contains(r.body, "[]") {
		t.Fatalf("bob's list = %s", r.body)
	}
	errorOf(t, e.do(t, "DELETE", "/mcp-servers.json?id="+added.Server.ID, nil, "Authorization", "Bearer bob-key"), http.StatusNotFound)
	// Refusals: bad URL, unknown field, missing id, no credentials.
	errorOf(t, e.do(t, "POST", "/mcp-servers.json", map[string]any{"name": "x", "url": "file:///etc/passwd"}), http.StatusBadRequest)
	errorOf(t, e.do(t, "POST", "/mcp-servers.json", map[string]any{"name": "x", "url": "https://x.example.com", "command": "sh"}), http.StatusBadRequest)
	errorOf(t, e.do(t, "DELETE", "/mcp-servers.json", nil), http.StatusBadRequest)
	errorOf(t, e.do(t, "GET", "/mcp-servers.json", nil, "Authorization", ""), http.StatusUnauthorized)

	e.mustOK(t, e.do(t, "DELETE", "/mcp-servers.json?id="+added.Server.ID, nil))
	r = e.do(t, "GET", "/mcp-servers.json", nil)
	if r.json(t, &list); len(list.Servers) != 0 {
		t.Fatalf("after delete: %s", r.body)
	}
	if strings.Contains(e.logs.String(), "integ-mcp-secret") {
		t.Fatal("a header value reached the log")
	}
}
