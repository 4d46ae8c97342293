-- Personal GitHub tokens stored per owner and login (SPEC §4.1 Identity).
-- The token is sealed (app.Secrets, label "github-account:<id>"); every
-- other column is what probing the token found, never the token.
CREATE TABLE github_accounts (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    login       TEXT NOT NULL,
    login_key   TEXT NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    user_id     INTEGER NOT NULL DEFAULT 0,
    orgs        TEXT NOT NULL DEFAULT '[]',
    scopes      TEXT NOT NULL DEFAULT '[]',
    token_type  TEXT NOT NULL DEFAULT '',
    sealed      BLOB NOT NULL,
    added_at    TEXT NOT NULL,
    checked_at  TEXT NOT NULL,
    UNIQUE (owner, login_key)
);
CREATE INDEX github_accounts_login ON github_accounts (login_key);
