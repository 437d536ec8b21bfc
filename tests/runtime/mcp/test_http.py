"""Streamable HTTP specifics, against the fault server served over HTTP: the configured
headers reach the server, and a JSON (not SSE) answer over the limit is refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp import McpCallError

from .conftest import FAST, fault_over_http, running


async def test_the_configured_headers_reach_the_server(tmp_path: Path) -> None:
    with fault_over_http(tmp_path, authorization="Bearer t0ken", x_team="blue") as config:
        async with running(config) as server:
            result = await server.call_tool("headers", {}, timeout_s=10)
    seen = json.loads(result.content[0]["text"])
    assert seen == {"authorization": "Bearer t0ken", "x-team": "blue"}


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_an_http_answer_over_the_limit_is_refused(
    tmp_path: Path, json_response: bool
) -> None:
    limits = dataclasses.replace(FAST, max_result_bytes=200_000, max_message_bytes=1_000_000)
    with fault_over_http(tmp_path, json_response=json_response) as config:
        async with running(config, limits=limits) as server:
            for size in (300_000, 3_000_000):
                with pytest.raises(McpCallError) as caught:
                    await server.call_tool("big", {"n": size}, timeout_s=10)
                assert caught.value.code is ErrorCode.MCP_RESULT_TOO_LARGE, caught.value.message
            echoed = await server.call_tool("echo", {"text": "fine"}, timeout_s=10)
    assert echoed.content[0]["text"] == "fine"
