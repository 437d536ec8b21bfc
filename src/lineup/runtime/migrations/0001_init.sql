-- LineUp Runtime local store, version 1.
CREATE TABLE session (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    title      TEXT NOT NULL,
    cursor     INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE timeline (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    envelope_id     TEXT NOT NULL,
    seq             INTEGER,
    type            TEXT NOT NULL,
    sender_kind     TEXT NOT NULL,
    body            BLOB NOT NULL,
    state           TEXT NOT NULL,
    error_code      TEXT,
    created_at      TEXT NOT NULL,
    UNIQUE (conversation_id, envelope_id)
);
CREATE INDEX timeline_by_seq ON timeline(conversation_id, seq);

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    envelope_id     TEXT NOT NULL,
    body            BLOB NOT NULL,
    created_at      TEXT NOT NULL,
    UNIQUE (conversation_id, envelope_id)
);

CREATE TABLE inbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    app_scope       TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    envelope_id     TEXT NOT NULL,
    acked_at        TEXT,
    UNIQUE (app_scope, conversation_id, envelope_id)
);
CREATE INDEX inbox_unacked ON inbox(app_scope, acked_at, id);

CREATE TABLE rejections (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    code            TEXT NOT NULL,
    size            INTEGER NOT NULL,
    at              TEXT NOT NULL
);

CREATE TABLE audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    subject TEXT NOT NULL,
    outcome TEXT NOT NULL,
    code    TEXT
);
