-- asb's initial schema. Times are UTC RFC 3339 text with nanoseconds;
-- structured values (origins, sources, usage) are JSON text.

CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    username       TEXT NOT NULL UNIQUE,
    email          TEXT NOT NULL DEFAULT '',
    github_login   TEXT NOT NULL DEFAULT '',
    password_hash  TEXT NOT NULL DEFAULT '',
    admin          INTEGER NOT NULL DEFAULT 0,
    plan           TEXT NOT NULL DEFAULT '',
    trial_ends_at  TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL
);

-- The operator owns everything created with the operator token.
INSERT INTO accounts (id, username, admin, created_at)
VALUES ('operator', 'operator', 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    hash          BLOB NOT NULL UNIQUE,  -- SHA-256 of the key; the key itself is shown once
    created_at    TEXT NOT NULL,
    last_used_at  TEXT NOT NULL DEFAULT '',
    revoked_at    TEXT NOT NULL DEFAULT ''
);

CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    owner             TEXT NOT NULL REFERENCES accounts(id),
    state             TEXT NOT NULL CHECK (state IN ('active', 'closed')),
    title             TEXT NOT NULL,
    origin            TEXT NOT NULL,
    sources           TEXT NOT NULL DEFAULT '[]',
    thread_key        TEXT NOT NULL DEFAULT '',
    box_host          TEXT NOT NULL DEFAULT '',
    box_name          TEXT NOT NULL DEFAULT '',
    agent_session_id  TEXT NOT NULL DEFAULT '',
    allow_domains     TEXT NOT NULL DEFAULT '[]',
    pinned            INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    closed_at         TEXT NOT NULL DEFAULT ''
);
-- A pull request or issue has at most one active session.
CREATE UNIQUE INDEX sessions_active_thread ON sessions (thread_key)
    WHERE state = 'active' AND thread_key <> '';
CREATE INDEX sessions_owner_created ON sessions (owner, created_at);
CREATE INDEX sessions_created ON sessions (created_at);

CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('task', 'followup')),
    prompt        TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('queued', 'starting', 'running', 'waiting', 'done', 'failed', 'cancelled')),
    origin        TEXT NOT NULL,
    question      TEXT NOT NULL DEFAULT '',
    turn          INTEGER NOT NULL DEFAULT 0,
    agent_offset  INTEGER NOT NULL DEFAULT 0,
    publishing    INTEGER NOT NULL DEFAULT 0,
    summary       TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    exit_code     INTEGER NOT NULL DEFAULT 0,
    usage         TEXT NOT NULL DEFAULT '{}',
    result        TEXT NOT NULL DEFAULT '{}',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    started_at    TEXT NOT NULL DEFAULT '',
    finished_at   TEXT NOT NULL DEFAULT '',
    UNIQUE (session_id, seq)
);
CREATE INDEX runs_state_created ON runs (state, created_at);

CREATE TABLE questions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    text         TEXT NOT NULL,
    asked_at     TEXT NOT NULL,
    answer       TEXT NOT NULL DEFAULT '',
    answered_by  TEXT NOT NULL DEFAULT '',
    answered_at  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX questions_run ON questions (run_id, id);

-- Every state change and every agent record, in one ordered log. The id
-- is the SSE event id; AUTOINCREMENT keeps ids from ever being reused.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id      TEXT NOT NULL DEFAULT '',
    type        TEXT NOT NULL,
    data        TEXT NOT NULL DEFAULT '',
    at          TEXT NOT NULL
);
CREATE INDEX events_session ON events (session_id, id);

CREATE TABLE hosts (
    name        TEXT PRIMARY KEY,
    healthy     INTEGER NOT NULL DEFAULT 0,
    capacity    INTEGER NOT NULL DEFAULT 0,
    free_mib    INTEGER NOT NULL DEFAULT 0,
    checked_at  TEXT NOT NULL DEFAULT '',
    problem     TEXT NOT NULL DEFAULT ''
);

CREATE TABLE boxes (
    host        TEXT NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('session', 'pool-free', 'pool-claimed')),
    session_id  TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    pinned      INTEGER NOT NULL DEFAULT 0,
    cpu_pct     REAL NOT NULL DEFAULT 0,
    mem_mib     INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (host, name)
);

-- GitHub webhook deliveries, deduplicated by X-GitHub-Delivery.
CREATE TABLE webhook_deliveries (
    id            TEXT PRIMARY KEY,
    event         TEXT NOT NULL,
    action        TEXT NOT NULL DEFAULT '',
    payload       BLOB NOT NULL,
    received_at   TEXT NOT NULL,
    processed_at  TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (processed_at, received_at);

-- Poller positions (per repo and feed), with the ETag of the last answer.
CREATE TABLE poll_cursors (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL DEFAULT '',
    etag        TEXT NOT NULL DEFAULT '',
    updated_at  TEXT NOT NULL
);

-- Sealed (AES-256-GCM) values: tokens, keys, app credentials.
CREATE TABLE secrets (
    name        TEXT PRIMARY KEY,
    sealed      BLOB NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL DEFAULT '',
    detail  TEXT NOT NULL DEFAULT ''
);
