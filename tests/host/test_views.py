"""What the shell is given for each kind of row, including ones it cannot understand."""

from __future__ import annotations

from pathlib import Path

import msgspec

from lineup import wire
from lineup.host.views import item_view
from lineup.runtime import RuntimeStore, Session, classify
from tests.support.receiving import apply_received

SCOPES = frozenset({"chat"})


def frame(seq: int, kind: str, payload: dict[str, object], **extra: object) -> wire.EnvelopeFrame:
    envelope = {
        "v": 1,
        "id": f"e{seq}",
        "type": kind,
        "conversation_id": "c1",
        "sender": {"kind": "agent", "id": "a1"},
        "created_at": "2026-11-30T00:00:00Z",
        "payload": payload,
        **extra,
    }
    return wire.EnvelopeFrame(
        conversation_id="c1", seq=seq, envelope=msgspec.Raw(msgspec.json.encode(envelope))
    )


async def test_every_kind_becomes_a_safe_row(tmp_path: Path) -> None:
    store = RuntimeStore(tmp_path / "r.sqlite3")
    await store.open()
    await store.upsert_conversation("c1", "a1", "")
    received = [
        classify(frame(1, "lineup.v1.message", {"text": "<b>hi</b> **there**"}), SCOPES),
        classify(frame(2, "lineup.v1.status", {"state": "thinking", "text": "<i>x</i>"}), SCOPES),
        classify(
            frame(3, "lineup.v1.progress", {"progress_id": "p", "current": 1, "total": 4}), SCOPES
        ),
        classify(frame(4, "lineup.v1.error", {"code": "tool_failed", "message": "boom"}), SCOPES),
        classify(frame(5, "lineup.v1.hologram", {"beam": "<script>x()</script>"}), SCOPES),
        classify(frame(6, "lineup.v1.message", {"text": 5}), SCOPES),
        classify(
            frame(7, "lineup.v1.message", {"text": "x"}, target={"app_scope": "nope"}), SCOPES
        ),
    ]
    result = await apply_received(store, received)
    applied, cursors = result.items, result.cursors
    assert cursors == {"c1": 7}
    views = [item_view(item) for item in applied]
    # Rejected envelopes take their place as safe rows: their code, never their bytes.
    assert [v.kind for v in views] == ["message", "status", "progress", "error"] + [
        "unsupported"
    ] * 3
    assert [(v.seq, v.sender, v.error_code, v.data, v.html) for v in views[5:]] == [
        (6, "runtime", "malformed_envelope", {"type": "rejected"}, None),
        (7, "runtime", "app_scope_mismatch", {"type": "rejected"}, None),
    ]
    assert [item.body for item in applied[5:]] == [b"", b""]
    assert views[0].html == "<p>&lt;b&gt;hi&lt;/b&gt; <strong>there</strong></p>\n"
    assert views[1].data == {"state": "thinking", "text": "<i>x</i>"}  # shown as text
    assert views[4].html is None
    assert views[4].data == {"type": "lineup.v1.hologram"}
    assert await store.rejections() == [
        ("c1", 6, "malformed_envelope", received[5].body.__len__()),
        ("c1", 7, "app_scope_mismatch", received[6].body.__len__()),
    ]
    inbox = await store.inbox("chat")
    assert [i.envelope_id for i in inbox] == ["e1", "e2", "e3", "e4"]
    assert await store.inbox_ack_envelopes("chat", "c1", ["e1", "e2", "nope"]) == 2
    assert [i.envelope_id for i in await store.inbox("chat")] == ["e3", "e4"]
    await store.close()


def test_very_long_messages_are_shown_as_plain_text() -> None:
    from lineup.host.views import MAX_MARKDOWN_CHARS, _message_html

    long = "**" + "x" * MAX_MARKDOWN_CHARS + "**"
    assert _message_html(long, False).startswith("**xxx")
    assert _message_html("**short**", False) == "<p><strong>short</strong></p>\n"


async def test_runtime_bookkeeping_is_never_shown(tmp_path: Path) -> None:
    """Inventory, results, dismiss controls, app sub-session notices and the Runtime's
    error receipts are for the agent: the shell gets no row for them."""
    store = RuntimeStore(tmp_path / "r.sqlite3")
    await store.open()
    await store.upsert_conversation("c1", "a1", "")
    await store.save_session(Session("http://127.0.0.1:1", "user", "u1", "token"))
    runtime = {"sender": {"kind": "runtime", "id": "u1"}}
    session = {
        "agent_id": "a1",
        "app_session_id": "s1",
        "app_scope": "test-app",
        "instance_id": "i1",
    }
    received = [
        classify(frame(1, "lineup.v1.client.inventory", {"revision": "r1"}, **runtime), SCOPES),
        classify(
            frame(2, "lineup.v1.tool.result", {"call_id": "x", "status": "accepted"}, **runtime),
            SCOPES,
        ),
        classify(frame(3, "lineup.v1.app_session.opened", session, **runtime), SCOPES),
        classify(frame(4, "lineup.v1.app_session.closed", session, **runtime), SCOPES),
        classify(
            frame(
                5, "lineup.v1.error", {"code": "interaction_not_found", "message": "m"}, **runtime
            ),
            SCOPES,
        ),
        classify(
            frame(6, "lineup.v1.interaction.dismiss", {"control_id": "k", "call_id": "x"}), SCOPES
        ),
        classify(
            frame(7, "lineup.v1.tool.progress", {"call_id": "x", "current": 1}, **runtime), SCOPES
        ),
        classify(frame(8, "lineup.v1.app.list", {"capabilities": []}, **runtime), SCOPES),
        classify(frame(9, "lineup.v1.message", {"text": "shown"}), SCOPES),
    ]
    result = await apply_received(store, received)
    assert len(result.items) == 9  # all stored...
    views = [item_view(item) for item in result.items]
    assert [v.kind if v else None for v in views] == [None] * 8 + ["message"]  # ...one shown
    await store.close()


def test_the_client_s_own_title_is_left_to_the_shell_s_words() -> None:
    """The conversation the client opens is titled "Chat" on the AppServer (so other
    clients agree on it); the shell names it in the person's language instead."""
    from lineup.host.views import DEFAULT_TITLE, conversation_view

    assert conversation_view("c1", "a1", DEFAULT_TITLE).title == ""
    assert conversation_view("c1", "a1", "Plans for May").title == "Plans for May"
