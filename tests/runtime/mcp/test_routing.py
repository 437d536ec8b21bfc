"""Calls of MCP servers' tools through the Tool Router, on a real store and the
injected clock (issue 24, part 2): the tools of a server in the inventory, the Tool
Router's refusals, the server's policy and the person's consent, exactly one
``tool.result`` whatever happens (the server's answer, a dismiss, the deadline, the
server disabled, a restart), and what the config's servers become in the store.

What a running server lists is recorded with ``servers.record_tools`` (the store's own
entry point, which the connection layer feeds); the connection itself is tested with
real servers in ``test_gateway``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.apps import registry
from lineup.runtime.mcp import call_store, servers
from lineup.runtime.mcp.calls import Event, State
from lineup.runtime.mcp.servers import McpToolSnapshot
from lineup.runtime.txn import RuntimeTxn
from tests.runtime.apps.test_router import C1, RouterHarness, rejected_code

KEY = "everything"
ECHO = "mcp-everything.echo"
ADD = "mcp-everything.getSum"
ECHO_TOOL = McpToolSnapshot(
    name="echo",
    title="Echo",
    description="Echoes back the input.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
    read_only=True,
)
ADD_TOOL = McpToolSnapshot(
    name="getSum",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
    output_schema={
        "type": "object",
        "properties": {"sum": {"type": "number"}},
        "required": ["sum"],
    },
)
APP_ONLY = McpToolSnapshot(name="poll", input_schema={"type": "object"}, visibility=("app",))
BAD_NAME = McpToolSnapshot(name="1st", input_schema={"type": "object"})
BAD_SCHEMA = McpToolSnapshot(name="broken", input_schema={"type": "object", "pattern": "("})


class McpHarness(RouterHarness):
    async def configure(self, *tools: McpToolSnapshot, digest: str = "d1") -> None:
        def txn(conn: RuntimeTxn, now: str) -> str:
            servers.sync(conn, {KEY: ("everything", digest)}, now)
            servers.record_tools(
                conn, KEY, tools, now, server_name="example", server_version="1.0", title=None
            )
            return registry.refresh_inventory(conn, now)[0].revision

        self.revision = await self.db.db.write(txn, self.now())

    async def policy(self, policy: str) -> None:
        await self.db.db.write(servers.set_policy, KEY, policy, self.now())

    async def mcp_call(self, call_id: str) -> call_store.McpCall | None:
        return await self.db.db.read(call_store.get, C1.id, call_id)

    async def act(self, call_id: str, event: Event, **kwargs: Any) -> call_store.McpCall:
        def txn(conn: RuntimeTxn, now: str) -> call_store.McpCall:
            return call_store.act(conn, C1.id, call_id, event, now, actor="test", **kwargs)

        moved: call_store.McpCall = await self.db.db.write(txn, self.now())
        return moved

    async def disable(self) -> None:
        def txn(conn: RuntimeTxn, now: str) -> str:
            servers.set_enabled(conn, KEY, False, now)
            call_store.end_for_server(conn, KEY, now)
            return registry.refresh_inventory(conn, now)[0].revision

        self.revision = await self.db.db.write(txn, self.now())

    async def inventory_tools(self) -> dict[str, Any]:
        inventory = await self.db.db.read(registry.build_inventory)
        return {t.id: t for t in inventory.tools}


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[McpHarness]:
    harness = McpHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    yield harness
    await harness.close()


ANSWER = msgspec.json.encode({"content": [{"type": "text", "text": "hi"}], "isError": False})


# --- the inventory ----------------------------------------------------------------------------


async def test_a_server_s_tools_are_advertised_under_its_scope(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL, ADD_TOOL, APP_ONLY, BAD_NAME, BAD_SCHEMA)
    tools = await h.inventory_tools()
    mine = sorted(t for t in tools if t.startswith("mcp-"))
    # The app-only tool, the name the grammar cannot hold and the schema our validators
    # refuse are left out; the rest keep the server's spelling.
    assert mine == [ECHO, ADD]
    echo = tools[ECHO]
    assert (echo.handling, echo.target.app_scope) == ("direct", "mcp-everything")
    assert (echo.title, echo.description) == ("Echo", "Echoes back the input.")
    assert echo.input_schema == ECHO_TOOL.input_schema
    wrapped = tools[ADD].output_schema
    assert wrapped["properties"]["structuredContent"] == ADD_TOOL.output_schema
    assert wrapped["required"] == ["content", "isError"]


async def test_a_new_listing_bumps_the_revision_and_a_same_one_does_not(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    first = h.revision
    await h.configure(ECHO_TOOL)
    assert h.revision == first
    await h.configure(ECHO_TOOL, ADD_TOOL)
    assert h.revision != first


# --- the Tool Router's refusals -----------------------------------------------------------


async def test_refusals_store_no_call(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.call("bad-args", ECHO, {"message": 7})
    assert rejected_code(h, "bad-args") == ErrorCode.TOOL_INPUT_INVALID
    await h.call("unknown", "mcp-everything.nothing", {})
    assert rejected_code(h, "unknown") == ErrorCode.TOOL_NOT_ADVERTISED
    await h.call("instance", ECHO, {"message": "x"}, target={"instance_id": "mcp-everything.1"})
    assert rejected_code(h, "instance") == ErrorCode.APP_SCOPE_MISMATCH
    for call_id in ("bad-args", "unknown", "instance"):
        assert await h.mcp_call(call_id) is None


async def test_a_disabled_server_s_tools_leave_and_its_calls_end(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.call("waiting", ECHO, {"message": "x"})
    old = h.revision
    await h.disable()
    assert ECHO not in await h.inventory_tools()
    (result,) = h.results_for("waiting")
    assert (result["status"], result["error"]["code"]) == ("cancelled", ErrorCode.APP_DISABLED)
    await h.call("stale", ECHO, {"message": "x"}, revision=old)
    assert rejected_code(h, "stale") == ErrorCode.INVENTORY_REVISION_MISMATCH
    await h.call("current", ECHO, {"message": "x"})
    assert rejected_code(h, "current") == ErrorCode.APP_DISABLED


# --- policy and consent -------------------------------------------------------------------


async def test_ask_waits_for_consent_then_one_result(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.call("c1", ECHO, {"message": "hi"})
    call = await h.mcp_call("c1")
    assert call is not None and call.state is State.AWAITING_CONSENT
    assert h.results_for("c1") == []
    allowed = await h.act("c1", Event.ALLOW, consent="allow")
    assert (allowed.state, allowed.decision) == (State.EXECUTING, "allow")
    await h.act("c1", Event.COMPLETE, result=ANSWER)
    (result,) = h.results_for("c1")
    assert result["status"] == "completed"
    assert result["result"] == {"content": [{"type": "text", "text": "hi"}], "isError": False}
    with pytest.raises(call_store.McpCallRefused) as late:  # a second answer changes nothing
        await h.act("c1", Event.COMPLETE, result=ANSWER)
    assert late.value.code == ErrorCode.CALL_ALREADY_FINAL
    assert len(h.results_for("c1")) == 1


async def test_deny_is_capability_denied(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.call("c1", ECHO, {"message": "hi"})
    await h.act("c1", Event.DENY, consent="deny")
    (result,) = h.results_for("c1")
    assert (result["status"], result["error"]["code"]) == ("rejected", ErrorCode.CAPABILITY_DENIED)


@pytest.mark.parametrize(
    ("policy", "tool", "state"),
    [
        ("allow", ADD, State.EXECUTING),
        ("read_only", ECHO, State.EXECUTING),
        ("read_only", ADD, State.AWAITING_CONSENT),
        ("ask", ECHO, State.AWAITING_CONSENT),
    ],
)
async def test_the_policy_decides_who_asks(
    h: McpHarness, policy: str, tool: str, state: State
) -> None:
    await h.configure(ECHO_TOOL, ADD_TOOL)
    await h.policy(policy)
    arguments = {"message": "x"} if tool == ECHO else {"a": 1, "b": 2}
    await h.call("c1", tool, arguments)
    call = await h.mcp_call("c1")
    assert call is not None and call.state is state
    assert call.decision == ("automatic" if state is State.EXECUTING else None)


# --- the other endings --------------------------------------------------------------------


async def test_a_dismissed_call_ends_once(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.policy("allow")
    await h.call("c1", ECHO, {"message": "x"})

    def dismiss(conn: RuntimeTxn, now: str) -> call_store.McpCall | None:
        return call_store.dismiss(conn, C1.id, "c1", C1.agent_id, now)

    moved = await h.db.db.write(dismiss, h.now())
    assert moved is not None and moved.state is State.DISMISSED
    assert await h.db.db.write(dismiss, h.now()) is None  # a repeat: nothing
    (result,) = h.results_for("c1")
    assert (result["status"], result["error"]["code"]) == ("dismissed", ErrorCode.CALL_DISMISSED)


async def test_the_deadline_ends_a_call_and_a_late_answer_is_refused(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.policy("allow")
    await h.call("c1", ECHO, {"message": "x"})
    h.clock.advance(milliseconds=servers.CALL_TIMEOUT_MS)
    ended = await h.db.db.write(call_store.due, h.now())
    assert [c.call_id for c in ended] == ["c1"]
    with pytest.raises(call_store.McpCallRefused):
        await h.act("c1", Event.COMPLETE, result=ANSWER)
    (result,) = h.results_for("c1")
    assert (result["status"], result["error"]["code"]) == ("failed", ErrorCode.TOOL_TIMEOUT)


async def test_a_restart_never_sends_an_executing_call_again(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL, ADD_TOOL)
    await h.policy("read_only")
    await h.call("running", ECHO, {"message": "x"})  # read-only: executing
    await h.call("asking", ADD, {"a": 1, "b": 2})  # waits for the person
    await h.restart()
    ended = await h.db.db.write(call_store.recover, h.now())
    assert [c.call_id for c in ended] == ["running"]
    (result,) = h.results_for("running")
    assert (result["status"], result["error"]["code"]) == ("failed", ErrorCode.INTERRUPTED)
    asking = await h.mcp_call("asking")
    assert asking is not None and asking.state is State.AWAITING_CONSENT  # still the person's


async def test_a_call_id_is_spent_once_across_kinds(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.call("c1", ECHO, {"message": "x"})
    await h.call("c1", ECHO, {"message": "again"})
    await h.call("c1", "interact.notice", {"text": "hi"})
    call = await h.mcp_call("c1")
    assert call is not None and msgspec.json.decode(call.arguments) == {"message": "x"}
    assert h.results_for("c1") == []  # the first is still waiting; nothing answered twice


# --- the config's servers in the store -----------------------------------------------------


async def test_a_removed_server_stays_removed_until_its_definition_changes(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.db.db.write(servers.remove, KEY, h.now())
    await h.configure(ECHO_TOOL)  # the next start, the same definition
    assert ECHO not in await h.inventory_tools()
    await h.configure(ECHO_TOOL, digest="d2")  # the person wrote it anew
    assert ECHO in await h.inventory_tools()


async def test_a_server_the_config_no_longer_names_leaves_the_inventory(h: McpHarness) -> None:
    await h.configure(ECHO_TOOL)
    await h.db.db.write(servers.sync, {}, h.now())
    assert ECHO not in await h.inventory_tools()
    (entry,) = await h.db.db.read(servers.entries)
    assert not entry.configured and entry.tools  # kept, should the config name it again
