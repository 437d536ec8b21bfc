-- The app registry and the monotonic inventory revision (spec 002 §5, §8).
-- Rows change only in transactions of `lineup.runtime.apps.registry` (and the Tool
-- Router's bookkeeping in `lineup.runtime.apps.router`).

-- Every installed (id, version): the canonical manifest bytes and their digest. Kept
-- after a newer version replaces it, for a later rollback.
CREATE TABLE app_versions (
    app_id       TEXT NOT NULL,
    version      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    app_scope    TEXT NOT NULL,
    manifest     BLOB NOT NULL,
    digest       TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    PRIMARY KEY (app_id, version)
);

-- One row per app: the version in use, its kind and scope, and whether it is enabled.
CREATE TABLE apps (
    app_id     TEXT PRIMARY KEY,
    app_scope  TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    version    TEXT NOT NULL,
    enabled    INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    FOREIGN KEY (app_id, version) REFERENCES app_versions(app_id, version)
);

-- The advertised inventory: a counter bumped whenever the content digest changes.
CREATE TABLE inventory_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    counter    INTEGER NOT NULL,
    digest     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Which app version a routed tool call was checked against (its output schema).
ALTER TABLE tool_calls ADD COLUMN app_id TEXT;
ALTER TABLE tool_calls ADD COLUMN app_version TEXT;
