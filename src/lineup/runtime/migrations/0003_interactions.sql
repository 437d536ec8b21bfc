-- Standard interactions (spec 002 §7.3): one row per accepted interactive tool call.
-- `arguments` holds the validated arguments; `result` the result object sent to the
-- agent once final. Exactly one `tool.result` is ever queued per row, in the
-- transaction that makes the row final.
CREATE TABLE interactions (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    call_id         TEXT NOT NULL,
    envelope_id     TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    app_session_id  TEXT,
    tool            TEXT NOT NULL,
    arguments       BLOB NOT NULL,
    state           TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT,
    final_at        TEXT,
    result          BLOB,
    code            TEXT,
    result_envelope_id TEXT,
    UNIQUE (conversation_id, call_id),
    UNIQUE (conversation_id, envelope_id)
);
CREATE INDEX interactions_pending ON interactions(state, expires_at);

-- Tool calls refused before anything was created (bad arguments, stale inventory,
-- unknown app session, ...): the call id is spent and its one `rejected` result sent.
CREATE TABLE refused_calls (
    conversation_id TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    envelope_id     TEXT NOT NULL,
    code            TEXT NOT NULL,
    at              TEXT NOT NULL,
    PRIMARY KEY (conversation_id, call_id)
);

-- `interaction.dismiss` controls already handled, for idempotent replay.
CREATE TABLE interaction_controls (
    conversation_id TEXT NOT NULL,
    control_id      TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    at              TEXT NOT NULL,
    PRIMARY KEY (conversation_id, control_id)
);

-- App sub-sessions of a conversation (spec 002 §7.3); opened and closed by the app
-- lifecycle. An interaction may name one of its conversation's sessions as context.
CREATE TABLE app_sessions (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    agent_id        TEXT NOT NULL,
    app_scope       TEXT NOT NULL,
    instance_id     TEXT NOT NULL,
    state           TEXT NOT NULL,
    opened_at       TEXT NOT NULL,
    closed_at       TEXT
);

-- The inventory revision last queued to each conversation.
CREATE TABLE inventory_published (
    conversation_id TEXT PRIMARY KEY,
    revision        TEXT NOT NULL,
    at              TEXT NOT NULL
);
