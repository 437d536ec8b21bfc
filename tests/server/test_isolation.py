"""Two users, two agents: nobody reads or writes a conversation that is not theirs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lineup import wire
from tests.conftest import Pair, make_pair
from tests.support.appserver import AppServerProcess


@pytest.fixture
async def two(appserver: AppServerProcess) -> AsyncIterator[tuple[Pair, Pair]]:
    a, b = await make_pair(appserver), await make_pair(appserver)
    yield a, b
    for api in (a.user, a.agent, b.user, b.agent):
        await api.aclose()


async def test_users_and_agents_only_see_their_own_conversations(two: tuple[Pair, Pair]) -> None:
    a, b = two
    await a.user.send_text(a.conversation_id, "secret of a")
    for outsider in (b.user, b.agent):
        assert (
            await outsider.http.get(f"/v1/conversations/{a.conversation_id}")
        ).status_code == 404
        response = await outsider.http.get(f"/v1/conversations/{a.conversation_id}/envelopes")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        listed = (await outsider.http.get("/v1/conversations")).json()["conversations"]
        assert a.conversation_id not in [c["id"] for c in listed]


async def test_nobody_writes_into_someone_elses_conversation(two: tuple[Pair, Pair]) -> None:
    a, b = two
    for outsider in (b.user, b.agent):
        body = outsider.envelope(a.conversation_id, text="intrusion")
        response = await outsider.post(a.conversation_id, body)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert await a.user.read_all(a.conversation_id) == []


async def test_stream_refuses_foreign_cursors_and_follow_all_stays_private(
    two: tuple[Pair, Pair],
) -> None:
    a, b = two
    await a.user.send_text(a.conversation_id, "for a only")
    async with b.agent.stream() as stream:
        await stream.subscribe({a.conversation_id: 0}, all=True)
        nack = await stream.until(wire.Nack)
        synced = await stream.until(wire.Synced)
        assert (nack.id, nack.error.code) == (a.conversation_id, "not_found")
        assert synced.cursors == {b.conversation_id: 0}
        await stream.send(b.agent.envelope(a.conversation_id, text="sneak"))
        refused = await stream.until(wire.Nack)
        assert refused.error.code == "not_found"


async def test_conversations_with_unknown_or_foreign_counterparts(two: tuple[Pair, Pair]) -> None:
    a, b = two
    response = await a.user.http.post("/v1/conversations", json={"agent_id": "no-such-agent"})
    assert response.status_code == 404
    response = await a.user.http.post("/v1/conversations", json={})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_request")
    # A conversation id is global: reusing b's id for a different pair is a conflict.
    response = await a.user.http.post(
        "/v1/conversations", json={"agent_id": a.agent.id, "id": b.conversation_id}
    )
    assert (response.status_code, response.json()["error"]["code"]) == (409, "conflict")


async def test_creating_with_the_same_id_twice_is_idempotent(two: tuple[Pair, Pair]) -> None:
    a, _ = two
    body = {"agent_id": a.agent.id, "id": "retry-safe-conv", "title": "t"}
    first = await a.user.http.post("/v1/conversations", json=body)
    again = await a.user.http.post("/v1/conversations", json=body)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
