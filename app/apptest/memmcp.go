package apptest

import (
	"slices"
	"sort"
	"strings"

	"github.com/asb-dev/asb/app"
)

type memMCP struct {
	srv    app.MCPServer
	sealed []byte
}

func cloneMCP(m app.MCPServer) app.MCPServer {
	m.HeaderNames = slices.Clone(m.HeaderNames)
	return m
}

func (t *memTx) PutMCPServer(m app.MCPServer, sealed []byte) error {
	for id, o := range t.st.mcps {
		if id != m.ID && o.srv.Owner == m.Owner && strings.EqualFold(o.srv.Name, m.Name) {
			return app.Errorf(app.ECONFLICT, "already exists")
		}
	}
	t.st.mcps[m.ID] = memMCP{srv: cloneMCP(m), sealed: slices.Clone(sealed)}
	return nil
}

func (t *memTx) GetMCPServer(id string) (app.MCPServer, []byte, error) {
	o, ok := t.st.mcps[id]
	if !ok {
		return app.MCPServer{}, nil, app.Errorf(app.ENOTFOUND, "MCP server %s not found", id)
	}
	return cloneMCP(o.srv), slices.Clone(o.sealed), nil
}

func (t *memTx) ListMCPServers(owner app.AccountID) ([]app.MCPServer, error) {
	out := []app.MCPServer{}
	for _, o := range t.st.mcps {
		if owner == "" || o.srv.Owner == owner {
			out = append(out, cloneMCP(o.srv))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ni, nj := strings.ToLower(out[i].Name), strings.ToLower(out[j].Name)
		if ni != nj {
			return ni < nj
		}
		return out[i].Owner < out[j].Owner
	})
	return out, nil
}

func (t *memTx) DeleteMCPServer(id string) error {
	if _, ok := t.st.mcps[id]; !ok {
		return app.Errorf(app.ENOTFOUND, "MCP server %s not found", id)
	}
	delete(t.st.mcps, id)
	return nil
}
