"""Against the official server-everything (npm), over stdio and over streamable HTTP:
tools and their schemas, calls, progress, cancellation, structured output, errors,
elicitation, and the capabilities we declare (what it offers us follows them)."""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import time
from typing import Any

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp import ElicitAnswer, McpCallError, McpServer, McpState, ServerConfig

from .conftest import FAST, HttpEverything, running

TIMEOUT_S = 15.0


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> ServerConfig:
    config: ServerConfig = request.getfixturevalue(f"everything_{request.param}")
    return config


def _text(result: Any) -> str:
    return "\n".join(block["text"] for block in result.content if block["type"] == "text")


async def _with_elicitation_tool(server: McpServer) -> None:
    # Registered once the handshake is done, announced with tools/list_changed.
    await server.wait_for_change(
        lambda s: (
            s.info is not None
            and any(t.name == "trigger-elicitation-request" for t in s.info.tools)
        ),
        timeout_s=TIMEOUT_S,
    )


async def test_tools_are_listed_with_their_schemas_and_annotations(
    everything: ServerConfig,
) -> None:
    async with running(everything) as server:
        await _with_elicitation_tool(server)
        info = server.info
        assert info is not None
        assert info.name == "mcp-servers/everything" and info.version
        assert info.protocol_version == "2025-11-25"
        tools = {tool.name: tool for tool in info.tools}
        assert {
            "echo",
            "get-sum",
            "trigger-long-running-operation",
            "get-structured-content",
        } <= set(tools)
        assert info.rejected_tools == ()
        echo = tools["echo"]
        assert (
            echo.input_schema["type"] == "object" and "message" in echo.input_schema["properties"]
        )
        assert echo.output_schema is None and echo.visibility == ("model", "app")
        long = tools["trigger-long-running-operation"]
        assert (long.read_only, long.destructive, long.idempotent, long.open_world) == (
            True,
            False,
            True,
            False,
        )
        assert long.title == "Trigger Long Running Operation Tool"
        structured = tools["get-structured-content"]
        assert structured.output_schema is not None
        assert set(structured.output_schema["properties"]) == {
            "temperature",
            "conditions",
            "humidity",
        }
        # What we declared decides what it offers: elicitation in form mode only, no
        # sampling, no roots.
        assert "trigger-url-elicitation" not in tools
        assert "trigger-sampling-request" not in tools and "get-roots-list" not in tools
        assert not info.has_ui


async def test_echo_and_sum(everything: ServerConfig) -> None:
    async with running(everything) as server:
        echoed = await server.call_tool("echo", {"message": "hello"}, timeout_s=TIMEOUT_S)
        assert _text(echoed) == "Echo: hello" and not echoed.is_error
        summed = await server.call_tool("get-sum", {"a": 2, "b": 40}, timeout_s=TIMEOUT_S)
        assert "42" in _text(summed)


async def test_progress_reaches_the_callback(everything: ServerConfig) -> None:
    seen: list[tuple[float, float | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total))

    async with running(everything) as server:
        result = await server.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 4},
            progress=progress,
            timeout_s=TIMEOUT_S,
        )
        assert "completed" in _text(result)
    assert seen and seen[-1] == (4.0, 4.0)
    assert [value for value, _ in seen] == sorted(value for value, _ in seen)


async def test_a_cancelled_call_ends_at_once_and_the_server_goes_on(
    everything: ServerConfig,
) -> None:
    started = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    async with running(everything) as server:
        call = asyncio.create_task(
            server.call_tool(
                "trigger-long-running-operation",
                {"duration": 60, "steps": 120},
                progress=progress,
                timeout_s=120,
            )
        )
        await asyncio.wait_for(started.wait(), TIMEOUT_S)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, 5)
        # The connection is intact (the fault server's tests show the cancel arriving).
        echoed = await server.call_tool("echo", {"message": "after"}, timeout_s=TIMEOUT_S)
        assert _text(echoed) == "Echo: after"


async def test_structured_output(everything: ServerConfig) -> None:
    async with running(everything) as server:
        result = await server.call_tool(
            "get-structured-content", {"location": "Chicago"}, timeout_s=TIMEOUT_S
        )
        assert result.structured_content is not None
        assert set(result.structured_content) == {"temperature", "conditions", "humidity"}


async def test_errors_are_results_or_stable_codes(everything: ServerConfig) -> None:
    async with running(everything) as server:
        invalid = await server.call_tool("get-sum", {"a": "two"}, timeout_s=TIMEOUT_S)
        assert invalid.is_error and "Input validation error" in _text(invalid)
        with pytest.raises(McpCallError) as caught:
            await server.call_tool("no-such-tool", {}, timeout_s=TIMEOUT_S)
        assert caught.value.code is ErrorCode.MCP_TOOL_UNKNOWN


async def test_content_annotations_are_kept(everything: ServerConfig) -> None:
    async with running(everything) as server:
        result = await server.call_tool(
            "get-annotated-message",
            {"messageType": "error", "includeImage": False},
            timeout_s=TIMEOUT_S,
        )
        annotations = result.content[0]["annotations"]
        assert annotations["priority"] == 1.0 and annotations["audience"] == ["user", "assistant"]


async def test_elicitation_is_asked_and_accepted(everything: ServerConfig) -> None:
    asked: list[tuple[str, str, dict[str, Any]]] = []

    async def elicit(server_key: str, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        asked.append((server_key, message, schema))
        return ElicitAnswer("accept", {"name": "Ada", "check": True})

    async with running(everything, elicit=elicit) as server:
        await _with_elicitation_tool(server)
        result = await server.call_tool("trigger-elicitation-request", {}, timeout_s=TIMEOUT_S)
    ((key, message, schema),) = asked
    assert key == "everything" and message.startswith("Please provide inputs")
    assert schema["type"] == "object" and {"name", "check", "email"} <= set(schema["properties"])
    assert schema["properties"]["firstLine"]["default"] == "It was a dark and stormy night."
    text = _text(result)
    assert "User provided the requested information" in text and "Ada" in text


@pytest.mark.parametrize("answer", ["decline", "cancel", None])
async def test_elicitation_declined_or_cancelled(
    everything: ServerConfig, answer: str | None
) -> None:
    async def elicit(server_key: str, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        assert answer is not None
        return ElicitAnswer(answer)  # type: ignore[arg-type]

    async with running(everything, elicit=elicit if answer else None) as server:
        await _with_elicitation_tool(server)
        result = await server.call_tool("trigger-elicitation-request", {}, timeout_s=TIMEOUT_S)
    expected = {"decline": "declined", "cancel": "cancelled", None: "declined"}[answer]
    assert expected in _text(result).lower()


async def test_echo_round_trip_over_stdio(
    everything_stdio: ServerConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline the Runtime's benchmark compares against: one call_tool round trip."""
    async with running(everything_stdio) as server:
        for _ in range(20):
            await server.call_tool("echo", {"message": "warm"}, timeout_s=TIMEOUT_S)
        times = []
        for _ in range(200):
            start = time.perf_counter()
            await server.call_tool("echo", {"message": "ping"}, timeout_s=TIMEOUT_S)
            times.append(time.perf_counter() - start)
    p50 = statistics.median(times) * 1000
    p99 = sorted(times)[197] * 1000
    with capsys.disabled():
        print(f"\nMCP echo over stdio: p50 {p50:.3f} ms, p99 {p99:.3f} ms (200 calls)")
    assert p50 < 50


async def test_an_answer_over_the_limits_is_refused(everything: ServerConfig) -> None:
    limits = dataclasses.replace(FAST, max_message_bytes=1_000_000, max_result_bytes=500_000)
    async with running(everything, limits=limits) as server:
        for size, says in (
            (600_000, "the result has"),
            (2_000_000, "the answer is over the limit of 1000000"),
        ):
            with pytest.raises(McpCallError) as caught:
                await server.call_tool("echo", {"message": "x" * size}, timeout_s=TIMEOUT_S)
            assert (
                caught.value.code is ErrorCode.MCP_RESULT_TOO_LARGE and says in caught.value.message
            )
        assert server.starts == 1
        assert (
            _text(await server.call_tool("echo", {"message": "small"}, timeout_s=TIMEOUT_S))
            == "Echo: small"
        )


async def test_an_http_server_that_goes_away_is_reconnected_when_it_comes_back(
    http_everything: HttpEverything,
) -> None:
    limits = dataclasses.replace(FAST, backoff_base_s=0.5, backoff_cap_s=1.0, max_quick_failures=30)
    async with running(http_everything.config, limits=limits) as server:
        http_everything.stop(kill=True)
        with pytest.raises(McpCallError) as caught:
            await server.call_tool("echo", {"message": "gone"}, timeout_s=TIMEOUT_S)
        assert caught.value.code is ErrorCode.MCP_SERVER_UNAVAILABLE
        await server.wait_for(McpState.RESTARTING, timeout_s=TIMEOUT_S)
        http_everything.start()
        await server.wait_for(McpState.READY, timeout_s=30)
        assert server.starts >= 2
        assert (
            _text(await server.call_tool("echo", {"message": "back"}, timeout_s=TIMEOUT_S))
            == "Echo: back"
        )
        # Restarted between two calls: the new process does not know our session.
        http_everything.stop(kill=True)
        http_everything.start()
        starts = server.starts
        with pytest.raises(McpCallError) as caught:
            await server.call_tool("echo", {"message": "stale"}, timeout_s=TIMEOUT_S)
        assert caught.value.code is ErrorCode.MCP_SERVER_UNAVAILABLE
        assert (
            caught.value.message == "MCP server everything: the server no longer knows our session"
        )
        await server.wait_for_change(
            lambda s: s.starts > starts and s.state is McpState.READY, timeout_s=30
        )
        echoed = await server.call_tool("echo", {"message": "anew"}, timeout_s=TIMEOUT_S)
        assert _text(echoed) == "Echo: anew"
