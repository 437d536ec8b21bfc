"""``conversation.call_capability`` and friends against a real AppServer.

As in ``test_interactions_sdk``, no Runtime runs here: the test plays the user's
Runtime, posting ``runtime``-kind envelopes (inventory, ``app.result``, ``error``) with
the user's token and reading the agent's ``app.call``\\ s from the AppServer.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.agent import (
    Agent,
    AgentClosed,
    CapabilityCancelled,
    CapabilityError,
    CapabilityExpired,
    CapabilityFailed,
    CapabilityRejected,
    CapabilityUnsupported,
    Conversation,
    FileCursorStore,
    MemoryCursorStore,
)
from lineup.agent.ids import app_call_envelope_id, call_envelope_id
from lineup.protocol import AppCallEnvelope, MessageEnvelope, decode
from lineup.protocol import interactions as ix
from lineup.protocol.payloads import CapabilityDescriptor, ClientInventory
from tests.agent.test_interactions_sdk import WAIT, FakeRuntime, Harness, harness
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess

NOW = datetime.now(UTC).replace(microsecond=0)
OPEN_URL = "app.open_url"
SAVE = "artifact.save"


def frozen(agent: Agent) -> None:
    agent.clock = lambda: NOW


@pytest.fixture
async def live(pair: Pair, appserver: AppServerProcess) -> AsyncIterator[Harness]:
    async with harness(pair, appserver, MemoryCursorStore(), frozen) as made:
        yield made


def descriptor(name: str) -> CapabilityDescriptor:
    return CapabilityDescriptor(name=name, version="1.0", risk="user_confirmation")


async def declare(live: Harness, *names: str, revision: str) -> None:
    """Publish an inventory declaring ``names`` and return once the agent has seen it."""
    await post_inventory(live.runtime, *names, revision=revision)
    await live.seen_inventory(revision)


async def post_inventory(runtime: FakeRuntime, *names: str, revision: str) -> int:
    inventory = ClientInventory(
        revision=revision,
        tools=ix.interactive_tools(),
        capabilities=[descriptor(name) for name in names],
    )
    return await runtime.post("lineup.v1.client.inventory", msgspec.to_builtins(inventory))


async def next_app_call(runtime: FakeRuntime) -> dict[str, Any]:
    """The agent's next ``app.call`` envelope, as the AppServer stored it."""
    return await asyncio.wait_for(runtime.next_from_agent("lineup.v1.app.call"), WAIT)


async def answer(
    runtime: FakeRuntime,
    call_id: str,
    status: str = "completed",
    result: dict[str, Any] | None = None,
    code: str | None = None,
) -> int:
    payload: dict[str, Any] = {"call_id": call_id, "status": status}
    if result is not None:
        payload["result"] = result
    if code is not None:
        payload["error"] = {"code": code, "message": f"the Runtime says {code}"}
    return await runtime.post("lineup.v1.app.result", payload)


async def test_a_completed_call_returns_its_result_from_a_valid_app_call(live: Harness) -> None:
    await declare(live, OPEN_URL, revision="rev-1")
    calling = asyncio.create_task(
        live.conversation.call_capability(
            OPEN_URL, {"url": "https://example.com/docs"}, reason="Open the deployment docs"
        )
    )
    stored = await next_app_call(live.runtime)
    checked = decode(msgspec.json.encode(stored))
    assert isinstance(checked, AppCallEnvelope)
    call = checked.payload
    assert call.capability == OPEN_URL
    assert call.reason == "Open the deployment docs"
    assert call.arguments == {"url": "https://example.com/docs"}
    assert call.expires_at == NOW + timedelta(minutes=5)  # the default
    assert checked.created_at == NOW
    assert checked.id == app_call_envelope_id(live.conversation.id, call.call_id)
    assert stored["sender"] == {"kind": "agent", "id": live.agent.agent_id}
    assert not calling.done()

    await answer(live.runtime, call.call_id, result={"opened": True})
    assert await asyncio.wait_for(calling, WAIT) == {"opened": True}
    recorded = await live.conversation.capability_result(call.call_id)
    assert (recorded.status, recorded.result, recorded.error) == (
        "completed",
        {"opened": True},
        None,
    )


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [
        ("rejected", "capability_denied", CapabilityRejected),
        ("rejected", "capability_input_invalid", CapabilityRejected),
        ("expired", "expired", CapabilityExpired),
        ("unsupported", "revoked", CapabilityUnsupported),
        ("failed", "interrupted", CapabilityFailed),
        ("cancelled", "cancelled", CapabilityCancelled),
    ],
)
async def test_every_other_status_raises_its_typed_error(
    live: Harness, status: str, code: str, error: type[CapabilityError]
) -> None:
    await declare(live, SAVE, revision="rev-1")
    calling = asyncio.create_task(
        live.conversation.call_capability(SAVE, {"name": "a.txt"}, reason="Save the report")
    )
    call_id = (await next_app_call(live.runtime))["payload"]["call_id"]
    await answer(live.runtime, call_id, status, code=code)
    with pytest.raises(error) as caught:
        await asyncio.wait_for(calling, WAIT)
    assert isinstance(caught.value, CapabilityError)
    assert (caught.value.call_id, caught.value.status) == (call_id, status)
    assert caught.value.code == code
    assert caught.value.message == f"the Runtime says {code}"
    assert caught.value.result is not None and caught.value.result.status == status
    # Reading the result does not raise.
    assert await live.conversation.capability_result(call_id) == caught.value.result


async def test_expires_in_is_one_second_to_a_day_and_anything_else_sends_nothing(
    live: Harness,
) -> None:
    await declare(live, OPEN_URL, revision="rev-1")
    conversation = live.conversation
    for refused in (0, 0.999, -5, timedelta(hours=24, seconds=1), math.inf, math.nan):
        with pytest.raises(ValueError, match="between 1 second and 24 hours"):
            await conversation.call_capability(OPEN_URL, {}, reason="r", expires_in=refused)
    with pytest.raises(TypeError, match="timedelta or a number of seconds"):
        await conversation.call_capability(OPEN_URL, {}, reason="r", expires_in=True)
    with pytest.raises(ValueError, match="reason"):
        await conversation.call_capability(OPEN_URL, {}, reason="")
    with pytest.raises(ValueError, match="capability"):
        await conversation.call_capability("not a name", {}, reason="r")
    with pytest.raises(ValueError, match="call_id"):
        await conversation.call_capability(OPEN_URL, {}, reason="r", call_id="not an id")
    assert await live.runtime.stored("lineup.v1.app.call") == []

    for accepted, lifetime in ((1, timedelta(seconds=1)), (timedelta(hours=24), timedelta(days=1))):
        calling = asyncio.create_task(
            conversation.call_capability(OPEN_URL, reason="r", expires_in=accepted)
        )
        checked = decode(msgspec.json.encode(await next_app_call(live.runtime)))
        assert isinstance(checked, AppCallEnvelope)
        assert checked.payload.expires_at == NOW + lifetime
        assert checked.payload.arguments == {}
        await answer(live.runtime, checked.payload.call_id, result={})
        assert await asyncio.wait_for(calling, WAIT) == {}


async def test_a_refusal_of_the_envelope_raises_with_its_code(live: Harness) -> None:
    await declare(live, OPEN_URL, revision="rev-1")
    calling = asyncio.create_task(
        live.conversation.call_capability(OPEN_URL, {"url": "x"}, reason="r", call_id="c-1")
    )
    stored = await next_app_call(live.runtime)
    await live.runtime.post(
        "lineup.v1.error",
        {"code": "unavailable", "message": "the gateway is down", "ref_id": stored["id"]},
    )
    with pytest.raises(CapabilityError) as caught:
        await asyncio.wait_for(calling, WAIT)
    assert type(caught.value) is CapabilityError
    assert (caught.value.call_id, caught.value.code, caught.value.status) == (
        "c-1",
        "unavailable",
        None,
    )
    assert caught.value.message == "the gateway is down"


async def test_an_undeclared_capability_is_unsupported_without_sending(live: Harness) -> None:
    conversation = live.conversation
    assert await conversation.capabilities() == []
    await declare(live, OPEN_URL, revision="rev-1")
    assert await conversation.capabilities() == [descriptor(OPEN_URL)]
    with pytest.raises(CapabilityUnsupported) as caught:
        await conversation.call_capability(SAVE, {}, reason="Save it", call_id="c-save")
    assert (caught.value.code, caught.value.status, caught.value.result) == (
        "capability_not_declared",
        "unsupported",
        None,
    )
    assert "rev-1" in caught.value.message
    assert await live.runtime.stored("lineup.v1.app.call") == []

    # Once the Runtime declares it, the same call goes out.
    await declare(live, OPEN_URL, SAVE, revision="rev-2")
    assert [c.name for c in await conversation.capabilities()] == [OPEN_URL, SAVE]
    calling = asyncio.create_task(
        conversation.call_capability(SAVE, {}, reason="Save it", call_id="c-save")
    )
    assert (await next_app_call(live.runtime))["payload"]["call_id"] == "c-save"
    await answer(live.runtime, "c-save", result={"saved": True})
    assert await asyncio.wait_for(calling, WAIT) == {"saved": True}


async def test_without_any_inventory_the_call_is_sent_and_the_runtime_decides(
    live: Harness,
) -> None:
    calling = asyncio.create_task(
        live.conversation.call_capability(OPEN_URL, {}, reason="r", call_id="c-blind")
    )
    await next_app_call(live.runtime)
    await answer(live.runtime, "c-blind", "unsupported", code="capability_not_declared")
    with pytest.raises(CapabilityUnsupported):
        await asyncio.wait_for(calling, WAIT)


async def test_tool_calls_and_capability_calls_keep_separate_call_ids(live: Harness) -> None:
    await declare(live, OPEN_URL, revision="rev-1")
    conversation, runtime = live.conversation, live.runtime
    calling = asyncio.create_task(conversation.call_capability(OPEN_URL, reason="r", call_id="x"))
    asking = asyncio.create_task(conversation.ask_confirm("Sure?", call_id="x"))
    await next_app_call(runtime)
    await asyncio.wait_for(runtime.next_call(), WAIT)
    await runtime.answer("x", result={"confirmed": True})  # a tool.result
    assert await asyncio.wait_for(asking, WAIT) is True
    assert not calling.done()
    await answer(runtime, "x", result={"opened": True})
    assert await asyncio.wait_for(calling, WAIT) == {"opened": True}
    assert (await conversation.result("x")).result == {"confirmed": True}
    assert (await conversation.capability_result("x")).result == {"opened": True}
    assert app_call_envelope_id(conversation.id, "x") != call_envelope_id(conversation.id, "x")


async def test_a_handler_replayed_after_a_restart_calls_once_and_gets_the_recorded_results(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    store = FileCursorStore(tmp_path / "cursors.json")
    started: asyncio.Queue[str] = asyncio.Queue()
    done: asyncio.Queue[tuple[dict[str, Any], dict[str, Any]]] = asyncio.Queue()

    def install(agent: Agent) -> None:
        @agent.on_message
        async def share(conversation: Conversation, message: MessageEnvelope) -> None:
            await started.put(message.id)
            opened = await conversation.call_capability(OPEN_URL, {"url": "u"}, reason="Open")
            saved = await conversation.call_capability(SAVE, {"name": "n"}, reason="Save")
            await conversation.send_markdown("done", envelope_id=f"done.{message.id}")
            await done.put((opened, saved))

    async with harness(pair, appserver, store, install) as first:
        await declare(first, OPEN_URL, SAVE, revision="rev-1")
        message_seq = await pair.user.send_text(pair.conversation_id, "share")
        started_id = await asyncio.wait_for(started.get(), WAIT)
        opening = await next_app_call(first.runtime)
        await answer(first.runtime, opening["payload"]["call_id"], result={"opened": True})
        saving = await next_app_call(first.runtime)
        assert saving["payload"]["call_id"] != opening["payload"]["call_id"]
        # Stopped while the handler waits for the second call: no cursor advance.
    assert store.load()[pair.conversation_id] < message_seq
    assert done.empty()
    # Answered while the agent is down.
    await answer(first.runtime, saving["payload"]["call_id"], result={"saved": True})

    async with harness(pair, appserver, store, install) as second:
        assert await asyncio.wait_for(started.get(), WAIT) == started_id  # the replay
        assert await asyncio.wait_for(done.get(), WAIT) == ({"opened": True}, {"saved": True})

    calls = await second.runtime.stored("lineup.v1.app.call")
    assert [c["id"] for c in calls] == [opening["id"], saving["id"]]
    assert [c["payload"]["call_id"] for c in calls] == [
        opening["payload"]["call_id"],
        saving["payload"]["call_id"],
    ]
    replies = [
        e
        for e in await second.runtime.stored("lineup.v1.message")
        if e["sender"]["kind"] == "agent"
    ]
    assert len(replies) == 1


async def test_after_a_restart_the_same_call_is_not_sent_again_and_its_result_is_read_back(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    store = FileCursorStore(tmp_path / "cursors.json")
    async with harness(pair, appserver, store) as first:
        ticks: asyncio.Queue[str] = asyncio.Queue()

        @first.agent.on_message
        async def tick(conversation: Conversation, message: MessageEnvelope) -> None:
            await ticks.put(message.payload.text)

        await declare(first, OPEN_URL, SAVE, revision="rev-1")
        calls = [
            asyncio.create_task(
                first.conversation.call_capability(name, reason="r", call_id=f"c-{name}")
            )
            for name in (OPEN_URL, SAVE)
        ]
        for call in calls:
            await answer(
                first.runtime, (await next_app_call(first.runtime))["payload"]["call_id"], result={}
            )
            await asyncio.wait_for(call, WAIT)
        pending = asyncio.create_task(
            first.conversation.call_capability(OPEN_URL, reason="r", call_id="c-late")
        )
        await next_app_call(first.runtime)
        await pair.user.send_text(pair.conversation_id, "tick")  # moves the cursor on
        assert await asyncio.wait_for(ticks.get(), WAIT) == "tick"
    with pytest.raises(AgentClosed):
        await pending

    async with harness(pair, appserver, store) as second:
        conversation = second.conversation
        # The results are before the cursor: the stream does not replay them.
        assert conversation._inbox.app_results.known(f"c-{OPEN_URL}") is None
        # Called again: the AppServer already holds the call; its result is read back.
        again = conversation.call_capability(OPEN_URL, reason="r", call_id=f"c-{OPEN_URL}")
        assert await asyncio.wait_for(again, WAIT) == {}
        # Declared no longer, but called before: the recorded result still stands.
        await declare(second, OPEN_URL, revision="rev-2")
        again = conversation.call_capability(SAVE, reason="r", call_id=f"c-{SAVE}")
        assert await asyncio.wait_for(again, WAIT) == {}
        # A result still to come is awaited without raising.
        waiting = asyncio.create_task(conversation.capability_result("c-late"))
        await answer(second.runtime, "c-late", "expired", code="expired")
        late = await asyncio.wait_for(waiting, WAIT)
        assert (late.call_id, late.status) == ("c-late", "expired")

    stored = await second.runtime.stored("lineup.v1.app.call")
    assert [c["payload"]["call_id"] for c in stored] == [f"c-{OPEN_URL}", f"c-{SAVE}", "c-late"]
