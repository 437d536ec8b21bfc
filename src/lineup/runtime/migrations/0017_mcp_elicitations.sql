-- Forms MCP servers ask the person to fill in (`elicitation/create`, form mode;
-- issue 24). One row per request: the conversation and call it came with, what the
-- server asked (`message`, `schema`: shown on the card, never logged or audited) and
-- the one answer (`answer`: the accepted content). The card is a timeline row of its
-- own (type `mcp.elicitation`, envelope id `elicit:<id>`) whose body is kept in step.
CREATE TABLE mcp_elicitations (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    call_id         TEXT NOT NULL,
    server_key      TEXT NOT NULL,
    message         TEXT NOT NULL,
    schema          BLOB NOT NULL,
    state           TEXT NOT NULL,
    answer          BLOB,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    final_at        TEXT
);
CREATE INDEX mcp_elicitations_pending ON mcp_elicitations(state, expires_at);
CREATE INDEX mcp_elicitations_call ON mcp_elicitations(conversation_id, call_id);
