-- "Continue" on old work (spec 002 §7.3, §11 item 6): a new instance and a new
-- sub-session that reference the one they continue, which stays closed history.
ALTER TABLE app_sessions ADD COLUMN continues TEXT REFERENCES app_sessions(id);
