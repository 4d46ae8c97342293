package sandbox

import (
	"encoding/json"

	"github.com/asb-dev/asb/app"
)

// mcpConfigEnv carries a turn's MCP configuration to the launcher on
// stdin; the launcher writes it to a file and unsets it.
const mcpConfigEnv = "ASB_MCP_CONFIG"

// mcpConfig renders the session owner's MCP servers as the JSON file
// Claude Code's --mcp-config reads. The headers hold secrets: the result
// travels only on the launch's stdin.
func mcpConfig(servers []app.BoxMCPServer) (string, error) {
	type entry struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	all := map[string]entry{}
	for _, m := range servers {
		all[m.Name] = entry{Type: "http", URL: m.URL, Headers: m.Headers}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": all})
	if err != nil {
		return "", app.WrapError(app.EINTERNAL, err, "cannot render the MCP configuration")
	}
	return string(b), nil
}
