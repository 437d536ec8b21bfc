"""MCP tool call latency: agent ``tool.call`` -> LineUp -> MCP server -> ``tool.result``.

Issue 24's benchmark. Real parts only, each in its own process as deployed: the
AppServer (``lineup server``, SQLite, ``synchronous=FULL``), the person's Runtime
(logged in, ``server-everything`` from npm configured as its stdio child, the
server's policy ``allow``; a child process of this script, ``--runtime-child``),
and this script, which is the agent (``lineup.agent.Agent``). Every hop is durable:
the AppServer stores the call and the result, the Runtime stores the call row and
queues the result in its outbox before sending it.

Figures, each call waiting for the previous one, in rounds that alternate the paths
so that the machine's drift falls on all of them alike:

1. **LineUp + MCP**: ``conversation.call_tool("mcp-everything.echo", {...})`` to its
   ``await`` returning the result: agent -> AppServer -> Runtime (route transaction,
   call row) -> MCP server -> Runtime (result transaction, outbox) -> AppServer ->
   agent.
2. **reference: our connection layer**: ``McpServer(config).call_tool("echo", ...)``
   in this process, on its own ``server-everything`` child: the MCP part alone.
3. **reference: the plain SDK**: ``mcp.ClientSession.call_tool`` over
   ``stdio_client``, on a third child: what the SDK itself costs.
4. **LineUp alone (no MCP)**: the same ``tool.call`` with arguments the input schema
   refuses (no ``message``): the same hops to and from the Runtime, one Runtime
   transaction (the call id spent and the rejected ``tool.result`` queued) and no
   forward. No other benchmark here times an agent -> Runtime -> agent round trip
   without a browser, so this one is measured in the same run.

The goal: LineUp adds <= 5 ms p50 with every hop durable, where "added" is
(1) - (2). Unless ``--no-breakdown``, the Runtime child wraps a few of its own steps
(``Marks``: one clock read each) and notes, on the monotonic clock all processes
share, when each call's frame arrived, was forwarded, answered, checked and queued
as a result, and when the AppServer acknowledged it; with the agent's own send and
return times that splits each LineUp call into consecutive stretches (medians
printed), and it counts the Runtime's write transactions per call, by name.
``--gap-ms`` paces the calls (a pause before each); back to back is the default,
since a pause lets every process fall idle and every path, the plain SDK's too,
then pays the wake-ups.

TODO (issue 24, second figure): "tool call -> the view's first paint with its
result" is not measured yet. It needs MCP Apps views mounted in the shell
(the view bridge exists standalone, it is not integrated into the shell's surfaces
yet); no figure is printed for it until it can be measured for real.

    .venv/bin/python benchmarks/mcp.py [--calls 500] [--warmup 50] [--rounds 10]
        [--gap-ms 0] [--no-breakdown] [--json F] [--keep]

Exit status: 0 when every call completed with the expected answer, 2 when the run
could not complete. Missing the goal is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
HERE = SCRIPT.parent
ROOT = HERE.parent
# This file is named mcp.py: with its folder first on the path, ``import mcp`` (the SDK,
# also inside the Runtime) would import this script again. The helpers it shares with
# the other benchmarks are imported through the repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

from benchmarks.roundtrip.samples import summary  # noqa: E402
from tests.support.npm import EVERYTHING, npm_package  # noqa: E402

PASSWORD = "bench-password-123"
USER = "bench"
AGENT = "bench-agent"
SERVER = "everything"
ECHO = "mcp-everything.echo"
GOAL_ADDED_P50_MS = 5.0
TIMEOUT_S = 30.0


def step(what: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def process(args: list[str], log: Path, **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **kwargs)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for_line(log: Path, text: str, proc: subprocess.Popen[bytes], what: str) -> None:
    """Until ``text`` is in ``log`` (the child writes it once ready)."""
    deadline = time.monotonic() + 60
    while text not in log.read_text(encoding="utf-8", errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: see {log}")
        time.sleep(0.02)


def wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the AppServer did not start: see {log}")
        time.sleep(0.05)


def everything_command() -> tuple[str, list[str]]:
    package = npm_package(*EVERYTHING, marker="dist/index.js")
    return "node", [str(package / "dist" / "index.js"), "stdio"]


# --- the Runtime, in its own process -------------------------------------------------


class Marks:
    """Moments in the Runtime child, on the monotonic clock every process of this
    machine shares: ``(point, seconds, detail)``, where ``detail`` is the call id or
    an envelope's bytes (decoded after the run, not on the path)."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, str]] = []

    def __call__(self, point: str, detail: str) -> None:
        self.marks.append((point, time.monotonic(), detail))

    def install(self) -> None:
        """Wrap the few Runtime steps a call passes (benchmark instrumentation only:
        one clock read and one list append each)."""
        from lineup.client import Connection
        from lineup.db.sqlite import SQLiteDatabase
        from lineup.runtime import Runtime
        from lineup.runtime.mcp.gateway import McpGateway

        mark = self
        on_frame, start_send, send_envelope = (
            Runtime._on_frame,
            Runtime._start_send,
            Connection.send_envelope,
        )
        forward, check, end = McpGateway._forward, McpGateway._output_problem, McpGateway._end
        submit = SQLiteDatabase.submit

        def counted_submit(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            inner = getattr(fn, "func", fn)  # a functools.partial's function
            mark("write", getattr(inner, "__name__", type(inner).__name__))
            return submit(self, fn, *args, **kwargs)

        async def timed_frame(self: Any, frame: Any) -> None:
            raw = getattr(frame, "envelope", None)
            if raw is not None:
                mark("frame", bytes(raw).decode())
            await on_frame(self, frame)

        def timed_start_send(self: Any, item: Any) -> None:
            mark("outbox", item.body.decode())
            start_send(self, item)

        async def timed_send(self: Any, envelope_id: str, envelope: bytes) -> Any:
            ack = await send_envelope(self, envelope_id, envelope)
            mark("acked", envelope_id)
            return ack

        async def timed_forward(self: Any, call: Any) -> None:
            mark("forward", call.call_id)
            await forward(self, call)

        async def timed_check(self: Any, call: Any, result: Any) -> bool:
            mark("answered", call.call_id)
            problem = await check(self, call, result)
            mark("checked", call.call_id)
            return problem

        async def timed_end(self: Any, call: Any, *args: Any, **kwargs: Any) -> None:
            await end(self, call, *args, **kwargs)
            mark("ended", call.call_id)

        Runtime._on_frame = timed_frame  # type: ignore[method-assign]
        Runtime._start_send = timed_start_send  # type: ignore[method-assign]
        Connection.send_envelope = timed_send  # type: ignore[method-assign]
        McpGateway._forward = timed_forward  # type: ignore[method-assign]
        McpGateway._output_problem = timed_check  # type: ignore[method-assign]
        McpGateway._end = timed_end  # type: ignore[method-assign]
        SQLiteDatabase.submit = counted_submit  # type: ignore[method-assign]


async def runtime_child(
    data_dir: Path, config_path: Path, server_url: str, marks_path: Path | None
) -> None:
    """The person's Runtime: logged in, the conversation with the agent open, the
    MCP server configured and allowed; until SIGTERM. With ``marks_path``, it notes
    when each call reached it, was forwarded and answered, and when each result was
    queued and acknowledged (``Marks``), and writes the marks there on exit."""
    from lineup.host.serve import conversation_id_for
    from lineup.host.views import DEFAULT_TITLE
    from lineup.runtime import Runtime
    from lineup.runtime.mcp.config import load_config

    marks = Marks()
    if marks_path is not None:
        marks.install()
    runtime = Runtime(data_dir, mcp_servers=load_config(config_path))
    await runtime.open()
    session = await runtime.login(server_url, USER, PASSWORD)
    await runtime.open_conversation(
        AGENT, conversation_id=conversation_id_for(session.user_id, AGENT), title=DEFAULT_TITLE
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    run = asyncio.create_task(runtime.run())
    await asyncio.wait_for(runtime.ready.wait(), TIMEOUT_S)
    await runtime.mcp.set_policy(SERVER, "allow")
    print("RUNTIME READY", flush=True)
    await stop.wait()
    await runtime.stop()
    await asyncio.wait_for(run, 15)
    await runtime.close()
    if marks_path is not None:
        await asyncio.to_thread(marks_path.write_text, json.dumps(marks.marks), "utf-8")


# --- the calls -----------------------------------------------------------------------

Call = Callable[[str], Awaitable[None]]


def echo_text(result: Any) -> str:
    content = result["content"] if isinstance(result, dict) else result
    return "".join(
        (p.get("text", "") if isinstance(p, dict) else getattr(p, "text", ""))
        for p in content
        if (p.get("type") if isinstance(p, dict) else getattr(p, "type", None)) == "text"
    )


def expect_echo(result: Any, message: str) -> None:
    if echo_text(result) != f"Echo: {message}":
        raise RuntimeError(f"unexpected echo answer: {echo_text(result)[:80]!r}")


async def measure(
    call: Call, tags: Sequence[str], clocks: dict[str, tuple[float, float]], gap_s: float = 0.0
) -> list[float]:
    """Each call in turn, in ms; ``clocks`` gets each one's monotonic start and end.
    ``gap_s``: a pause after each call (pacing, so that what a call leaves behind in
    the Runtime after its result is out does not overlap the next call)."""
    samples = []
    for tag in tags:
        if gap_s:
            await asyncio.sleep(gap_s)
        sent = time.monotonic()
        start = time.perf_counter()
        await call(tag)
        samples.append((time.perf_counter() - start) * 1000)
        clocks[tag] = (sent, time.monotonic())
    return samples


async def stopped(agent: Any, task: asyncio.Task[None]) -> None:
    await agent.stop()
    await asyncio.wait_for(task, TIMEOUT_S)


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from lineup.agent import Agent, Conversation, MemoryCursorStore, ToolCallError
    from lineup.runtime.mcp import McpServer, McpState, ServerConfig
    from lineup.server import admin

    command, command_args = everything_command()
    config_path = work / "mcp.json"
    config_path.write_text(
        json.dumps({"mcpServers": {SERVER: {"command": command, "args": command_args}}}),
        encoding="utf-8",
    )
    server_dir = work / "server"
    await admin.add_user(server_dir, USER, PASSWORD)
    key = await admin.add_agent(server_dir, AGENT, AGENT)
    port = free_port()
    server_url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_STATE_HOME": str(work / "state")}
    lineup = [sys.executable, "-m", "lineup"]
    server_cmd = [*lineup, "server", "--data-dir", str(server_dir), "--port", str(port)]
    marks_path = work / "marks.json" if args.breakdown else None
    child_cmd = [
        sys.executable,
        str(SCRIPT),
        "--runtime-child",
        str(work / "runtime"),
        str(config_path),
        server_url,
        str(marks_path or ""),
    ]
    samples: dict[str, list[float]] = {}
    clocks: dict[str, tuple[float, float]] = {}
    with process(server_cmd, work / "server.log", env=env) as server:
        wait_until_ready(server_url, server, work / "server.log")
        with process(child_cmd, work / "runtime.log", env=env) as child:
            wait_for_line(work / "runtime.log", "RUNTIME READY", child, "the Runtime")
            step("the Runtime is up, its MCP server allowed")
            async with contextlib.AsyncExitStack() as stack:
                agent = Agent(server_url, key, cursor_store=MemoryCursorStore())
                opened: asyncio.Future[Conversation] = asyncio.get_running_loop().create_future()
                inventory = asyncio.Event()

                @agent.on_conversation
                async def first(conversation: Conversation) -> None:
                    if not opened.done():
                        opened.set_result(conversation)

                @agent.on_event("lineup.v1.client.inventory", concurrent=True)
                async def heard(conversation: Conversation, envelope: Any) -> None:
                    inventory.set()

                agent_task = asyncio.create_task(agent.run())
                stack.push_async_callback(stopped, agent, agent_task)
                conversation = await asyncio.wait_for(opened, TIMEOUT_S)
                async with asyncio.timeout(TIMEOUT_S):  # the tool comes once the server is ready
                    while True:
                        inventory.clear()
                        if any(t.id == ECHO for t in (await conversation.latest_inventory()).tools):
                            break
                        await inventory.wait()
                step("the agent sees the MCP tool")

                async def lineup_mcp(tag: str) -> None:
                    result = await conversation.call_tool(ECHO, {"message": tag}, call_id=tag)
                    expect_echo(result, tag)

                async def lineup_refused(tag: str) -> None:
                    try:
                        await conversation.call_tool(ECHO, {"nope": tag}, call_id=tag)
                    except ToolCallError:
                        return
                    raise RuntimeError("a call without its required argument was not refused")

                direct = McpServer(
                    ServerConfig(
                        name=SERVER,
                        key=SERVER,
                        transport="stdio",
                        command=command,
                        args=tuple(command_args),
                    )
                )
                stack.push_async_callback(direct.stop)
                await direct.start()
                if await direct.wait_for(
                    McpState.READY, McpState.FAILED, timeout_s=TIMEOUT_S
                ) is not (McpState.READY):
                    raise RuntimeError(f"the direct MCP server failed: {direct.reason}")

                async def connection_layer(tag: str) -> None:
                    result = await direct.call_tool("echo", {"message": tag}, timeout_s=TIMEOUT_S)
                    expect_echo(result.content, tag)

                params = StdioServerParameters(command=command, args=command_args)
                with (work / "sdk-server.stderr").open("w") as errlog:
                    async with (
                        stdio_client(params, errlog=errlog) as (read, write),
                        ClientSession(read, write) as session,
                    ):
                        await session.initialize()

                        async def plain_sdk(tag: str) -> None:
                            result = await session.call_tool("echo", {"message": tag})
                            expect_echo(result.content, tag)

                        paths: dict[str, Call] = {
                            "lineup_mcp": lineup_mcp,
                            "connection_layer": connection_layer,
                            "plain_sdk": plain_sdk,
                            "lineup_refused": lineup_refused,
                        }
                        step(f"warm-up: {args.warmup} calls of each")
                        for name, call in paths.items():
                            await measure(call, [f"w-{name}-{n}" for n in range(args.warmup)], {})
                        step(f"measuring: {args.calls} calls of each, in {args.rounds} rounds")
                        per_round = max(1, args.calls // args.rounds)
                        samples = {name: [] for name in paths}
                        for r in range(args.rounds):
                            for name, call in paths.items():
                                tags = [f"m-{name}-{r}-{n}" for n in range(per_round)]
                                samples[name] += await measure(
                                    call, tags, clocks, args.gap_ms / 1000
                                )
    marks = json.loads(marks_path.read_text(encoding="utf-8")) if marks_path else []
    return {"samples": samples, "breakdown": breakdown(marks, clocks)}


# --- where the time goes ---------------------------------------------------------------


STRETCHES = {
    "lineup_mcp": [
        ("agent send -> AppServer -> the Runtime reads the frame", "sent", "frame"),
        ("Runtime: receive + route transaction (the call row)", "frame", "forward"),
        ("MCP: the call on the connection (server-everything)", "forward", "answered"),
        ("Runtime: output schema check", "answered", "checked"),
        ("Runtime: result transaction (outbox row)", "checked", "outbox"),
        ("result out -> AppServer -> the agent's await returns", "outbox", "returned"),
    ],
    "lineup_refused": [
        ("agent send -> AppServer -> the Runtime reads the frame", "sent", "frame"),
        ("Runtime: receive + route transaction (refusal queued)", "frame", "outbox"),
        ("result out -> AppServer -> the agent's await returns", "outbox", "returned"),
    ],
}
"""The consecutive stretches of one call, each between two points (``Marks``)."""


def breakdown(
    marks: list[list[Any]], clocks: dict[str, tuple[float, float]]
) -> dict[str, dict[str, list[float]]]:
    """Per measured LineUp call, the stretches of ``STRETCHES`` in ms, from the
    Runtime child's marks and the agent's own send and return times (``clocks``)."""
    points: dict[str, dict[str, float]] = {}
    envelope_of: dict[str, str] = {}  # result envelope id -> call id
    writes = sorted((at, detail) for point, at, detail in marks if point == "write")
    for point, at, detail in marks:
        if point == "write":
            continue
        tag = detail
        if point in ("frame", "outbox"):
            try:
                envelope = json.loads(detail)
            except ValueError:
                continue
            tag = (envelope.get("payload") or {}).get("call_id") or ""
            envelope_of[envelope.get("id", "")] = tag
        elif point == "acked":
            tag = envelope_of.get(detail, "")
        points.setdefault(tag, {}).setdefault(point, at)  # the first of each
    out: dict[str, dict[str, list[float]]] = {}
    ordered = sorted(clocks.items(), key=lambda item: item[1][0])
    for n, (tag, (sent, returned)) in enumerate(ordered):
        path = tag.split("-")[1] if tag.startswith("m-") else ""
        if path not in STRETCHES:
            continue
        seen = {**points.get(tag, {}), "sent": sent, "returned": returned}
        if not all(a in seen and b in seen for _, a, b in STRETCHES[path]):
            continue
        into = out.setdefault(path, {})
        for name, a, b in STRETCHES[path]:
            into.setdefault(name, []).append((seen[b] - seen[a]) * 1000)
        if "acked" in seen:
            into.setdefault("(result out -> AppServer ack at the Runtime)", []).append(
                (seen["acked"] - seen["outbox"]) * 1000
            )
        # The Runtime's write transactions from this call's send to the next call's.
        until = ordered[n + 1][1][0] if n + 1 < len(ordered) else float("inf")
        mine = [name for at, name in writes if sent <= at < until]
        into.setdefault("#writes", []).append(float(len(mine)))
        names = out.setdefault(f"#names:{path}", {})
        for name in mine:
            names.setdefault(name, []).append(1.0)
    return out


# --- report ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    import platform

    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break

    def output(*command: str) -> str:
        return subprocess.run(
            list(command), capture_output=True, text=True, timeout=30, check=False
        ).stdout.strip()

    return {
        "cpus": os.cpu_count(),
        "model": model,
        "python": platform.python_version(),
        "node": output("node", "--version"),
        "everything": f"{EVERYTHING[0]}@{EVERYTHING[1]}",
        "lineup_commit": output("git", "-C", str(ROOT), "describe", "--always", "--dirty"),
        "load_average_1m": os.getloadavg()[0],
    }


def report(result: dict[str, Any], info: dict[str, Any]) -> bool:
    rows = [
        ("LineUp + MCP: agent tool.call -> tool.result", "lineup_mcp"),
        ("reference: McpServer.call_tool (our layer)", "connection_layer"),
        ("reference: mcp.ClientSession.call_tool", "plain_sdk"),
        ("LineUp alone: the call refused by its schema", "lineup_refused"),
    ]
    samples = result["samples"]
    count = len(samples["lineup_mcp"])
    print(f"\nMCP tool call latency, server-everything echo, {count} calls each (ms)")
    print(f"  {'':48} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6} {'mean':>6}")
    stats = {}
    for title, name in rows:
        s = summary(samples[name])
        stats[name] = s
        print(
            f"  {title:48} {s['p50']:6.2f} {s['p90']:6.2f} {s['p99']:6.2f}"
            f" {s['max']:6.2f} {s['mean']:6.2f}"
        )
    added = stats["lineup_mcp"]["p50"] - stats["connection_layer"]["p50"]
    layer = stats["connection_layer"]["p50"] - stats["plain_sdk"]["p50"]
    beyond = stats["lineup_mcp"]["p50"] - stats["lineup_refused"]["p50"]
    print(f"\n  added by LineUp, p50 (LineUp + MCP - our layer):   {added:6.2f} ms")
    print(f"  our layer over the plain SDK, p50:                 {layer:6.2f} ms")
    print(f"  LineUp + MCP over LineUp alone, p50:               {beyond:6.2f} ms")
    for path, title in (("lineup_mcp", "LineUp + MCP"), ("lineup_refused", "LineUp alone")):
        stretches = dict(result["breakdown"].get(path) or {})
        if not stretches:
            continue
        writes = stretches.pop("#writes", [])
        print(f"\n  where a {title} call's time goes (ms, one clock for every process):")
        print(f"    {'':56} {'p50':>6} {'mean':>6}")
        for name, values in stretches.items():
            s = summary(values)
            print(f"    {name:56} {s['p50']:6.2f} {s['mean']:6.2f}")
        names = result["breakdown"].get(f"#names:{path}") or {}
        calls = len(writes) or 1
        each = ", ".join(f"{name} {len(v) / calls:.1f}" for name, v in names.items())
        print(f"    Runtime write transactions per call: {summary(writes)['mean']:.1f} ({each})")
    met = added <= GOAL_ADDED_P50_MS
    print(
        f"\n  goal: LineUp adds <= {GOAL_ADDED_P50_MS:.0f} ms p50 with every hop durable:"
        f" {'met' if met else 'NOT met'} ({added:.2f} ms)"
    )
    print("  not measured yet: tool call -> the view's first paint (MCP Apps views are not")
    print("  mounted in the shell yet)")
    print(
        f"\n  machine: {info['cpus']} CPUs ({info['model']}), Python {info['python']},"
        f" Node {info['node']}, {info['everything']}; LineUp {info['lineup_commit']};"
        f" load average before {info['load_average_1m']:.2f}"
    )
    return met


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="measured calls of each path")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls of each path")
    parser.add_argument("--rounds", type=int, default=10, help="rounds alternating the paths")
    parser.add_argument(
        "--gap-ms",
        type=float,
        default=0.0,
        help="pause before each measured call [0: back to back]",
    )
    parser.add_argument(
        "--no-breakdown", dest="breakdown", action="store_false", help="no Runtime marks"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--runtime-child", nargs=4, metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.runtime_child:
        data_dir, config, server_url, marks = args.runtime_child
        asyncio.run(
            runtime_child(Path(data_dir), Path(config), server_url, Path(marks) if marks else None)
        )
        return 0
    info = machine()
    work = Path(tempfile.mkdtemp(prefix="lineup-mcp-bench-"))
    try:
        result = asyncio.run(bench(args, work))
    except Exception as exc:  # report, with the logs, and fail
        print(f"the benchmark could not complete: {exc!r}; logs in {work}", file=sys.stderr)
        return 2
    report(result, info)
    if args.json:
        args.json.write_text(json.dumps({"info": info, **result}, indent=2), encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
