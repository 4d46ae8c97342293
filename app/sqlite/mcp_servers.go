package sqlite

import (
	"strings"

	"github.com/asb-dev/asb/app"
)

type mcpServerRow struct {
	ID          string `db:"id"`
	Owner       string `db:"owner"`
	Name        string `db:"name"`
	NameKey     string `db:"name_key"`
	URL         string `db:"url"`
	HeaderNames string `db:"header_names"`
	Sealed      []byte `db:"sealed"`
	AddedAt     string `db:"added_at"`
}

func (r mcpServerRow) server() (app.MCPServer, error) {
	m := app.MCPServer{ID: r.ID, Owner: app.AccountID(r.Owner), Name: r.Name, URL: r.URL, AddedAt: parseTime(r.AddedAt)}
	return m, fromJSON(r.HeaderNames, &m.HeaderNames)
}

func (t *txn) PutMCPServer(m app.MCPServer, sealed []byte) error {
	names := m.HeaderNames
	if names == nil {
		names = []string{}
	}
	_, err := t.exec(`INSERT INTO mcp_servers (id, owner, name, name_key, url, header_names, sealed, added_at)
		VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET owner=excluded.owner, name=excluded.name, name_key=excluded.name_key,
		url=excluded.url, header_names=excluded.header_names, sealed=excluded.sealed, added_at=excluded.added_at`,
		m.ID, string(m.Owner), m.Name, strings.ToLower(m.Name), m.URL, toJSON(names), sealed, fmtTime(m.AddedAt))
	return err
}

func (t *txn) GetMCPServer(id string) (app.MCPServer, []byte, error) {
	var r mcpServerRow
	if err := t.get(&r, `SELECT * FROM mcp_servers WHERE id = ?`, id); err != nil {
		return app.MCPServer{}, nil, notFound(err, "MCP server", id)
	}
	m, err := r.server()
	return m, r.Sealed, err
}

func (t *txn) ListMCPServers(owner app.AccountID) ([]app.MCPServer, error) {
	q, args := ownedQuery("mcp_servers", "name_key", owner)
	return selectRows(t, mcpServerRow.server, q, args...)
}

func (t *txn) DeleteMCPServer(id string) error {
	res, err := t.exec(`DELETE FROM mcp_servers WHERE id = ?`, id)
	return rowsOrNotFound(res, err, "MCP server", id)
}
