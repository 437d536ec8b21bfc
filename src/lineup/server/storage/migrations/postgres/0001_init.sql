-- LineUp AppServer schema, version 1 (PostgreSQL): the same tables as SQLite's 0001,
-- plus each conversation's last sequence number (kept under a row lock so sequence
-- numbers stay gap-free with writers in several processes) and lineup_append, which
-- stores one envelope in one round trip and notifies every AppServer process.

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE user_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    expires_at TIMESTAMPTZ NOT NULL,
    revoked    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX user_tokens_user ON user_tokens(user_id);

CREATE TABLE agents (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE agent_keys (
    key_hash   TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL REFERENCES agents(id),
    revoked    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    agent_id   TEXT NOT NULL REFERENCES agents(id),
    title      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    last_seq   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX conversations_user ON conversations(user_id);
CREATE INDEX conversations_agent ON conversations(agent_id);

CREATE TABLE envelopes (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    seq             BIGINT NOT NULL,
    envelope_id     TEXT NOT NULL,
    type            TEXT NOT NULL,
    sender_kind     TEXT NOT NULL,
    body            BYTEA NOT NULL,
    received_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (conversation_id, seq),
    UNIQUE (conversation_id, envelope_id)
);

-- Store a run of envelopes of one conversation, in order, in one transaction: for
-- each, 'stored' with its new sequence number, 'duplicate' (same id, same bytes: the
-- original number), 'conflict' (same id, other bytes) or 'no_conversation'. The
-- conversation row lock serializes writers of one conversation across processes.
-- Each stored envelope sends a notification (delivered at commit) with the
-- conversation, the number and, when small, the body (base64), so every process can
-- deliver it without reading it back.
CREATE FUNCTION lineup_append(
    p_conversation TEXT, p_envelopes TEXT[], p_types TEXT[], p_senders TEXT[], p_bodies BYTEA[]
) RETURNS TABLE (status TEXT, seq BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_last  BIGINT;
    v_found BIGINT;
    v_body  BYTEA;
    i       INTEGER;
BEGIN
    SELECT c.last_seq INTO v_last FROM conversations c WHERE c.id = p_conversation FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'no_conversation'::TEXT, 0::BIGINT
            FROM generate_series(1, cardinality(p_envelopes));
        RETURN;
    END IF;
    FOR i IN 1 .. cardinality(p_envelopes) LOOP
        SELECT e.seq, e.body INTO v_found, v_body FROM envelopes e
            WHERE e.conversation_id = p_conversation AND e.envelope_id = p_envelopes[i];
        IF FOUND THEN
            status := CASE WHEN v_body = p_bodies[i] THEN 'duplicate' ELSE 'conflict' END;
            seq := v_found;
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_last := v_last + 1;
        INSERT INTO envelopes (conversation_id, seq, envelope_id, type, sender_kind, body,
                               received_at)
            VALUES (p_conversation, v_last, p_envelopes[i], p_types[i], p_senders[i],
                    p_bodies[i], now());
        PERFORM pg_notify(
            'lineup_envelopes',
            p_conversation || ' ' || v_last || CASE
                WHEN octet_length(p_bodies[i]) <= 5000
                THEN ' ' || translate(encode(p_bodies[i], 'base64'), E'\n', '')
                ELSE '' END
        );
        status := 'stored';
        seq := v_last;
        RETURN NEXT;
    END LOOP;
    UPDATE conversations SET last_seq = v_last WHERE id = p_conversation;
END
$$;
