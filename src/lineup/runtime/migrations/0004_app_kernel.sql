-- The MiniApp kernel (spec 002 §6-§8): instances, the focus stack and ordinary tool
-- calls. Every row here changes only in a transaction of
-- `lineup.runtime.apps.instance_store` or `tool_call_store`, together with the audit
-- and outbox rows of the same decision.

-- One row per instance record (`MiniAppInstanceRecord`); rowid keeps opening order.
-- `app_session_id` names the sub-session opened with it (NULL without a conversation).
CREATE TABLE app_instances (
    instance_id        TEXT PRIMARY KEY,
    app_scope          TEXT NOT NULL,
    conversation_id    TEXT REFERENCES conversations(id),
    state              TEXT NOT NULL,
    parent_instance_id TEXT,
    started_at         TEXT NOT NULL,
    stopped_at         TEXT,
    error              TEXT,
    app_session_id     TEXT
);

-- The focus stack: exactly the live instances, `position` 0 at the bottom.
CREATE TABLE app_focus_stack (
    position    INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL UNIQUE REFERENCES app_instances(instance_id)
);

-- The instance holding focus (one row; NULL when nothing holds it).
CREATE TABLE app_focus (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    instance_id TEXT REFERENCES app_instances(instance_id)
);
INSERT INTO app_focus (id, instance_id) VALUES (1, NULL);

-- Ordinary (non-interactive) tool calls. `outcome_status`/`outcome_code` are the
-- call's single result, `result` the result object of a completed call, and
-- `result_envelope_id` the id of the one `tool.result` queued for it (derived from
-- the conversation and call ids, as for interactions).
CREATE TABLE tool_calls (
    conversation_id    TEXT NOT NULL REFERENCES conversations(id),
    call_id            TEXT NOT NULL,
    envelope_id        TEXT NOT NULL,
    tool               TEXT NOT NULL,
    instance_id        TEXT,
    state              TEXT NOT NULL,
    received_at        TEXT NOT NULL,
    deadline           TEXT,
    outcome_status     TEXT,
    outcome_code       TEXT,
    result             BLOB,
    result_envelope_id TEXT,
    updated_at         TEXT NOT NULL,
    UNIQUE (conversation_id, call_id)
);
CREATE INDEX tool_calls_by_instance ON tool_calls(instance_id, state);
CREATE INDEX tool_calls_by_deadline ON tool_calls(state, deadline);
