-- Surfaces an agent opened with ui.open (spec 000 §4): one row per ui.open envelope,
-- keyed by it; ui.patch replaces `state`, ui.close and the user's close end it, and a
-- later ui.open of the same instance_id marks it `replaced`. Inline (dev-mode)
-- bundles keep their three parts here; app surfaces come from app_files.
CREATE TABLE ui_surfaces (
    conversation_id  TEXT NOT NULL REFERENCES conversations(id),
    open_envelope_id TEXT NOT NULL,
    instance_id      TEXT NOT NULL,
    app_id           TEXT NOT NULL,
    app_version      TEXT NOT NULL,
    surface_id       TEXT,
    state            BLOB NOT NULL,
    status           TEXT NOT NULL,  -- open | closed | replaced | unavailable
    reason           TEXT,
    html             TEXT,
    css              TEXT,
    js               TEXT,
    updated_at       TEXT NOT NULL,
    PRIMARY KEY (conversation_id, open_envelope_id)
);
CREATE INDEX ui_surfaces_instance ON ui_surfaces(conversation_id, instance_id, status);
