-- Host capabilities (spec 000 §5): which ones an attached host provides and which
-- the person revoked, every call an agent or app made, its decision and outcome;
-- and the artifacts that calls saved or picked.
CREATE TABLE host_capabilities (
    name        TEXT PRIMARY KEY,
    provided_at TEXT,
    revoked_at  TEXT
);

CREATE TABLE capability_calls (
    conversation_id    TEXT NOT NULL,
    call_id            TEXT NOT NULL,
    envelope_id        TEXT,
    requester_kind     TEXT NOT NULL,   -- agent | app
    requester_id       TEXT NOT NULL,   -- the agent id, or the app instance id
    capability         TEXT NOT NULL,
    risk               TEXT NOT NULL,
    reason             TEXT NOT NULL,   -- shown in the dialog, never logged
    arguments          BLOB NOT NULL,   -- for the provider, never logged or audited
    phrase             TEXT,            -- restricted: what the person must type
    state              TEXT NOT NULL,
    decision           TEXT,            -- allow | deny | remembered | automatic
    result             BLOB,
    code               TEXT,
    result_envelope_id TEXT,
    created_at         TEXT NOT NULL,
    expires_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, call_id, requester_kind)
);
CREATE INDEX capability_calls_open ON capability_calls(state, expires_at);

CREATE TABLE artifacts (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    name            TEXT NOT NULL,
    media_type      TEXT NOT NULL,
    size            INTEGER NOT NULL,
    sha256          TEXT NOT NULL,
    body            BLOB NOT NULL,
    call_id         TEXT,
    created_at      TEXT NOT NULL
);
