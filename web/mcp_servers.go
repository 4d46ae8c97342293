package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/asb-dev/asb/app"
)

// mountMCPServers registers the MCP-servers-for-boxes routes: list, add
// (or replace by name; header values are stored sealed and never
// answered back) and remove. Each is one Service call for the caller.
func (a *api) mountMCPServers(r chi.Router) {
	r.Get("/mcp-servers.json", listHandler(a, "servers", a.svc.MCPServers))
	r.Post("/mcp-servers.json", a.addMCPServer)
	r.Delete("/mcp-servers.json", a.removeHandler(a.svc.RemoveMCPServer))
}

func (a *api) addMCPServer(w http.ResponseWriter, r *http.Request) {
	var req app.MCPServerInput
	if !a.decode(w, r, &req) {
		return
	}
	m, err := a.svc.AddMCPServer(r.Context(), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": m})
}
