-- Names people see (issue 21): an instance keeps its app's display name as it was when
-- it opened and its ordinal, the lowest number no other live instance of its app scope
-- held then ("Task Dashboard 2"); its sub-session keeps both for its group, which
-- outlives the instance's record. `app_name` is empty for a scope no app registered.
ALTER TABLE app_instances ADD COLUMN app_name TEXT NOT NULL DEFAULT '';
ALTER TABLE app_instances ADD COLUMN ordinal INTEGER NOT NULL DEFAULT 1;
ALTER TABLE app_sessions ADD COLUMN app_name TEXT NOT NULL DEFAULT '';
ALTER TABLE app_sessions ADD COLUMN ordinal INTEGER NOT NULL DEFAULT 1;

-- Instances live before this migration: numbered per scope in opening order.
UPDATE app_instances SET ordinal = (
    SELECT COUNT(*) FROM app_instances AS b
    WHERE b.app_scope = app_instances.app_scope
      AND b.state NOT IN ('stopped', 'failed')
      AND b.rowid <= app_instances.rowid
) WHERE state NOT IN ('stopped', 'failed');

-- The names of the apps installed now (the manifests are validated JSON).
UPDATE app_instances SET app_name = COALESCE((
    SELECT json_extract(CAST(v.manifest AS TEXT), '$.name') FROM apps AS a
    JOIN app_versions AS v ON v.app_id = a.app_id AND v.version = a.version
    WHERE a.app_scope = app_instances.app_scope
), '');

UPDATE app_sessions SET
    app_name = COALESCE(
        (SELECT i.app_name FROM app_instances AS i WHERE i.instance_id = app_sessions.instance_id),
        (SELECT json_extract(CAST(v.manifest AS TEXT), '$.name') FROM apps AS a
         JOIN app_versions AS v ON v.app_id = a.app_id AND v.version = a.version
         WHERE a.app_scope = app_sessions.app_scope),
        ''),
    ordinal = COALESCE(
        (SELECT i.ordinal FROM app_instances AS i WHERE i.instance_id = app_sessions.instance_id),
        1);
