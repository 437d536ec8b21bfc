-- Every kept file (artifact) has a row of its own in its conversation's timeline:
-- type 'artifact', envelope id 'artifact:<id>', the file's metadata as its body
-- (never its bytes), written with the artifact and never sent. The IM shows an
-- agent's file and an app's alike from that row; an app's belongs to the instance's
-- sub-session (`app_session_id`) and is shown inside that sub-session's group.
ALTER TABLE artifacts ADD COLUMN app_session_id TEXT;
CREATE INDEX artifacts_by_app_session ON artifacts(app_session_id)
    WHERE app_session_id IS NOT NULL;

-- Files kept before this migration: an app's belongs to its instance's sub-session.
UPDATE artifacts SET app_session_id = (
    SELECT s.id FROM capability_calls c JOIN app_sessions s ON s.instance_id = c.requester_id
    WHERE c.conversation_id = artifacts.conversation_id AND c.call_id = artifacts.call_id
      AND c.requester_kind = 'app'
    ORDER BY s.opened_at DESC LIMIT 1
)
WHERE call_id IS NOT NULL;

-- ... and each gets its row, after the newest row the conversation held when it was
-- kept (as new ones are placed).
INSERT OR IGNORE INTO timeline
    (conversation_id, envelope_id, seq, type, sender_kind, body, state, created_at)
SELECT a.conversation_id, 'artifact:' || a.id,
    COALESCE((SELECT MAX(t.seq) FROM timeline t
              WHERE t.conversation_id = a.conversation_id AND t.created_at <= a.created_at), 0),
    'artifact', 'runtime',
    CAST(CASE WHEN a.app_session_id IS NULL
        THEN json_object('artifact_id', a.id, 'name', a.name, 'media_type', a.media_type,
                         'size', a.size)
        ELSE json_object('artifact_id', a.id, 'name', a.name, 'media_type', a.media_type,
                         'size', a.size, 'app_session_id', a.app_session_id)
    END AS BLOB),
    'received', a.created_at
FROM artifacts a
WHERE a.conversation_id IN (SELECT id FROM conversations)
ORDER BY a.created_at, a.id;
