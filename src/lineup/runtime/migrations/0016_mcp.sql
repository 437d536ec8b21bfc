-- MCP servers the person configured (issue 24), one row per server key. The config
-- file says what to start; this table keeps what the person decided about each server
-- (enabled, the policy for its tools, removed) and what the server last said it offers
-- (its tools, as the inventory advertises them), so the inventory is the same before
-- the server has started again. `removed`: the person removed it; it stays removed
-- until the config names it with another definition (`config_digest`).
CREATE TABLE mcp_servers (
    key            TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    config_digest  TEXT NOT NULL,
    configured     INTEGER NOT NULL DEFAULT 1,
    enabled        INTEGER NOT NULL DEFAULT 1,
    removed        INTEGER NOT NULL DEFAULT 0,
    policy         TEXT NOT NULL DEFAULT 'ask',
    server_name    TEXT,
    server_version TEXT,
    title          TEXT,
    tools          BLOB,              -- JSON: the tools last listed (McpToolSnapshot)
    listed_at      TEXT,
    updated_at     TEXT NOT NULL
);

-- An agent's calls of MCP tools: what the consent dialog shows, what the server was
-- sent, the one result. `arguments` and `result` are for the dialog and the result
-- envelope, never logged or audited.
CREATE TABLE mcp_calls (
    conversation_id    TEXT NOT NULL,
    call_id            TEXT NOT NULL,
    envelope_id        TEXT NOT NULL,
    agent_id           TEXT NOT NULL,
    server_key         TEXT NOT NULL,
    tool               TEXT NOT NULL,   -- the tool's name on the server
    read_only          INTEGER NOT NULL,
    arguments          BLOB NOT NULL,
    state              TEXT NOT NULL,
    decision           TEXT,            -- automatic | remembered | allow | deny
    code               TEXT,
    result             BLOB,
    created_at         TEXT NOT NULL,
    expires_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, call_id)
);
CREATE INDEX mcp_calls_open ON mcp_calls(state, expires_at);
