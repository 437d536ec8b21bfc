-- Browser sessions of the Web Host: only a hash of each cookie value is kept.
CREATE TABLE host_sessions (
    token_hash TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
