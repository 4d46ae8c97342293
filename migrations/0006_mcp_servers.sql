-- HTTP MCP servers an owner's agents are given in every box (SPEC §4.4
-- Integrations, §6.2). The headers (names and values, often an API key)
-- are sealed as one JSON object (app.Secrets, label "mcp-server:<id>");
-- header_names repeats the names only, for display.
CREATE TABLE mcp_servers (
    id            TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    url           TEXT NOT NULL,
    header_names  TEXT NOT NULL DEFAULT '[]',
    sealed        BLOB NOT NULL,
    added_at      TEXT NOT NULL,
    UNIQUE (owner, name_key)
);
