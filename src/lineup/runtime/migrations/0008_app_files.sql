-- The files of each installed app version (its bundle: surface HTML/CSS/JS, icon).
-- Written once per version, with the version row; never changed afterwards.
CREATE TABLE app_files (
    app_id   TEXT NOT NULL,
    version  TEXT NOT NULL,
    path     TEXT NOT NULL,
    body     BLOB NOT NULL,
    PRIMARY KEY (app_id, version, path),
    FOREIGN KEY (app_id, version) REFERENCES app_versions(app_id, version)
);
ALTER TABLE app_versions ADD COLUMN files_digest TEXT;

-- Each instance's own state (the MiniApp SDK's state.get/set): a JSON object,
-- bounded; apps have no storage of their own.
CREATE TABLE app_state (
    instance_id TEXT PRIMARY KEY,
    body        BLOB NOT NULL,
    updated_at  TEXT NOT NULL
);
