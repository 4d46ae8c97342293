package apptest

import (
	"slices"

	"github.com/asb-dev/asb/app"
)

var mcpKind = memOwned[app.MCPServer]{
	noun:  "MCP server",
	id:    func(m app.MCPServer) string { return m.ID },
	owner: func(m app.MCPServer) app.AccountID { return m.Owner },
	name:  func(m app.MCPServer) string { return m.Name },
	clone: func(m app.MCPServer) app.MCPServer {
		m.HeaderNames = slices.Clone(m.HeaderNames)
		return m
	},
}

func (t *memTx) PutMCPServer(m app.MCPServer, sealed []byte) error {
	return mcpKind.put(t.st.mcps, m, sealed)
}

func (t *memTx) GetMCPServer(id string) (app.MCPServer, []byte, error) {
	return mcpKind.get(t.st.mcps, id)
}

func (t *memTx) ListMCPServers(owner app.AccountID) ([]app.MCPServer, error) {
	return mcpKind.list(t.st.mcps, owner), nil
}

func (t *memTx) DeleteMCPServer(id string) error {
	return mcpKind.del(t.st.mcps, id)
}
