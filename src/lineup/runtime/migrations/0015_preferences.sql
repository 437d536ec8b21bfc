-- The person's settings for this Runtime (issue 23), one row per setting. `locale`: the
-- language the person chose in the shell ("en", "zh-CN"); no row means "as the
-- browser says".
CREATE TABLE preferences (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
