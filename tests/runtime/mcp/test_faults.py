"""Servers that misbehave (the fault server, a real child over stdio): each fault ends
with a stable code, the server is restarted or failed as it should be, and nothing else
stalls."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tracemalloc

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp import (
    McpCallError,
    McpServer,
    McpServers,
    McpState,
    RejectionReason,
)

from .conftest import FAST, FaultFactory, pid_gone, running

TIMEOUT_S = 15.0


def _text(result: object) -> str:
    return "\n".join(b["text"] for b in result.content if b["type"] == "text")  # type: ignore[attr-defined]


async def _call_error(
    server: McpServer, name: str, args: dict[str, object] | None = None, **kw: object
) -> McpCallError:
    kw.setdefault("timeout_s", TIMEOUT_S)
    with pytest.raises(McpCallError) as caught:
        await server.call_tool(name, args or {}, **kw)  # type: ignore[arg-type]
    assert "\n" not in caught.value.message
    return caught.value


async def _restarted(server: McpServer, starts: int) -> None:
    await server.wait_for_change(
        lambda s: s.starts >= starts and s.state is McpState.READY, timeout_s=30
    )


async def test_a_crash_mid_call_is_unavailable_then_the_server_comes_back(
    fault: FaultFactory,
) -> None:
    config, _ = fault()
    async with running(config) as server:
        first_pid = server.pid
        assert first_pid is not None
        error = await _call_error(server, "crash")
        assert error.code is ErrorCode.MCP_SERVER_UNAVAILABLE
        await _restarted(server, 2)
        assert server.pid != first_pid and pid_gone(first_pid)
        assert server.reason == "the server exited with status 7"
        assert (
            _text(await server.call_tool("echo", {"text": "back"}, timeout_s=TIMEOUT_S)) == "back"
        )


async def test_a_hang_times_out_and_another_server_is_not_held_up(fault: FaultFactory) -> None:
    hanging_config, _ = fault(name="hanging")
    other_config, _ = fault(name="other")
    async with running(hanging_config) as hanging, running(other_config) as other:
        hang = asyncio.create_task(_call_error(hanging, "hang", timeout_s=2.0))
        for _ in range(20):
            assert (
                _text(await other.call_tool("echo", {"text": "free"}, timeout_s=TIMEOUT_S))
                == "free"
            )
        assert not hang.done()
        error = await hang
        assert error.code is ErrorCode.MCP_TIMEOUT and "within 2 s" in error.message
        # The timed-out call was cancelled on the server; the server stays up.
        assert _text(await hanging.call_tool("cancellations", {}, timeout_s=TIMEOUT_S)) == "hang"
        assert hanging.state is McpState.READY and hanging.starts == 1


async def test_cancelling_the_caller_cancels_the_call_on_the_server(fault: FaultFactory) -> None:
    config, record = fault()
    began = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        began.set()

    async with running(config) as server:
        call = asyncio.create_task(
            server.call_tool("slow", {"n": 200}, progress=progress, timeout_s=60)
        )
        await asyncio.wait_for(began.wait(), TIMEOUT_S)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert _text(await server.call_tool("cancellations", {}, timeout_s=TIMEOUT_S)) == "slow"
    assert "cancelled slow" in record.read_text().splitlines()


async def test_garbage_on_stdout_is_a_protocol_error_and_a_restart(fault: FaultFactory) -> None:
    config, _ = fault()
    async with running(config) as server:
        error = await _call_error(server, "garbage")
        assert error.code is ErrorCode.MCP_PROTOCOL_ERROR
        assert (
            error.message
            == "MCP server fault: the server wrote something that is not JSON-RPC on stdout"
        )
        await _restarted(server, 2)
        assert server.reason == "the server wrote something that is not JSON-RPC on stdout"
        assert _text(await server.call_tool("echo", {"text": "ok"}, timeout_s=TIMEOUT_S)) == "ok"


async def test_a_progress_flood_is_coalesced_and_others_go_on(fault: FaultFactory) -> None:
    flood_config, _ = fault(name="flood")
    other_config, _ = fault(name="other")
    calls = 0
    never = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        nonlocal calls
        calls += 1
        await never.wait()  # a consumer that never finishes: the flood must not queue behind it

    async with running(flood_config) as flooding, running(other_config) as other:
        flood = asyncio.create_task(
            flooding.call_tool("flood", {"n": 20000}, progress=progress, timeout_s=60)
        )
        echoes = 0
        while not flood.done() and echoes < 20:
            await other.call_tool("echo", {"text": "x"}, timeout_s=5)
            echoes += 1
        result = await flood
    assert _text(result) == "flooded 20000"
    assert echoes > 0
    assert 0 < calls < 2000, calls


async def test_log_notifications_are_counted_not_kept(fault: FaultFactory) -> None:
    config, _ = fault()
    async with running(config) as server:
        await server.call_tool("logs", {"n": 300}, timeout_s=TIMEOUT_S)
        assert server.log_messages == 300


async def test_a_10_mb_result_is_refused_without_holding_it(fault: FaultFactory) -> None:
    config, _ = fault()
    limits = dataclasses.replace(FAST, max_message_bytes=1024 * 1024, max_result_bytes=512 * 1024)
    async with running(config, limits=limits) as server:
        tracemalloc.start()
        try:
            error = await _call_error(server, "big", {"n": 10_000_000})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert error.code is ErrorCode.MCP_RESULT_TOO_LARGE
        assert peak < 4 * 1024 * 1024, peak  # the 10 MB line was never held
        # Over the result limit but within a message: measured and refused after decoding.
        error = await _call_error(server, "big", {"n": 700_000})
        assert (
            error.code is ErrorCode.MCP_RESULT_TOO_LARGE
            and "over the limit of 524288" in error.message
        )
        # The connection survived both.
        assert server.starts == 1
        assert (
            _text(await server.call_tool("echo", {"text": "small"}, timeout_s=TIMEOUT_S)) == "small"
        )


async def test_a_ui_resource_is_read_with_its_meta_and_refused_over_the_limit(
    fault: FaultFactory,
) -> None:
    config, _ = fault(FAULT_VIEW_BYTES="200000")
    async with running(config) as server:
        view = next(t for t in server.info.tools if t.name == "view")  # type: ignore[union-attr]
        assert view.ui_resource_uri == "ui://fault/view" and view.visibility == ("app",)
        assert server.info is not None and server.info.has_ui
        resource = await server.read_resource("ui://fault/view", max_bytes=400_000)
        assert resource.mime_type == "text/html;profile=mcp-app" and resource.text is not None
        assert resource.meta == {
            "ui": {"csp": {"connectDomains": ["https://api.example.test"]}, "prefersBorder": True}
        }
        with pytest.raises(McpCallError) as caught:
            await server.read_resource("ui://fault/view", max_bytes=100_000)
        assert caught.value.code is ErrorCode.MCP_RESOURCE_TOO_LARGE


async def test_tools_that_lie_about_their_schemas_are_left_out(fault: FaultFactory) -> None:
    config, _ = fault("lie")
    async with running(config) as server:
        info = server.info
        assert info is not None
        rejected = {(t.name, t.reason) for t in info.rejected_tools}
        assert rejected == {
            ("string_schema", RejectionReason.INPUT_SCHEMA_INVALID),
            ("list_schema", RejectionReason.INPUT_SCHEMA_INVALID),
            ("bad_output", RejectionReason.OUTPUT_SCHEMA_INVALID),
            ("bad name!", RejectionReason.NAME_INVALID),
        }
        assert "echo" in {t.name for t in info.tools}
        assert (
            _text(await server.call_tool("echo", {"text": "still"}, timeout_s=TIMEOUT_S)) == "still"
        )


async def test_a_tool_list_changed_mid_call_is_relisted_and_the_call_ends_once(
    fault: FaultFactory,
) -> None:
    config, _ = fault()
    changes: list[tuple[str, ...]] = []

    def on_change(server: McpServer) -> None:
        if server.info is not None:
            changes.append(tuple(t.name for t in server.info.tools))

    async with running(config, on_change=on_change) as server:
        assert "added" not in {t.name for t in server.info.tools}  # type: ignore[union-attr]
        result = await server.call_tool("change_tools", {}, timeout_s=TIMEOUT_S)
        assert _text(result) == "changed"
        await server.wait_for_change(
            lambda s: s.info is not None and "added" in {t.name for t in s.info.tools},
            timeout_s=TIMEOUT_S,
        )
        assert any("added" in names for names in changes)
        assert _text(await server.call_tool("added", {}, timeout_s=TIMEOUT_S)) == "added here"
        assert server.starts == 1


async def test_a_server_that_exits_at_once_fails_after_its_tries(fault: FaultFactory) -> None:
    config, record = fault("exit")
    server = McpServer(config, limits=FAST)
    await server.start()
    try:
        assert await server.wait_for(McpState.FAILED, timeout_s=30) is McpState.FAILED
        assert server.starts == FAST.max_quick_failures
        assert server.reason == "the server exited with status 3 during initialize"
        assert "fault server: exiting at once" in server.stderr_tail()
        assert server.info is None
        error = await _call_error(server, "echo", {"text": "x"})
        assert (
            error.code is ErrorCode.MCP_SERVER_UNAVAILABLE
            and error.message == "MCP server fault is failed"
        )
    finally:
        await server.stop()
    assert server.state is McpState.STOPPED
    assert record.read_text().count("pid ") == FAST.max_quick_failures


async def test_a_server_silent_on_initialize_is_not_waited_for(fault: FaultFactory) -> None:
    config, _ = fault("silent")
    limits = dataclasses.replace(FAST, initialize_timeout_s=0.5, max_quick_failures=2)
    server = McpServer(config, limits=limits)
    await server.start()
    try:
        await server.wait_for(McpState.FAILED, timeout_s=30)
        assert server.reason == "the server did not answer initialize within 0.5 s"
    finally:
        await server.stop()


async def test_we_declare_form_elicitation_and_mcp_apps_only(fault: FaultFactory) -> None:
    config, _ = fault()
    async with running(config) as server:
        declared = json.loads(
            _text(await server.call_tool("capabilities", {}, timeout_s=TIMEOUT_S))
        )
    assert declared == {
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}},
    }


async def test_sampling_and_roots_requests_get_method_not_found(fault: FaultFactory) -> None:
    config, _ = fault()
    async with running(config) as server:
        assert (
            _text(await server.call_tool("ask_sampling", {}, timeout_s=TIMEOUT_S)) == "error -32601"
        )
        assert _text(await server.call_tool("ask_roots", {}, timeout_s=TIMEOUT_S)) == "error -32601"


async def test_stop_leaves_no_process_even_when_the_server_ignores_stdin_and_sigterm(
    fault: FaultFactory,
) -> None:
    for mode in ("normal", "stubborn"):
        config, record = fault(mode, name=mode)
        async with running(config) as server:
            pid = server.pid
            assert pid is not None and not pid_gone(pid)
            call = asyncio.create_task(server.call_tool("hang", {}, timeout_s=60))
            await asyncio.sleep(0)
        assert pid_gone(pid), mode
        assert server.state is McpState.STOPPED and server.pid is None
        with pytest.raises(McpCallError) as caught:  # a call in flight ends, once
            await asyncio.wait_for(call, 10)
        assert caught.value.code is ErrorCode.MCP_SERVER_UNAVAILABLE
        await server.stop()  # idempotent
        if mode == "stubborn":
            assert "stdin closed, staying" in record.read_text()


async def test_the_servers_of_a_config_start_disable_and_stop_together(fault: FaultFactory) -> None:
    one, _ = fault(name="one")
    two, _ = fault(name="two")
    servers = McpServers([one, two], limits=FAST)
    assert servers.keys() == ("one", "two")
    await servers.start(["one", "two", "unknown"])
    try:
        for server in servers:
            await server.wait_for(McpState.READY, timeout_s=30)
        first = servers.get("one")
        assert first is not None and first.pid is not None
        pid = first.pid
        await servers.disable("one")
        assert first.state is McpState.STOPPED and pid_gone(pid)
        second = servers.get("two")
        assert second is not None and second.state is McpState.READY
        await servers.enable("one")
        await first.wait_for(McpState.READY, timeout_s=30)
    finally:
        pids = [s.pid for s in servers]
        await servers.stop()
    assert all(s.state is McpState.STOPPED for s in servers)
    assert all(pid is not None and pid_gone(pid) for pid in pids)


async def test_a_server_that_never_lists_its_tools_is_not_waited_for(fault: FaultFactory) -> None:
    config, _ = fault("slowlist")
    limits = dataclasses.replace(FAST, list_timeout_s=0.5, max_quick_failures=2)
    server = McpServer(config, limits=limits)
    await server.start()
    try:
        await server.wait_for(McpState.FAILED, timeout_s=30)
        assert server.reason == "the server did not list its tools within 0.5 s"
    finally:
        await server.stop()


async def test_stderr_is_kept_bounded_in_memory(fault: FaultFactory) -> None:
    config, _ = fault()
    async with running(config) as server:
        await server.call_tool("stderr", {"n": 1000}, timeout_s=TIMEOUT_S)
        await server.call_tool("stderr", {"n": 1}, timeout_s=TIMEOUT_S)
    # stop() read what was left in the pipe.
    tail = server.stderr_tail()
    lines = tail.splitlines()
    assert len(lines) <= FAST.stderr_lines and len(tail.encode()) <= FAST.stderr_bytes
    assert lines[-1].startswith("stderr line 0 ") and lines[-2].startswith("stderr line 999 ")


async def test_a_child_gets_a_minimal_environment_and_its_configured_env(
    fault: FaultFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINEUP_TEST_RUNTIME_SECRET", "not for children")
    config, _ = fault(CONFIGURED="yes")
    async with running(config) as server:
        names = set(_text(await server.call_tool("env", {}, timeout_s=TIMEOUT_S)).split(","))
    assert {"CONFIGURED", "FAULT_MODE", "PATH", "HOME"} <= names
    assert "LINEUP_TEST_RUNTIME_SECRET" not in names
