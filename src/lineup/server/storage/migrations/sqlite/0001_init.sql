-- LineUp AppServer schema, version 1.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL
);

CREATE TABLE user_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    expires_at TEXT NOT NULL,
    revoked    INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX user_tokens_user ON user_tokens(user_id);

CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE agent_keys (
    key_hash   TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL REFERENCES agents(id),
    revoked    INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    agent_id   TEXT NOT NULL REFERENCES agents(id),
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX conversations_user ON conversations(user_id);
CREATE INDEX conversations_agent ON conversations(agent_id);

CREATE TABLE envelopes (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL,
    envelope_id     TEXT NOT NULL,
    type            TEXT NOT NULL,
    sender_kind     TEXT NOT NULL,
    body            BLOB NOT NULL,
    received_at     TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq),
    UNIQUE (conversation_id, envelope_id)
) WITHOUT ROWID;
