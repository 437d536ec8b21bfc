"""An MCP server that misbehaves on request, run as a real child over stdio.

Written with the ``mcp`` server SDK (lowlevel ``Server``), so what is right on the
wire is the SDK's and what is wrong is ours on purpose. ``FAULT_MODE`` picks how it
starts (``normal``; ``exit``: exits at once; ``silent``: never answers initialize;
``lie``: lists tools with bad schemas and names; ``slowlist``: never answers
``tools/list``; ``stubborn``: ignores stdin closing
and SIGTERM). Its tools misbehave when called: ``crash``, ``hang``, ``slow`` (with
progress), ``garbage``, ``flood``, ``logs``, ``big``, ``change_tools``, and
``ask_sampling`` / ``ask_roots`` (it asks us, and answers with the error code it got).
It writes what it saw (started, cancelled) to the file named by ``FAULT_RECORD``, one line each.

Run: ``python fault_server.py`` (stdio), or with ``FAULT_HTTP_PORT`` set: streamable
HTTP on that loopback port (``FAULT_HTTP_JSON=1``: JSON answers instead of SSE).
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

MODE = os.environ.get("FAULT_MODE", "normal")
RECORD = os.environ.get("FAULT_RECORD")
WIRE = os.dup(1)  # the real stdout, kept before the SDK points fd 1 at stderr
added_tool = False
cancelled = anyio.Event()
cancelled_names: list[str] = []


def record(line: str) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as file:
            file.write(line + "\n")


def _tool(name: str, schema: dict[str, Any] | None = None, **extra: Any) -> types.Tool:
    return types.Tool(
        name=name,
        description=f"the {name} fault",
        input_schema=schema or {"type": "object", "properties": {}},
        **extra,
    )


def _tools() -> list[types.Tool]:
    number = {"type": "object", "properties": {"n": {"type": "number"}}}
    tools = [
        _tool(
            "echo",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        _tool("crash"),
        _tool("hang"),
        _tool("slow", number),
        _tool("garbage"),
        _tool("flood", number),
        _tool("logs", number),
        _tool("big", number),
        _tool("change_tools"),
        _tool("ask_sampling"),
        _tool("ask_roots"),
        _tool("cancellations", number),
        _tool("capabilities"),
        _tool("stderr", number),
        _tool("env"),
        _tool("headers"),
        _tool("view", _meta={"ui": {"resourceUri": "ui://fault/view", "visibility": ["app"]}}),
    ]
    if added_tool:
        tools.append(_tool("added"))
    return tools


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tools = _tools()
    if MODE == "slowlist":
        await anyio.sleep_forever()
    if MODE == "lie":
        # The SDK checks what it sends; _LyingStdout makes these lies on the wire.
        tools.append(_tool("string_schema", {"type": "object", "properties": {}, "lie": "string"}))
        tools.append(_tool("list_schema", {"type": "object", "properties": {}, "lie": "list"}))
        tools.append(
            _tool("bad_output", output_schema={"type": "object", "properties": {}, "lie": "array"})
        )
        tools.append(_tool("bad name!"))
    return types.ListToolsResult(tools=tools)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    global added_tool
    name, args = params.name, params.arguments or {}
    record(f"started {name}")
    try:
        if name == "echo":
            return _text(str(args.get("text")))
        if name == "crash":
            os._exit(7)
        if name == "hang":
            await anyio.sleep_forever()
        if name == "slow":
            steps = int(args.get("n", 5))
            for step in range(steps):
                await ctx.session.report_progress(step, steps, f"step {step}")
                await anyio.sleep(0.2)
            return _text("slow done")
        if name == "garbage":
            os.write(WIRE, b"this is not JSON-RPC\n")
            await anyio.sleep_forever()
        if name == "flood":
            count = int(args.get("n", 10000))
            for step in range(count):
                await ctx.session.report_progress(step, count)
            return _text(f"flooded {count}")
        if name == "logs":
            count = int(args.get("n", 100))
            for step in range(count):
                await ctx.session.send_log_message("info", f"log {step}", logger="fault")
            return _text(f"logged {count}")
        if name == "big":
            return _text("x" * int(args.get("n", 10_000_000)))
        if name == "change_tools":
            added_tool = True
            await ctx.session.send_tool_list_changed()
            await anyio.sleep(0.3)
            return _text("changed")
        if name in ("ask_sampling", "ask_roots"):
            try:
                if name == "ask_roots":
                    await ctx.session.list_roots()
                else:
                    message = types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text="hi")
                    )
                    await ctx.session.create_message(messages=[message], max_tokens=5)
            except MCPError as exc:
                return _text(f"error {exc.error.code}")
            return _text("answered")
        if name == "stderr":
            for step in range(int(args.get("n", 1000))):
                print(f"stderr line {step} " + "y" * 500, file=sys.stderr)
            sys.stderr.flush()
            return _text("written")
        if name == "headers":
            request = ctx.request
            seen = dict(request.headers) if request is not None else {}  # type: ignore[attr-defined]
            wanted = {k: v for k, v in seen.items() if k in ("authorization", "x-team")}
            return _text(json.dumps(wanted, sort_keys=True))
        if name == "env":
            return _text(",".join(sorted(os.environ)))
        if name == "capabilities":
            declared = ctx.session.client_capabilities
            assert declared is not None
            return _text(declared.model_dump_json(by_alias=True, exclude_none=True))
        if name == "cancellations":
            # Waits (bounded) until a call of ours was cancelled, and says which.
            with anyio.move_on_after(float(args.get("n", 5))):
                await cancelled.wait()
            return _text(",".join(cancelled_names) or "none")
        if name == "added":
            return _text("added here")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="Unknown tool")], is_error=True
        )
    except anyio.get_cancelled_exc_class():
        record(f"cancelled {name}")
        cancelled_names.append(name)
        cancelled.set()
        raise


async def list_resources(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def read_resource(
    ctx: ServerRequestContext, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    size = int(os.environ.get("FAULT_VIEW_BYTES", "200"))
    html = "<!doctype html><title>view</title>" + "<p>x</p>" * (size // 8)
    meta = {"ui": {"csp": {"connectDomains": ["https://api.example.test"]}, "prefersBorder": True}}
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=uri, mime_type="text/html;profile=mcp-app", text=html, _meta=meta
            )
        ]
    )


server: Server[Any] = Server(
    "fault-server",
    version="1.2.3",
    instructions="misbehaves on request",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)


class _LyingStdout(io.TextIOBase):
    """stdout with the lies of ``lie`` mode written in."""

    LIES = {
        '{"properties":{},"type":"object","lie":"string"}': '{"type":"string"}',
        '{"properties":{},"type":"object","lie":"list"}': '["type","object"]',
        '{"properties":{},"type":"object","lie":"array"}': '{"type":"array"}',
    }

    def __init__(self) -> None:
        self._out = open(WIRE, "w", encoding="utf-8", closefd=False)  # noqa: SIM115

    def write(self, text: str) -> int:
        for truth, lie in self.LIES.items():
            text = text.replace(truth, lie)
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()


async def serve_http(port: int) -> None:
    """Streamable HTTP on a loopback port (uvicorn says when it listens, on stderr)."""
    import uvicorn

    json_response = os.environ.get("FAULT_HTTP_JSON") == "1"
    app = server.streamable_http_app(json_response=json_response)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info", lifespan="on")
    await uvicorn.Server(config).serve()


async def main() -> None:
    record(f"pid {os.getpid()}")
    if os.environ.get("FAULT_HTTP_PORT"):
        await serve_http(int(os.environ["FAULT_HTTP_PORT"]))
        return
    if MODE == "exit":
        print("fault server: exiting at once", file=sys.stderr)
        sys.exit(3)
    if MODE == "silent":
        print("fault server: will never answer", file=sys.stderr)
        await anyio.sleep_forever()
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stdout = anyio.wrap_file(_LyingStdout()) if MODE == "lie" else None
    async with stdio_server(stdout=stdout) as (read, write):
        await server.run(read, write, server.create_initialization_options())
    if MODE == "stubborn":
        record("stdin closed, staying")
        signal.pause()  # until SIGKILL


if __name__ == "__main__":
    anyio.run(main)
