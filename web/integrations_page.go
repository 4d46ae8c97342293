package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/asb-dev/asb/app"
)

// integrationsData is the integrations page: stored GitHub accounts and
// the MCP servers given to the caller's boxes. Neither a token nor a
// header value is ever put in it.
type integrationsData struct {
	Accounts []app.GitHubAccount
	Servers  []app.MCPServer
	// Notice reports what the last change did.
	Notice string
	// GitHubErr is shown next to the token field.
	GitHubErr string
	MCP       mcpForm
	// Confirm, when set, asks before removing something.
	Confirm *removal
}

// mcpForm is the add-an-MCP-server form as submitted. The headers are
// never sent back: they may hold a key.
type mcpForm struct {
	Name       string
	URL        string
	NameErr    string
	URLErr     string
	HeadersErr string
	Err        string
}

// removal names what a confirmation is about.
type removal struct {
	Kind  string // "github" or "mcp"
	ID    string
	Label string
}

// removeButtonData fills a row's remove-button template.
type removeButtonData struct {
	CSRF, Kind, ID string
}

func removeButton(csrf, kind, id string) removeButtonData {
	return removeButtonData{CSRF: csrf, Kind: kind, ID: id}
}

func (d *dash) integrationsPage(w http.ResponseWriter, r *http.Request) {
	var nd integrationsData
	q := r.URL.Query()
	switch q.Get("done") {
	case "github":
		nd.Notice = "github"
	case "mcp":
		nd.Notice = "MCP server saved. Runs started from now on get it."
	case "removed":
		nd.Notice = "Removed."
	}
	d.renderIntegrations(w, r, http.StatusOK, nd, q.Get("id"))
}

// renderIntegrations lists both kinds and renders the page. added names
// the GitHub account just stored, whose probe result the notice shows.
func (d *dash) renderIntegrations(w http.ResponseWriter, r *http.Request, code int, nd integrationsData, added string) {
	var err error
	if nd.Accounts, err = d.svc.GitHubAccounts(r.Context()); err != nil {
		d.fail(w, r, err)
		return
	}
	if nd.Servers, err = d.svc.MCPServers(r.Context()); err != nil {
		d.fail(w, r, err)
		return
	}
	if nd.Notice == "github" {
		nd.Notice = ""
		for _, a := range nd.Accounts {
			if a.ID == added {
				nd.Notice = "Added GitHub account " + a.Login + githubFacts(a) + "."
			}
		}
	}
	p := d.newPage(r, "Integrations", "integrations")
	p.Data = nd
	d.render(w, r, code, "integrations", p)
}

// githubFacts says what probing a token found, for the notice.
func githubFacts(a app.GitHubAccount) string {
	var parts []string
	if len(a.Orgs) > 0 {
		parts = append(parts, "organisations: "+strings.Join(a.Orgs, ", "))
	}
	if len(a.Scopes) > 0 {
		parts = append(parts, "scopes: "+strings.Join(a.Scopes, ", "))
	}
	parts = append(parts, a.TokenType+" token")
	return " (" + strings.Join(parts, "; ") + ")"
}

func (d *dash) addGitHubPost(w http.ResponseWriter, r *http.Request) {
	acct, err := d.svc.AddGitHubToken(r.Context(), strings.TrimSpace(r.PostFormValue("token")))
	if err != nil {
		code := StatusCode(app.ErrorCode(err))
		if code >= 500 && code != http.StatusServiceUnavailable {
			d.fail(w, r, err)
			return
		}
		d.renderIntegrations(w, r, code, integrationsData{GitHubErr: app.ErrorMessage(err)}, "")
		return
	}
	http.Redirect(w, r, "/integrations?done=github&id="+acct.ID+"#github", http.StatusSeeOther)
}

func (d *dash) addMCPPost(w http.ResponseWriter, r *http.Request) {
	f := mcpForm{Name: strings.TrimSpace(r.PostFormValue("name")), URL: strings.TrimSpace(r.PostFormValue("url"))}
	headers, herr := parseHeaderLines(r.PostFormValue("headers"))
	if herr != "" {
		f.HeadersErr = herr
		d.renderIntegrations(w, r, http.StatusBadRequest, integrationsData{MCP: clipForm(f)}, "")
		return
	}
	if _, err := d.svc.AddMCPServer(r.Context(), app.MCPServerInput{Name: f.Name, URL: f.URL, Headers: headers}); err != nil {
		code := StatusCode(app.ErrorCode(err))
		if code >= 500 && code != http.StatusServiceUnavailable {
			d.fail(w, r, err)
			return
		}
		msg := app.ErrorMessage(err)
		switch {
		case strings.HasPrefix(msg, "name"):
			f.NameErr = msg
		case strings.HasPrefix(msg, "url"):
			f.URLErr = msg
		case strings.Contains(msg, "header"):
			f.HeadersErr = msg + " (enter the headers again: they are never shown back)"
		default:
			f.Err = msg
		}
		d.renderIntegrations(w, r, code, integrationsData{MCP: clipForm(f)}, "")
		return
	}
	http.Redirect(w, r, "/integrations?done=mcp#mcp", http.StatusSeeOther)
}

func clipForm(f mcpForm) mcpForm {
	f.Name, f.URL = clipText(f.Name, 200), clipText(f.URL, 2100)
	return f
}

// parseHeaderLines reads "Name: value" lines. Its errors name the line,
// never its content.
func parseHeaderLines(s string) (map[string]string, string) {
	out := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, "Line " + strconv.Itoa(i+1) + ": write each header as Name: value (enter the headers again: they are never shown back)."
		}
		if _, dup := out[name]; dup {
			return nil, "Header " + clipText(name, 100) + " is given twice."
		}
		out[name] = strings.TrimSpace(value)
	}
	return out, ""
}

// removePost removes a GitHub account or an MCP server once confirmed;
// without the confirmation it shows the question.
func (d *dash) removePost(w http.ResponseWriter, r *http.Request) {
	kind, id := r.PostFormValue("kind"), r.PostFormValue("id")
	if kind != "github" && kind != "mcp" {
		d.fail(w, r, app.Errorf(app.EINVALID, "kind must be github or mcp"))
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		label, err := d.removalLabel(r, kind, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.renderIntegrations(w, r, http.StatusOK, integrationsData{Confirm: &removal{Kind: kind, ID: id, Label: label}}, "")
		return
	}
	var err error
	if kind == "github" {
		err = d.svc.RemoveGitHubAccount(r.Context(), id)
	} else {
		err = d.svc.RemoveMCPServer(r.Context(), id)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/integrations?done=removed#"+kind, http.StatusSeeOther)
}

// removalLabel names the object the caller asked to remove, or ENOTFOUND
// when the caller cannot see it.
func (d *dash) removalLabel(r *http.Request, kind, id string) (string, error) {
	if kind == "github" {
		list, err := d.svc.GitHubAccounts(r.Context())
		for _, a := range list {
			if a.ID == id {
				return "the GitHub account " + a.Login + " and its token", nil
			}
		}
		if err != nil {
			return "", err
		}
	} else {
		list, err := d.svc.MCPServers(r.Context())
		for _, m := range list {
			if m.ID == id {
				return "the MCP server " + m.Name + " (" + m.URL + ") and its headers", nil
			}
		}
		if err != nil {
			return "", err
		}
	}
	return "", app.Errorf(app.ENOTFOUND, "nothing to remove with id %s", clipText(id, 60))
}
