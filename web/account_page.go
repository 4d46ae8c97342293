package web

import (
	"net/http"
	"strings"

	"github.com/asb-dev/asb/app"
)

// ideConfig is one client's ready-to-paste MCP configuration
// (docs/mcp.md). TOKEN stays a placeholder: the page never shows a secret.
type ideConfig struct {
	Name     string
	Where    string
	Snippets []string
}

type accountData struct {
	Actor     string
	PublicURL string
	MCPURL    string
	IDEs      []ideConfig

	// Filled by accountSections (accounts_page.go).
	MultiUser, Admin, Operator, Welcome bool
	Keys                                []app.APIKey
	NewKey, Notice, Problem             string
	Devices                             []deviceView
	HasPassword, Lapsed                 bool
	Plan, BillingURL                    string
}

func ideConfigs(base string) []ideConfig {
	mcp := base + "/mcp"
	r := strings.NewReplacer("{mcp}", mcp, "{base}", base)
	return []ideConfig{
		{Name: "Claude Code", Where: "run in a terminal", Snippets: []string{
			r.Replace(`claude mcp add --transport http asb {mcp} --header "Authorization: Bearer TOKEN"`),
			r.Replace(`claude mcp add asb -e ASB_URL={base} -e MCP_HTTP_TOKEN=TOKEN -- asb mcp`),
		}},
		{Name: "Cursor", Where: "~/.cursor/mcp.json or .cursor/mcp.json", Snippets: []string{
			r.Replace(`{ "mcpServers": { "asb": { "url": "{mcp}", "headers": { "Authorization": "Bearer TOKEN" } } } }`),
			r.Replace(`{ "mcpServers": { "asb": { "command": "asb", "args": ["mcp"], "env": { "ASB_URL": "{base}", "MCP_HTTP_TOKEN": "TOKEN" } } } }`),
		}},
		{Name: "VS Code", Where: ".vscode/mcp.json", Snippets: []string{
			r.Replace(`{ "servers": { "asb": { "type": "http", "url": "{mcp}", "headers": { "Authorization": "Bearer TOKEN" } } } }`),
			r.Replace(`{ "servers": { "asb": { "type": "stdio", "command": "asb", "args": ["mcp"], "env": { "ASB_URL": "{base}", "MCP_HTTP_TOKEN": "TOKEN" } } } }`),
		}},
		{Name: "Windsurf", Where: "~/.codeium/windsurf/mcp_config.json (a remote server uses serverUrl, not url)", Snippets: []string{
			r.Replace(`{ "mcpServers": { "asb": { "serverUrl": "{mcp}", "headers": { "Authorization": "Bearer TOKEN" } } } }`),
		}},
	}
}

func (d *dash) accountPage(w http.ResponseWriter, r *http.Request) {
	d.renderAccount(w, r, http.StatusOK, accountExtra{})
}
