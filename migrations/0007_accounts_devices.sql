-- Multi-user mode (SPEC §6.2): account flags, one-time invite tokens next
-- to personal API keys, and signed-in browsers ("devices"). Keys, invites
-- and device cookies are stored only as SHA-256 digests; passwords only as
-- scrypt hashes.
ALTER TABLE accounts ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;

-- kind 'key' is a bearer API key; 'invite' is a one-time token an admin
-- hands over, exchanged once at the sign-in page for a session.
ALTER TABLE api_keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'key' CHECK (kind IN ('key', 'invite'));
-- prefix is the key's first characters, shown so people can tell keys apart.
ALTER TABLE api_keys ADD COLUMN prefix TEXT NOT NULL DEFAULT '';
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

CREATE TABLE devices (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    hash          BLOB NOT NULL UNIQUE,  -- SHA-256 of the cookie value
    user_agent    TEXT NOT NULL DEFAULT '',
    client_ip     TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    seen_at       TEXT NOT NULL,
    revoked_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX devices_account ON devices (account_id, created_at);

CREATE UNIQUE INDEX accounts_github_login ON accounts (lower(github_login)) WHERE github_login <> '';
