"""WebSocket load generator for ``appserver_ingest.py`` (one process, many connections).

Started by the benchmark, never by hand. It opens one WebSocket per conversation
to the AppServer's ``/v1/stream``, pre-encodes every client frame (already masked,
with a random key per frame as RFC 6455 asks), prints ``ready`` and waits for a
``go`` line on stdin. Then each connection keeps ``window`` sends in flight: every
ack that comes back lets one more pre-built frame out. Acks arrive as
``{"op":"acks","acks":[...]}`` frames (one per landed commit; a single
``{"op":"ack",...}`` frame, as older servers send, is read too). Each ack is checked
(same id as the oldest send in flight, consecutive ``seq``, not a duplicate) and
timed.

The client is a bare asyncio protocol on uvloop, so that sending costs a
``writelines`` of ready bytes and a frame of acks costs one ``msgspec`` decode: the
loader should measure the server, not itself.

Output: one JSON line on stdout with the counts, the CPU seconds this process used
from ``go`` on, and the monotonic times of the first send and the last ack
(``time.monotonic`` is one clock for all processes on Linux); the ack latencies in
seconds go to ``--latency-out`` as raw doubles.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import json
import os
import random
import struct
import sys
import time
from array import array
from typing import Any

import msgspec

try:
    import uvloop
except ImportError:  # pragma: no cover - the venv has it
    uvloop = None  # type: ignore[assignment]

TEXT = "benchmark envelope: the quick brown fox jumps over the lazy dog"


class _Ack(msgspec.Struct):
    id: str
    conversation_id: str
    seq: int
    duplicate: bool = False


class _Acks(msgspec.Struct):
    acks: list[_Ack]


_acks_decoder = msgspec.json.Decoder(_Acks)
_ack_decoder = msgspec.json.Decoder(_Ack)


def envelope_body(conversation_id: str, envelope_id: str, agent_id: str) -> bytes:
    """The envelope in the AppServer's canonical encoding (sorted keys), so that the
    bytes sent are the bytes stored."""
    return (
        f'{{"conversation_id":"{conversation_id}","created_at":"2026-11-29T00:00:00Z",'
        f'"id":"{envelope_id}","payload":{{"text":"{TEXT}"}},'
        f'"sender":{{"id":"{agent_id}","kind":"agent"}},"type":"lineup.v1.message","v":1}}'
    ).encode()


def split_frames(buf: bytearray) -> tuple[list[tuple[int, bytes]], int]:
    """The complete (unmasked, server-to-client) frames at the start of ``buf`` as
    (opcode, payload), and how many bytes they took."""
    frames: list[tuple[int, bytes]] = []
    size = len(buf)
    pos = 0
    while size - pos >= 2:
        opcode = buf[pos] & 0x0F
        length = buf[pos + 1] & 0x7F
        start = pos + 2
        if length == 126:
            if size - pos < 4:
                break
            length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
            start = pos + 4
        elif length == 127:
            if size - pos < 10:
                break
            length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
            start = pos + 10
        end = start + length
        if end > size:
            break
        frames.append((opcode, bytes(buf[start:end])))
        pos = end
    return frames, pos


def masked_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One complete client frame (FIN set), masked with a fresh random key."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    key = random.randbytes(4)
    stream = (key * (n // 4 + 1))[:n]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(stream, "big")).to_bytes(n, "big")
    return header + key + body


class LoadConnection(asyncio.Protocol):
    def __init__(
        self, host: str, port: int, key: str, frames: list[bytes], ids: list[str], window: int
    ) -> None:
        self.host = host
        self.port = port
        self.key = key
        self.frames = frames
        self.ids = ids
        self.window = window
        self.total = len(frames)
        self.sent = 0
        self.acked = 0
        self.failures = 0
        self.samples: list[str] = []
        self.sent_at = array("d", bytes(8 * self.total))
        self.latencies = array("d")
        self.last_seq = -1
        self.last_ack = 0.0
        self.stopping = False
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport
        self.buffer = bytearray()
        self.upgraded = False
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()

    # --- asyncio protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        nonce = base64.b64encode(os.urandom(16)).decode()
        self.transport.write(
            (
                f"GET /v1/stream HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
                f"Authorization: Bearer {self.key}\r\n\r\n"
            ).encode()
        )

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(f"closed during the handshake: {exc}"))
        if not self.finished.done():
            if self.acked < self.sent:
                self._fail(f"connection lost with {self.sent - self.acked} in flight")
            self.finished.set_result(None)

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

    # --- frames ----------------------------------------------------------------------------

    def _read_frames(self) -> None:
        buf = self.buffer
        acks = 0
        now = time.monotonic()
        frames, pos = split_frames(buf)
        for opcode, payload in frames:
            if opcode == 0x1:
                acks += self._on_text(payload, now)
            elif opcode == 0x9:
                self.transport.write(masked_frame(payload, 0xA))
            elif opcode == 0x8:
                self._fail(f"server closed the connection: {payload[2:]!r}")
                self.transport.close()
        del buf[:pos]
        if acks:
            self.last_ack = now
            self.pump()

    def _on_text(self, payload: bytes, now: float) -> int:
        """Check the acks in one text frame; return how many there were."""
        if payload.startswith(b'{"op":"acks"'):
            batch = _acks_decoder.decode(payload).acks
        elif payload.startswith(b'{"op":"ack"'):
            batch = [_ack_decoder.decode(payload)]
        else:
            self._fail(payload[:300].decode(errors="replace"))
            return 0
        return sum(self._on_ack(ack, now) for ack in batch)

    def _on_ack(self, ack: _Ack, now: float) -> bool:
        index = self.acked
        if index >= self.sent or ack.id != self.ids[index]:
            self._fail(f"ack out of order: {ack.id} (expected #{index})")
            return False
        if ack.duplicate or (self.last_seq >= 0 and ack.seq != self.last_seq + 1):
            self._fail(f"bad ack for {ack.id}: seq {ack.seq} duplicate {ack.duplicate}")
        self.last_seq = ack.seq
        self.acked = index + 1
        self.latencies.append(now - self.sent_at[index])
        return True

    def _fail(self, message: str) -> None:
        self.failures += 1
        if len(self.samples) < 5:
            self.samples.append(message)

    def pump(self) -> None:
        """Top the window up with pre-built frames."""
        if not self.stopping:
            count = min(self.window - (self.sent - self.acked), self.total - self.sent)
            if count > 0:
                start = self.sent
                now = time.monotonic()
                self.transport.writelines(self.frames[start : start + count])
                sent_at = self.sent_at
                for i in range(start, start + count):
                    sent_at[i] = now
                self.sent = start + count
        finished = (self.stopping or self.sent == self.total) and self.acked == self.sent
        if finished and not self.finished.done():
            self.finished.set_result(None)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(masked_frame(struct.pack("!H", 1000), 0x8))
            self.transport.close()


def _same(conn: LoadConnection) -> LoadConnection:
    return conn


async def run(args: argparse.Namespace, latencies: array[float]) -> dict[str, object]:
    loop = asyncio.get_running_loop()
    conversations = args.conversations.split(",")
    per_connection = args.messages // len(conversations)
    connections: list[LoadConnection] = []
    for c, conversation_id in enumerate(conversations):
        ids = [f"ws-{args.tag}-{c}-{i}" for i in range(per_connection)]
        frames = [
            masked_frame(
                b'{"op":"send","envelope":'
                + envelope_body(conversation_id, envelope_id, args.agent)
                + b"}"
            )
            for envelope_id in ids
        ]
        conn = LoadConnection(args.host, args.port, args.key, frames, ids, args.window)
        await loop.create_connection(functools.partial(_same, conn), args.host, args.port)
        await asyncio.wait_for(conn.opened, 10)
        connections.append(conn)

    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return {"error": "no go"}

    cpu_start = time.process_time()
    first_send = time.monotonic()
    for conn in connections:
        conn.pump()

    def stop_sending() -> None:
        for conn in connections:
            conn.stopping = True
            conn.pump()

    loop.call_at(loop.time() + args.duration, stop_sending)
    _, pending = await asyncio.wait(
        [conn.finished for conn in connections], timeout=args.duration + args.drain_timeout
    )
    for conn in connections:
        conn.close()
    for conn in connections:
        latencies.extend(conn.latencies)
    return {
        "connections": len(connections),
        "sent": sum(conn.sent for conn in connections),
        "acked": sum(conn.acked for conn in connections),
        "failures": sum(conn.failures for conn in connections),
        "failure_samples": [s for conn in connections for s in conn.samples][:5],
        "unfinished": len(pending),
        "cpu_seconds": time.process_time() - cpu_start,
        "first_send": first_send,
        "last_ack": max((conn.last_ack for conn in connections), default=first_send),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True, help="the agent's API key")
    parser.add_argument("--agent", required=True, help="the agent id (the envelopes' sender)")
    parser.add_argument(
        "--conversations", required=True, help="one connection per id, comma-separated"
    )
    parser.add_argument("--messages", type=int, required=True, help="envelopes for this loader")
    parser.add_argument("--window", type=int, default=128, help="sends in flight per connection")
    parser.add_argument("--duration", type=float, default=10.0, help="stop sending after this")
    parser.add_argument("--drain-timeout", type=float, default=20.0)
    parser.add_argument("--tag", required=True, help="makes this loader's envelope ids unique")
    parser.add_argument("--latency-out", required=True)
    args = parser.parse_args()
    factory = uvloop.new_event_loop if uvloop is not None else None
    with asyncio.Runner(loop_factory=factory) as runner:
        latencies = array("d")
        result = runner.run(run(args, latencies))
    with open(args.latency_out, "wb") as out:
        latencies.tofile(out)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
