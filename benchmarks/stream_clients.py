"""Streaming clients for ``appserver_ingest.py`` (one process; started by the benchmark).

Two modes, both bare asyncio protocols on uvloop (like ``ws_loader.py``), so that the
client costs little next to the server:

``latency``
    One user stream on ``--receive-port`` subscribed to the ``--conversation``
    list, and one agent connection on ``--send-port``. After ``go`` on stdin, the
    agent sends ``--rate`` envelopes per second for ``--duration`` seconds, round
    robin over the conversations (paced by the event loop's clock, pipelined: it
    never waits for acks). Each envelope is timed from
    the write of its frame to the moment the user stream reads it
    (``time.monotonic``, one clock). Output: one JSON line (counts, lateness of the
    sender, CPU) and the latencies in seconds as raw doubles in ``--out``.

``hold``
    ``--connections`` user streams on ``--receive-port``, all subscribed to
    ``--conversation`` (one user, one token, many connections). Prints ``ready``
    once every stream has its ``synced`` frame, then records when each stream
    reads each envelope. Whenever every stream has read an envelope it prints
    ``got SEQ``. On ``report`` it writes the arrival times (``--out``: raw doubles,
    one row of ``--connections`` per envelope seen, NaN where a stream missed it),
    prints one JSON line, closes every stream and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import json
import math
import os
import resource
import struct
import sys
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ws_loader import envelope_body, masked_frame, split_frames

try:
    import uvloop
except ImportError:  # pragma: no cover - the venv has it
    uvloop = None  # type: ignore[assignment]


class _Inner(msgspec.Struct):
    id: str


class _Frame(msgspec.Struct):
    op: str
    conversation_id: str = ""
    seq: int = 0
    envelope: _Inner | None = None
    acks: list[dict[str, Any]] = []
    error: dict[str, Any] | None = None


_decode_frame = msgspec.json.Decoder(_Frame).decode


class Stream(asyncio.Protocol):
    """One WebSocket client connection; ``on_text(payload, now)`` per text frame."""

    def __init__(self, host: str, port: int, secret: str, on_text: Callable[[bytes, float], None]):
        self.host = host
        self.port = port
        self.secret = secret
        self.on_text = on_text
        self.transport: Any = None
        self.buffer = bytearray()
        self.upgraded = False
        self.closed_by_server: str | None = None
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        nonce = base64.b64encode(os.urandom(16)).decode()
        self.transport.write(
            (
                f"GET /v1/stream HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
                f"Authorization: Bearer {self.secret}\r\n\r\n"
            ).encode()
        )

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(f"closed during the handshake: {exc}"))
        if self.closed_by_server is None:
            self.closed_by_server = f"connection lost: {exc}"

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.upgraded:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.buffer[: self.buffer.find(b"\r\n")])
            del self.buffer[: end + 4]
            if not status.startswith(b"HTTP/1.1 101"):
                self.opened.set_exception(ConnectionError(status.decode(errors="replace")))
                self.transport.close()
                return
            self.upgraded = True
            self.opened.set_result(None)
        self._read_frames()

    def _read_frames(self) -> None:
        buf = self.buffer
        now = time.monotonic()
        frames, pos = split_frames(buf)
        for opcode, payload in frames:
            if opcode == 0x1:
                self.on_text(payload, now)
            elif opcode == 0x9:
                self.transport.write(masked_frame(payload, 0xA))
            elif opcode == 0x8:
                self.closed_by_server = f"server closed the connection: {payload[2:]!r}"
                self.transport.close()
        del buf[:pos]

    def send(self, frame: bytes) -> None:
        self.transport.write(frame)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(masked_frame(struct.pack("!H", 1000), 0x8))
            self.transport.close()


async def open_stream(
    host: str, port: int, secret: str, on_text: Callable[[bytes, float], None]
) -> Stream:
    loop = asyncio.get_running_loop()
    stream = Stream(host, port, secret, on_text)
    await loop.create_connection(functools.partial(lambda s: s, stream), host, port)
    await asyncio.wait_for(stream.opened, 30)
    return stream


def subscribe_frame(conversations: list[str], since: int) -> bytes:
    cursors = dict.fromkeys(conversations, since)
    return masked_frame(json.dumps({"op": "subscribe", "cursors": cursors}).encode())


# --- latency ---------------------------------------------------------------------------------


async def run_latency(args: argparse.Namespace, output: array[float]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    total = int(args.rate * args.duration)
    conversations = args.conversation.split(",")
    ids = [f"lat-{args.tag}-{i}" for i in range(total)]
    index_of = {envelope_id: i for i, envelope_id in enumerate(ids)}
    frames = [
        masked_frame(
            b'{"op":"send","envelope":'
            + envelope_body(conversations[i % len(conversations)], envelope_id, args.agent)
            + b"}"
        )
        for i, envelope_id in enumerate(ids)
    ]
    sent_at = array("d", [math.nan]) * total
    received_at = array("d", [math.nan]) * total
    counts = {"received": 0, "duplicates": 0, "out_of_order": 0, "acked": 0, "errors": 0}
    problems: list[str] = []
    synced = loop.create_future()
    all_in = loop.create_future()
    last_seq: dict[str, int] = {}

    def on_user_text(payload: bytes, now: float) -> None:
        frame = _decode_frame(payload)
        if frame.op == "synced":
            if not synced.done():
                synced.set_result(None)
        elif frame.op == "envelope" and frame.envelope is not None:
            if frame.seq <= last_seq.get(frame.conversation_id, 0):
                counts["out_of_order"] += 1
            last_seq[frame.conversation_id] = frame.seq
            index = index_of.get(frame.envelope.id)
            if index is None:
                return
            if not math.isnan(received_at[index]):
                counts["duplicates"] += 1
                return
            received_at[index] = now
            counts["received"] += 1
            if counts["received"] == total and not all_in.done():
                all_in.set_result(None)
        else:
            counts["errors"] += 1
            if len(problems) < 5:
                problems.append(payload[:300].decode(errors="replace"))

    all_acked = asyncio.Event()

    def on_agent_text(payload: bytes, now: float) -> None:
        frame = _decode_frame(payload)
        if frame.op == "acks":
            counts["acked"] += len(frame.acks)
            if counts["acked"] >= total:
                all_acked.set()
        else:
            counts["errors"] += 1
            if len(problems) < 5:
                problems.append(payload[:300].decode(errors="replace"))

    receiver = await open_stream(args.host, args.receive_port, args.user_token, on_user_text)
    receiver.send(subscribe_frame(conversations, args.since))
    await asyncio.wait_for(synced, 30)
    sender = await open_stream(args.host, args.send_port, args.agent_key, on_agent_text)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return {"error": "no go"}
    cpu0 = time.process_time()
    start = time.monotonic() + 0.01
    interval = 1.0 / args.rate
    behind = 0.0
    sent = 0
    while sent < total:
        due = start + sent * interval
        now = time.monotonic()
        if due > now:
            await asyncio.sleep(due - now)
            now = time.monotonic()
        behind = max(behind, now - due)
        # Everything due by now goes out (normally just one frame).
        while sent < total and start + sent * interval <= now:
            sent_at[sent] = time.monotonic()
            sender.send(frames[sent])
            sent += 1
    send_seconds = time.monotonic() - start
    with_timeout = True
    try:
        await asyncio.wait_for(asyncio.shield(all_in), args.drain_timeout)
    except TimeoutError:
        with_timeout = False
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_acked.wait(), 5)
    cpu = time.process_time() - cpu0
    receiver.close()
    sender.close()
    # One value per envelope, in send order; NaN for one never received.
    output.extend(r - s for r, s in zip(received_at, sent_at, strict=True))
    return {
        "sent": sent,
        "send_seconds": send_seconds,
        "rate": sent / send_seconds if send_seconds > 0 else 0.0,
        "max_behind_s": behind,
        "all_received": with_timeout,
        "cpu_seconds": cpu,
        "problems": problems,
        **counts,
    }


# --- hold ------------------------------------------------------------------------------------


async def run_hold(args: argparse.Namespace, output: array[float]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    n = args.connections
    arrivals: dict[int, array[float]] = {}
    seen: dict[int, int] = {}
    synced_count = [0]
    all_synced = loop.create_future()
    problems: list[str] = []
    counts = {"duplicates": 0, "errors": 0}

    def handler(index: int) -> Callable[[bytes, float], None]:
        def on_text(payload: bytes, now: float) -> None:
            frame = _decode_frame(payload)
            if frame.op == "envelope":
                row = arrivals.get(frame.seq)
                if row is None:
                    row = arrivals[frame.seq] = array("d", [math.nan]) * n
                    seen[frame.seq] = 0
                if not math.isnan(row[index]):
                    counts["duplicates"] += 1
                    return
                row[index] = now
                seen[frame.seq] += 1
                if seen[frame.seq] == n:
                    print(f"got {frame.seq}", flush=True)
            elif frame.op == "synced":
                synced_count[0] += 1
                if synced_count[0] == n and not all_synced.done():
                    all_synced.set_result(None)
            else:
                counts["errors"] += 1
                if len(problems) < 5:
                    problems.append(payload[:300].decode(errors="replace"))

        return on_text

    streams: list[Stream] = []
    gate = asyncio.Semaphore(args.concurrency)
    subscribe = subscribe_frame(args.conversation.split(","), args.since)

    async def one(index: int) -> Stream:
        async with gate:
            stream = await open_stream(
                args.host, args.receive_port, args.user_token, handler(index)
            )
            stream.send(subscribe)
            return stream

    started = time.monotonic()
    streams = list(await asyncio.gather(*(one(i) for i in range(n))))
    await asyncio.wait_for(all_synced, 120)
    setup = time.monotonic() - started
    print("ready", flush=True)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = (await reader.readline()).decode().strip()
        if line in ("report", ""):
            break
    lost = sum(1 for s in streams if s.closed_by_server is not None)
    seqs = sorted(arrivals)
    for seq in seqs:
        output.extend(arrivals[seq])
    for stream in streams:
        stream.close()
    await asyncio.sleep(0.2)
    return {
        "connections": n,
        "setup_seconds": setup,
        "seqs": seqs,
        "complete": [seen[s] for s in seqs],
        "lost_connections": lost,
        "problems": problems,
        **counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["latency", "hold"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--receive-port", type=int, required=True)
    parser.add_argument("--send-port", type=int, default=0)
    parser.add_argument("--user-token", required=True)
    parser.add_argument("--agent-key", default="")
    parser.add_argument("--agent", default="", help="the agent id (the envelopes' sender)")
    parser.add_argument("--conversation", required=True, help="comma-separated ids")
    parser.add_argument("--since", type=int, default=0, help="the subscription's cursor")
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--drain-timeout", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100, help="handshakes at once")
    parser.add_argument("--tag", default="0")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, args.connections + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    factory = uvloop.new_event_loop if uvloop is not None else None
    with asyncio.Runner(loop_factory=factory) as runner:
        output = array("d")
        coro = run_latency(args, output) if args.mode == "latency" else run_hold(args, output)
        result = runner.run(coro)
    with open(args.out, "wb") as out:
        output.tofile(out)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
