"""Sending envelopes over HTTP: validation, idempotency, conflict, nothing stored on error."""

from __future__ import annotations

import json

import pytest

from lineup.protocol import MAX_ENVELOPE_BYTES
from tests.conftest import Pair


async def test_send_assigns_consecutive_sequence_numbers(pair: Pair) -> None:
    seqs = [await pair.user.send_text(pair.conversation_id, f"m{i}") for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    stored = await pair.agent.read_all(pair.conversation_id)
    assert [item["envelope"]["payload"]["text"] for item in stored] == [f"m{i}" for i in range(5)]


async def test_same_envelope_again_returns_the_original_seq_and_stores_nothing(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, text="once")
    first = await pair.agent.post(pair.conversation_id, body)
    await pair.agent.send_text(pair.conversation_id, "in between")
    again = await pair.agent.post(pair.conversation_id, body)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["seq"] == first.json()["seq"] == 1
    assert again.json()["duplicate"] is True
    assert len(await pair.user.read_all(pair.conversation_id)) == 2


async def test_same_id_with_a_different_body_is_a_conflict(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, text="original", envelope_id="fixed-1")
    assert (await pair.agent.post(pair.conversation_id, body)).status_code == 201
    changed = dict(body, payload={"text": "changed"})
    response = await pair.agent.post(pair.conversation_id, changed)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    stored = await pair.user.read_all(pair.conversation_id)
    assert [item["envelope"]["payload"]["text"] for item in stored] == ["original"]


async def test_equivalent_json_spelling_is_the_same_envelope(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, text="same", envelope_id="spelled-1")
    compact = json.dumps(body, separators=(",", ":")).encode()
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2).encode()
    assert (await pair.agent.post(pair.conversation_id, compact)).status_code == 201
    again = await pair.agent.post(pair.conversation_id, reordered)
    assert again.status_code == 200
    assert again.json()["duplicate"] is True


@pytest.mark.parametrize(
    ("mutate", "status", "code"),
    [
        (lambda e: b"{not json", 400, "malformed_envelope"),
        (lambda e: b"\xff\xfe\x00", 400, "malformed_envelope"),
        (lambda e: dict(e, id="bad id with spaces"), 400, "malformed_envelope"),
        (lambda e: dict(e, payload={"text": 5}), 400, "malformed_envelope"),
        (lambda e: dict(e, surprise=True), 400, "malformed_envelope"),
        (lambda e: dict(e, type="lineup.v1.hologram"), 422, "unsupported_type"),
        (lambda e: dict(e, type="other.thing"), 422, "unsupported_type"),
        (lambda e: dict(e, v=2), 422, "unsupported_version"),
        (lambda e: dict(e, sender={"kind": "agent", "id": "someone-else"}), 403, "sender_mismatch"),
        (lambda e: dict(e, sender={"kind": "user", "id": "x"}), 403, "sender_mismatch"),
        (
            lambda e: dict(
                e, type="lineup.v1.tool.result", payload={"call_id": "c1", "status": "completed"}
            ),
            403,
            "direction_not_allowed",
        ),
        (lambda e: dict(e, conversation_id="other-conversation"), 400, "invalid_request"),
    ],
)
async def test_bad_envelopes_get_a_stable_code_and_change_nothing(
    pair: Pair, mutate, status: int, code: str
) -> None:
    await pair.agent.send_text(pair.conversation_id, "before")
    body = mutate(pair.agent.envelope(pair.conversation_id, text="bad"))
    response = await pair.agent.post(pair.conversation_id, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    stored = await pair.user.read_all(pair.conversation_id)
    assert [item["envelope"]["payload"]["text"] for item in stored] == ["before"]


async def test_oversized_body_is_refused_before_parsing(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, text="x" * (MAX_ENVELOPE_BYTES + 10))
    response = await pair.agent.post(pair.conversation_id, body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "envelope_too_large"
    assert await pair.user.read_all(pair.conversation_id) == []


async def test_agent_may_send_agent_kinds_and_user_may_send_runtime_kinds(pair: Pair) -> None:
    tool_call = pair.agent.envelope(
        pair.conversation_id,
        kind="lineup.v1.tool.call",
        payload={"call_id": "call-1", "tool": "interact.notice", "inventory_revision": "r1"},
    )
    assert (await pair.agent.post(pair.conversation_id, tool_call)).status_code == 201
    result = {
        **pair.user.envelope(
            pair.conversation_id,
            kind="lineup.v1.tool.result",
            payload={"call_id": "call-1", "status": "accepted", "result": {}},
        ),
        "sender": {"kind": "runtime", "id": pair.user.id},
    }
    assert (await pair.user.post(pair.conversation_id, result)).status_code == 201
    kinds = [item["envelope"]["type"] for item in await pair.agent.read_all(pair.conversation_id)]
    assert kinds == ["lineup.v1.tool.call", "lineup.v1.tool.result"]


async def test_long_poll_returns_when_an_envelope_arrives(pair: Pair) -> None:
    import asyncio

    waiting = asyncio.create_task(pair.agent.read(pair.conversation_id, 0, wait=20))
    await asyncio.sleep(0)  # let the request leave
    assert not waiting.done()
    await pair.user.send_text(pair.conversation_id, "wake up")
    items = await asyncio.wait_for(waiting, timeout=15)
    assert [item["envelope"]["payload"]["text"] for item in items] == ["wake up"]


async def test_long_poll_times_out_empty(pair: Pair) -> None:
    assert await pair.agent.read(pair.conversation_id, 0, wait=1) == []


async def test_read_parameters_are_validated(pair: Pair) -> None:
    for params in ({"since": "x"}, {"since": -1}, {"limit": 0}, {"limit": 501}, {"wait": 61}):
        response = await pair.user.http.get(
            f"/v1/conversations/{pair.conversation_id}/envelopes", params=params
        )
        assert response.status_code == 400, params
        assert response.json()["error"]["code"] == "invalid_request"
