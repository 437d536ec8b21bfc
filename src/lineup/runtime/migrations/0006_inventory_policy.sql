-- The capability policy, the app.list projection and tool-call bookkeeping for
-- progress and focus restoration (spec 002 §8). Rows change only in transactions of
-- `lineup.runtime.apps.registry`, `.router` and `.tool_call_store`.

-- The persisted capability allowlist: a capability is granted to one app. Anything
-- not listed here is denied.
CREATE TABLE capability_grants (
    app_id     TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    risk       TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (app_id, name)
);

-- The capability projection (`app.list`) last queued to each conversation.
CREATE TABLE app_list_published (
    conversation_id TEXT PRIMARY KEY,
    digest          TEXT NOT NULL,
    at              TEXT NOT NULL
);

-- Progress: when the last `tool.progress` was queued, and the newest report held
-- back by the rate limit (sent when its window ends, dropped when the call settles).
ALTER TABLE tool_calls ADD COLUMN progress_at TEXT;
ALTER TABLE tool_calls ADD COLUMN progress_pending BLOB;
-- restore_previous_focus: the instance that held focus before the call brought its
-- own instance to the front ('' for none), cleared once the call has settled.
ALTER TABLE tool_calls ADD COLUMN restore_focus_to TEXT;
