-- Signed delivery of installed MiniApps (spec 002 §9): trusted publisher keys,
-- the verified release of each delivered version, revocations, and the catalog as
-- last fetched.

-- Publisher keys this Runtime trusts: key id to raw Ed25519 public key.
CREATE TABLE trusted_keys (
    key_id     TEXT PRIMARY KEY,
    public_key BLOB NOT NULL,
    name       TEXT NOT NULL,
    added_at   TEXT NOT NULL
);

-- Revoked keys (by the person or the catalog), trusted or not: nothing signed by
-- one is installed or rolled back to.
CREATE TABLE revoked_keys (
    key_id     TEXT PRIMARY KEY,
    source     TEXT NOT NULL,
    revoked_at TEXT NOT NULL
);

-- The signed release of each delivered app version, as verified: its artifact is
-- in the verified cache under sha256.
CREATE TABLE app_releases (
    app_id      TEXT NOT NULL,
    version     TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    length      INTEGER NOT NULL,
    key_id      TEXT NOT NULL,
    release     BLOB NOT NULL,
    verified_at TEXT NOT NULL,
    PRIMARY KEY (app_id, version),
    FOREIGN KEY (app_id, version) REFERENCES app_versions(app_id, version)
);

-- Revoked app versions: a revoked version never runs again.
CREATE TABLE revoked_versions (
    app_id     TEXT NOT NULL,
    version    TEXT NOT NULL,
    source     TEXT NOT NULL,
    revoked_at TEXT NOT NULL,
    PRIMARY KEY (app_id, version)
);

-- Why an app has no version it may run (NULL while it has one).
ALTER TABLE apps ADD COLUMN unavailable TEXT;

-- The catalog as last fetched: the releases it offers, for "update available".
CREATE TABLE catalog_releases (
    app_id  TEXT NOT NULL,
    version TEXT NOT NULL,
    release BLOB NOT NULL,
    PRIMARY KEY (app_id, version)
);

CREATE TABLE catalog_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    revision   TEXT NOT NULL,
    production INTEGER NOT NULL,
    fetched_at TEXT NOT NULL
)
