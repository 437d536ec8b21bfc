-- An envelope the Runtime rejected still takes its place in the timeline: a row of
-- type 'rejected' at its seq, with the code and no body (the rejections table keeps
-- the code and the size only, never the bytes). Rejections stored before this
-- migration get their rows here.
INSERT OR IGNORE INTO timeline
    (conversation_id, envelope_id, seq, type, sender_kind, body, state, error_code, created_at)
SELECT conversation_id, 'rejected:' || seq, seq, 'rejected', 'runtime', X'', 'received', code, at
FROM rejections
WHERE conversation_id IN (SELECT id FROM conversations)
ORDER BY id;
