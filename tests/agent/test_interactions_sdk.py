"""``conversation.ask_choice`` and friends against a real AppServer.

No Runtime answers here: the test plays the user's Runtime itself, posting
``runtime``-kind envelopes (inventory, results) with the user's token, as a Runtime
does, and reading the agent's calls from the AppServer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from lineup.agent import (
    Agent,
    AgentClosed,
    Backoff,
    ChoiceOption,
    Conversation,
    CursorStore,
    Dismissed,
    Expired,
    FileCursorStore,
    InteractionError,
    InteractionFailed,
    InteractionRejected,
    MemoryCursorStore,
)
from lineup.agent.ids import call_envelope_id
from lineup.agent.inbox import RESULTS_KEPT
from lineup.protocol import Envelope, MessageEnvelope, Sender, ToolResultEnvelope, encode
from lineup.protocol import interactions as ix
from lineup.protocol.payloads import ClientInventory, ToolResult
from tests.agent.test_agent import running
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess

FAST = Backoff(base=0.05, cap=0.3)
WAIT = 20


class FakeRuntime:
    """The user's Runtime, played by hand: posts as the user with sender kind ``runtime``
    and reads what the agent sent, long-polling the AppServer (no sleeps)."""

    def __init__(self, pair: Pair) -> None:
        self.user = pair.user
        self.conversation_id = pair.conversation_id
        self._read_up_to = 0
        self._from_agent: list[dict[str, Any]] = []

    async def post(self, kind: str, payload: dict[str, Any]) -> int:
        body = self.user.envelope(self.conversation_id, kind=kind, payload=payload)
        body["sender"] = {"kind": "runtime", "id": self.user.id}
        response = await self.user.post(self.conversation_id, body)
        assert response.status_code == 201, response.text
        return int(response.json()["seq"])

    async def publish_inventory(self, revision: str | None = None) -> tuple[str, int]:
        inventory = (
            ix.inventory()
            if revision is None
            else ClientInventory(revision=revision, tools=ix.interactive_tools())
        )
        seq = await self.post("lineup.v1.client.inventory", msgspec.to_builtins(inventory))
        return inventory.revision, seq

    async def answer(
        self,
        call_id: str,
        status: str = "completed",
        result: dict[str, Any] | None = None,
        code: str | None = None,
    ) -> int:
        payload: dict[str, Any] = {"call_id": call_id, "status": status}
        if result is not None:
            payload["result"] = result
        if code is not None:
            payload["error"] = {"code": code, "message": "as the Runtime says"}
        return await self.post("lineup.v1.tool.result", payload)

    async def next_from_agent(self, kind: str) -> dict[str, Any]:
        """The agent's next envelope of this kind, in log order."""
        while True:
            for index, envelope in enumerate(self._from_agent):
                if envelope["type"] == kind:
                    return self._from_agent.pop(index)
            page = await self.user.read(self.conversation_id, self._read_up_to, wait=10)
            for item in page:
                self._read_up_to = item["seq"]
                if item["envelope"]["sender"]["kind"] == "agent":
                    self._from_agent.append(item["envelope"])

    async def next_call(self) -> dict[str, Any]:
        envelope = await self.next_from_agent("lineup.v1.tool.call")
        payload: dict[str, Any] = envelope["payload"]
        return payload

    async def stored(self, kind: str) -> list[dict[str, Any]]:
        return [
            item["envelope"]
            for item in await self.user.read_all(self.conversation_id)
            if item["envelope"]["type"] == kind
        ]


@dataclass
class Harness:
    agent: Agent
    conversation: Conversation
    runtime: FakeRuntime
    inventories: asyncio.Queue[str] = field(default_factory=asyncio.Queue)

    async def publish_inventory(self, revision: str | None = None) -> str:
        """Publish an inventory and return once the agent has seen it."""
        published, _ = await self.runtime.publish_inventory(revision)
        await self.seen_inventory(published)
        return published

    async def seen_inventory(self, revision: str) -> None:
        while await asyncio.wait_for(self.inventories.get(), WAIT) != revision:
            pass


@asynccontextmanager
async def harness(
    pair: Pair,
    server: AppServerProcess,
    store: CursorStore | None = None,
    setup: Callable[[Agent], None] | None = None,
) -> AsyncIterator[Harness]:
    agent = Agent(
        server.url, pair.agent_key, cursor_store=store or MemoryCursorStore(), backoff=FAST
    )
    if setup is not None:
        setup(agent)  # handlers first: a restarted agent replays at once
    inventories: asyncio.Queue[str] = asyncio.Queue()

    @agent.on_event("lineup.v1.client.inventory")
    async def seen(conversation: Conversation, envelope: Envelope) -> None:
        await inventories.put(envelope.payload.revision)  # type: ignore[attr-defined]

    async with running(agent):
        yield Harness(
            agent, agent.conversations[pair.conversation_id], FakeRuntime(pair), inventories
        )


@pytest.fixture
async def live(pair: Pair, appserver: AppServerProcess) -> AsyncIterator[Harness]:
    async with harness(pair, appserver) as made:
        yield made


async def test_ask_choice_sends_a_valid_call_and_returns_the_selected_id(live: Harness) -> None:
    revision = await live.publish_inventory()
    asking = asyncio.create_task(
        live.conversation.ask_choice(
            "Deploy where?",
            [
                ("stg", "Staging"),
                ("prod", "Production", "careful"),
                ChoiceOption(id="x", label="X"),
            ],
            expires_in=timedelta(minutes=5),
        )
    )
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert call["tool"] == "interact.choice"
    assert call["inventory_revision"] == revision
    assert call["arguments"] == {
        "prompt": "Deploy where?",
        "options": [
            {"id": "stg", "label": "Staging"},
            {"id": "prod", "label": "Production", "description": "careful"},
            {"id": "x", "label": "X"},
        ],
        "expires_in_ms": 300_000,
    }
    assert "app_session_context" not in call
    await live.runtime.answer(call["call_id"], result={"selected": ["prod"]})
    assert await asyncio.wait_for(asking, WAIT) == "prod"
    (stored,) = await live.runtime.stored("lineup.v1.tool.call")
    assert stored["id"] == call_envelope_id(live.conversation.id, call["call_id"])
    assert stored["sender"] == {"kind": "agent", "id": live.agent.agent_id}


async def test_ask_choice_multiple_and_plain_string_options(live: Harness) -> None:
    await live.publish_inventory()
    several = asyncio.create_task(
        live.conversation.ask_choice(
            "Which regions?",
            {"eu": "Europe", "us": "America", "ap": "Asia"},
            multiple=True,
            min_selected=1,
            max_selected=2,
            expires_in=90.5,
            app_session_id="as-1",
        )
    )
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert call["arguments"]["multiple"] is True
    assert call["arguments"]["min_selected"] == 1
    assert call["arguments"]["max_selected"] == 2
    assert call["arguments"]["expires_in_ms"] == 90_500
    assert call["app_session_context"] == {"app_session_id": "as-1"}
    await live.runtime.answer(call["call_id"], result={"selected": ["eu", "ap"]})
    assert await asyncio.wait_for(several, WAIT) == ["eu", "ap"]

    # Plain strings: on the wire their ids are their positions; the caller gets the string.
    plain = asyncio.create_task(
        live.conversation.ask_choice("Lunch?", ["Pizza, large", "Salad", "Nothing"])
    )
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert call["arguments"]["options"] == [
        {"id": "1", "label": "Pizza, large"},
        {"id": "2", "label": "Salad"},
        {"id": "3", "label": "Nothing"},
    ]
    await live.runtime.answer(call["call_id"], result={"selected": ["1"]})
    assert await asyncio.wait_for(plain, WAIT) == "Pizza, large"


async def test_ask_confirm_ask_input_and_notify(live: Harness) -> None:
    await live.publish_inventory()
    conversation, runtime = live.conversation, live.runtime

    confirm = asyncio.create_task(
        conversation.ask_confirm("Delete it?", confirm_label="Delete", danger=True)
    )
    call = await asyncio.wait_for(runtime.next_call(), WAIT)
    assert call["tool"] == "interact.confirm"
    assert call["arguments"] == {"prompt": "Delete it?", "confirm_label": "Delete", "danger": True}
    await runtime.answer(call["call_id"], result={"confirmed": False})
    assert await asyncio.wait_for(confirm, WAIT) is False

    name = asyncio.create_task(
        conversation.ask_input("Your name?", placeholder="Ada", max_length=40, pattern="[A-Za-z]+")
    )
    call = await asyncio.wait_for(runtime.next_call(), WAIT)
    assert call["tool"] == "interact.input"
    assert call["arguments"] == {
        "prompt": "Your name?",
        "placeholder": "Ada",
        "max_length": 40,
        "pattern": "[A-Za-z]+",
    }
    await runtime.answer(call["call_id"], result={"text": "Grace"})
    assert await asyncio.wait_for(name, WAIT) == "Grace"

    notice = asyncio.create_task(conversation.notify("Build done", title="CI", level="success"))
    call = await asyncio.wait_for(runtime.next_call(), WAIT)
    assert call["tool"] == "interact.notice"
    assert call["arguments"] == {"text": "Build done", "title": "CI", "level": "success"}
    await runtime.answer(call["call_id"], status="accepted", result={})
    await asyncio.wait_for(notice, WAIT)
    assert notice.exception() is None


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [
        ("expired", "interaction_expired", Expired),
        ("dismissed", "interaction_dismissed", Dismissed),
        ("rejected", "tool_input_invalid", InteractionRejected),
        ("rejected", "app_session_not_found", InteractionRejected),
        ("failed", "runtime_failed", InteractionFailed),
    ],
)
async def test_unanswered_interactions_raise_typed_errors(
    live: Harness, status: str, code: str, error: type[InteractionError]
) -> None:
    await live.publish_inventory()
    asking = asyncio.create_task(live.conversation.ask_confirm("Sure?"))
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    await live.runtime.answer(call["call_id"], status=status, code=code)
    with pytest.raises(error) as caught:
        await asyncio.wait_for(asking, WAIT)
    assert caught.value.code == code
    assert caught.value.call_id == call["call_id"]
    assert caught.value.status == status
    assert isinstance(caught.value, InteractionError)


async def test_a_result_that_does_not_fit_the_question_is_a_failure(live: Harness) -> None:
    await live.publish_inventory()
    asking = asyncio.create_task(live.conversation.ask_choice("Pick", [("a", "A"), ("b", "B")]))
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    await live.runtime.answer(call["call_id"], result={"selected": ["zzz"]})
    with pytest.raises(InteractionFailed) as caught:
        await asyncio.wait_for(asking, WAIT)
    assert caught.value.code == "tool_output_invalid"


async def test_bad_arguments_fail_locally_and_send_nothing(live: Harness) -> None:
    await live.publish_inventory()
    conversation = live.conversation
    with pytest.raises(ValueError, match="prompt"):
        await conversation.ask_confirm("")
    with pytest.raises(ValueError, match="between 1 minute and 24 hours"):
        await conversation.ask_confirm("Sure?", expires_in=30)
    with pytest.raises(ValueError, match="between 1 minute and 24 hours"):
        await conversation.ask_input("Name?", expires_in=timedelta(days=2))
    with pytest.raises(ValueError, match="need `multiple`"):
        await conversation.ask_choice("Pick", ["a", "b"], min_selected=1)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="unique"):
        await conversation.ask_choice("Pick", [("a", "A"), ("a", "again")])
    with pytest.raises(ValueError, match="unique"):
        await conversation.ask_choice("Pick", ["same", "same"])
    with pytest.raises(ValueError, match="options"):
        await conversation.ask_choice("Pick", [])
    with pytest.raises(ValueError, match="RE2"):
        await conversation.ask_input("Code?", pattern="(")
    with pytest.raises(ValueError, match="min_length"):
        await conversation.ask_input("Code?", min_length=10, max_length=5)
    with pytest.raises(ValueError, match="call_id"):
        await conversation.ask_confirm("Sure?", call_id="not an id")
    with pytest.raises(ValueError, match="level"):
        await conversation.notify("hi", level="loud")  # type: ignore[arg-type]
    assert await live.runtime.stored("lineup.v1.tool.call") == []


async def test_the_call_names_the_latest_inventory_revision(live: Harness) -> None:
    await live.publish_inventory("rev-a")
    await live.publish_inventory("rev-b")
    assert live.conversation.inventory is not None
    assert live.conversation.inventory.revision == "rev-b"
    asking = asyncio.create_task(live.conversation.ask_confirm("Go?"))
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert call["inventory_revision"] == "rev-b"
    await live.runtime.answer(call["call_id"], result={"confirmed": True})
    assert await asyncio.wait_for(asking, WAIT) is True


async def test_asking_before_any_inventory_waits_for_the_first(live: Harness) -> None:
    asking = asyncio.create_task(live.conversation.ask_confirm("Go?"))
    # The SDK has looked at the history, found no inventory, and now waits for one.
    await asyncio.wait_for(live.conversation._inbox.inventory_wanted.wait(), WAIT)
    assert await live.runtime.stored("lineup.v1.tool.call") == []
    assert not asking.done()
    revision, _ = await live.runtime.publish_inventory("rev-first")
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert call["inventory_revision"] == revision
    await live.runtime.answer(call["call_id"], result={"confirmed": True})
    assert await asyncio.wait_for(asking, WAIT) is True
    assert len(await live.runtime.stored("lineup.v1.tool.call")) == 1


async def test_an_inventory_mismatch_is_retried_once_with_the_newer_revision(
    live: Harness,
) -> None:
    await live.publish_inventory("rev-1")
    asking = asyncio.create_task(live.conversation.ask_input("Name?"))
    first = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert first["inventory_revision"] == "rev-1"
    await live.publish_inventory("rev-2")
    await live.runtime.answer(first["call_id"], "rejected", code="inventory_revision_mismatch")
    second = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    assert second["inventory_revision"] == "rev-2"
    assert second["call_id"] != first["call_id"]
    assert second["arguments"] == first["arguments"]
    await live.runtime.answer(second["call_id"], result={"text": "Ada"})
    assert await asyncio.wait_for(asking, WAIT) == "Ada"


async def test_a_mismatch_without_a_newer_inventory_is_raised(live: Harness) -> None:
    await live.publish_inventory("rev-1")
    asking = asyncio.create_task(live.conversation.ask_input("Name?"))
    call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
    await live.runtime.answer(call["call_id"], "rejected", code="inventory_revision_mismatch")
    with pytest.raises(InteractionRejected) as caught:
        await asyncio.wait_for(asking, WAIT)
    assert caught.value.code == "inventory_revision_mismatch"
    assert len(await live.runtime.stored("lineup.v1.tool.call")) == 1


async def test_dismiss_returns_the_winning_result_and_the_same_receipt_twice(
    live: Harness,
) -> None:
    await live.publish_inventory()
    conversation, runtime = live.conversation, live.runtime

    asking = asyncio.create_task(conversation.ask_input("Name?", call_id="q-1"))
    await asyncio.wait_for(runtime.next_call(), WAIT)
    dismissing = asyncio.create_task(conversation.dismiss("q-1", reason="no longer needed"))
    control = await asyncio.wait_for(runtime.next_from_agent("lineup.v1.interaction.dismiss"), WAIT)
    assert control["payload"]["call_id"] == "q-1"
    assert control["payload"]["reason"] == "no longer needed"
    assert control["payload"]["control_id"]
    await runtime.answer("q-1", "dismissed", code="interaction_dismissed")
    receipt = await asyncio.wait_for(dismissing, WAIT)
    assert receipt.status == "dismissed"
    assert receipt.error is not None and receipt.error.code == "interaction_dismissed"
    with pytest.raises(Dismissed):
        await asyncio.wait_for(asking, WAIT)
    assert await conversation.dismiss("q-1") == receipt
    assert await conversation.result("q-1") == receipt
    assert len(await runtime.stored("lineup.v1.interaction.dismiss")) == 1

    # The answer wins the race: the Runtime sends nothing new for the dismiss, and the
    # receipt is the answer.
    confirming = asyncio.create_task(conversation.ask_confirm("Sure?", call_id="q-2"))
    await asyncio.wait_for(runtime.next_call(), WAIT)
    dismissing = asyncio.create_task(conversation.dismiss("q-2"))
    await asyncio.wait_for(runtime.next_from_agent("lineup.v1.interaction.dismiss"), WAIT)
    await runtime.answer("q-2", result={"confirmed": True})
    receipt = await asyncio.wait_for(dismissing, WAIT)
    assert receipt.status == "completed"
    assert receipt.result == {"confirmed": True}
    assert await asyncio.wait_for(confirming, WAIT) is True
    assert await conversation.dismiss("q-2") == receipt


async def test_a_refused_dismiss_raises_instead_of_waiting(live: Harness) -> None:
    dismissing = asyncio.create_task(live.conversation.dismiss("never-asked"))
    control = await asyncio.wait_for(
        live.runtime.next_from_agent("lineup.v1.interaction.dismiss"), WAIT
    )
    await live.runtime.post(
        "lineup.v1.error",
        {"code": "interaction_not_found", "message": "no such call", "ref_id": control["id"]},
    )
    with pytest.raises(InteractionError) as caught:
        await asyncio.wait_for(dismissing, WAIT)
    assert caught.value.code == "interaction_not_found"


async def test_result_after_a_restart_reads_the_history_and_waits_for_the_rest(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    store = FileCursorStore(tmp_path / "cursors.json")
    async with harness(pair, appserver, store) as first:
        ticks: asyncio.Queue[str] = asyncio.Queue()

        @first.agent.on_message
        async def tick(conversation: Conversation, message: MessageEnvelope) -> None:
            await ticks.put(message.payload.text)

        await first.publish_inventory()
        early = asyncio.create_task(first.conversation.ask_confirm("Early?", call_id="early"))
        await asyncio.wait_for(first.runtime.next_call(), WAIT)
        early_seq = await first.runtime.answer("early", result={"confirmed": True})
        assert await asyncio.wait_for(early, WAIT) is True
        late = asyncio.create_task(first.conversation.ask_input("Late?", call_id="late"))
        await asyncio.wait_for(first.runtime.next_call(), WAIT)
        await pair.user.send_text(pair.conversation_id, "tick")
        assert await asyncio.wait_for(ticks.get(), WAIT) == "tick"
    with pytest.raises(AgentClosed):
        await late
    # The result is before the cursor: the stream will not replay it.
    assert store.load()[pair.conversation_id] > early_seq

    async with harness(pair, appserver, store) as second:
        # Asking again under a call id that is already answered: not asked twice, the
        # answer comes from the history.
        again = second.conversation.ask_confirm("Early?", call_id="early")
        assert await asyncio.wait_for(again, WAIT) is True
        found = await asyncio.wait_for(second.conversation.result("early"), WAIT)
        assert found.status == "completed"
        assert found.result == {"confirmed": True}
        waiting = asyncio.create_task(second.conversation.result("late"))
        await second.runtime.answer("late", result={"text": "Ada"})
        answered = await asyncio.wait_for(waiting, WAIT)
        assert (answered.call_id, answered.status, answered.result) == (
            "late",
            "completed",
            {"text": "Ada"},
        )
        assert await second.conversation.result("late") == answered
    calls = await second.runtime.stored("lineup.v1.tool.call")
    assert [c["payload"]["call_id"] for c in calls] == ["early", "late"]


async def test_a_handler_replayed_after_a_restart_asks_the_same_calls_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    store = FileCursorStore(tmp_path / "cursors.json")
    done: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()
    started: asyncio.Queue[str] = asyncio.Queue()

    def install(agent: Agent) -> None:
        @agent.on_message
        async def deploy(conversation: Conversation, message: MessageEnvelope) -> None:
            await started.put(message.id)
            where = await conversation.ask_choice("Where?", [("stg", "Staging"), ("prod", "Prod")])
            sure = await conversation.ask_confirm(f"Deploy to {where}?")
            await conversation.send_markdown(f"{where} {sure}", envelope_id=f"done.{message.id}")
            await done.put((where, sure))

    async with harness(pair, appserver, store, install) as first:
        revision, inventory_seq = await first.runtime.publish_inventory()
        await first.seen_inventory(revision)
        message_seq = await pair.user.send_text(pair.conversation_id, "deploy")
        started_id = await asyncio.wait_for(started.get(), WAIT)
        choice = await asyncio.wait_for(first.runtime.next_call(), WAIT)
        await first.runtime.answer(choice["call_id"], result={"selected": ["prod"]})
        confirm = await asyncio.wait_for(first.runtime.next_call(), WAIT)
        assert confirm["tool"] == "interact.confirm"
        assert confirm["call_id"] != choice["call_id"]
        # Stopped while the handler waits for the confirm: its cursor does not advance.
    assert store.load()[pair.conversation_id] < message_seq
    assert store.load()[pair.conversation_id] >= inventory_seq
    assert done.empty()

    async with harness(pair, appserver, store, install) as second:
        assert await asyncio.wait_for(started.get(), WAIT) == started_id  # the replay
        await second.runtime.answer(confirm["call_id"], result={"confirmed": True})
        assert await asyncio.wait_for(done.get(), WAIT) == ("prod", True)

    calls = await second.runtime.stored("lineup.v1.tool.call")
    assert [c["payload"]["call_id"] for c in calls] == [choice["call_id"], confirm["call_id"]]
    assert [c["id"] for c in calls] == [
        call_envelope_id(pair.conversation_id, choice["call_id"]),
        call_envelope_id(pair.conversation_id, confirm["call_id"]),
    ]
    results = await second.runtime.stored("lineup.v1.tool.result")
    assert len(results) == 2
    replies = [
        e["payload"]["text"]
        for e in await second.runtime.stored("lineup.v1.message")
        if e["sender"]["kind"] == "agent"
    ]
    assert replies == ["prod True"]


class PagedHistory:
    """A conversation log in memory, served in pages like the AppServer's read API."""

    def __init__(self, items: list[tuple[int, bytes]]) -> None:
        self.items = items
        self.reads = 0

    def streamed_after(self, conversation_id: str) -> int:
        return len(self.items)

    async def read_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        self.reads += 1
        return [item for item in self.items if item[0] > since][:500]


async def test_results_are_remembered_up_to_a_bound_and_older_ones_read_from_history() -> None:
    def result_envelope(n: int) -> ToolResultEnvelope:
        return ToolResultEnvelope(
            id=f"r-{n}",
            conversation_id="c",
            sender=Sender(kind="runtime", id="u"),
            created_at=datetime.now(UTC),
            payload=ToolResult(call_id=f"call-{n}", status="completed", result={"n": n}),
        )

    envelopes = [result_envelope(n) for n in range(RESULTS_KEPT + 1)]
    history = PagedHistory([(seq, encode(e)) for seq, e in enumerate(envelopes, start=1)])
    conversation = Conversation(
        "c",
        user_id="u",
        agent_id="a",
        title="",
        connection=cast(Any, None),
        clock=lambda: datetime.now(UTC),
        history=history,
    )
    for seq, envelope in enumerate(envelopes, start=1):
        conversation._observe(seq, envelope)
    newest = await conversation.result(f"call-{RESULTS_KEPT}")
    assert newest.result == {"n": RESULTS_KEPT}
    assert history.reads == 0
    oldest = await asyncio.wait_for(conversation.result("call-0"), WAIT)
    assert oldest.result == {"n": 0}
    assert history.reads == 1  # found on the first page; the rest is not read
