"""``lineup demo`` with timestamps at each hop, for ``roundtrip_browser.py --trace``.

Run as ``python traced_demo.py demo --data-dir ... --port ... --web-port ...`` with
``LINEUP_BENCH_TRACE=FILE``: it wraps a few methods (nothing in src/ changes), runs the
ordinary ``lineup demo`` command and, when that returns (SIGINT), writes every event as
JSON lines ``[wall-clock seconds, event, key, detail]`` to FILE. Keys are what the hop
knows: the message text on the host channel, envelope ids after that, ``seq`` on the
stream. The wrappers cost a few microseconds each; quote untraced figures, not these.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from starlette import websockets

from lineup import cli
from lineup.agent import agent as agent_module
from lineup.agent import cursor as cursor_module
from lineup.client import connection as connection_module
from lineup.db import sqlite as sqlite_module
from lineup.host import app as host_module
from lineup.host import channel
from lineup.runtime import receive as receive_module
from lineup.runtime import runtime as runtime_module
from lineup.runtime import store as store_module

EVENTS: list[tuple[float, str, str, Any]] = []
_lock = threading.Lock()
_ENVELOPE_ID = re.compile(r'"envelope_id":"([^"]+)"')
_STATE = re.compile(r'"state":"([a-z]+)"')


def record(event: str, key: str, detail: Any = None) -> None:
    entry = (time.time(), event, key, detail)
    with _lock:  # the SQLite writer threads record too
        EVENTS.append(entry)


def wrap_async(owner: Any, name: str, before: Callable[..., None] | None, after: Any) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args, **kwargs)
        result = await original(*args, **kwargs)
        if after is not None:
            after(result, *args, **kwargs)
        return result

    setattr(owner, name, wrapper)


def install() -> None:
    # Web Host: a "send" frame decoded from the browser, and every frame sent back.
    def host_before(_host: Any, frame: Any) -> None:
        if isinstance(frame, channel.SendMessage):
            record("host.frame_in", frame.text)

    wrap_async(host_module.WebHost, "_answer", host_before, None)

    def sent_text(_ws: Any, data: str) -> None:
        envelope = _ENVELOPE_ID.search(data)
        state = _STATE.search(data)
        if envelope is not None:
            record("host.frame_out", envelope.group(1), state.group(1) if state else None)

    wrap_async(websockets.WebSocket, "send_text", sent_text, None)

    # Runtime: the message queued in the outbox (one durable transaction), then sent.
    wrap_async(
        runtime_module.Runtime,
        "send_message",
        lambda _rt, _cid, text: record("runtime.send_message", text),
        lambda item, _rt, _cid, text: record("runtime.queued", text, item.envelope_id),
    )
    wrap_async(
        store_module.RuntimeStore,
        "mark_sent",
        None,
        lambda _r, _s, _cid, envelope_id, seq: record("runtime.marked_sent", envelope_id, seq),
    )

    # Both clients of the AppServer (the Runtime and the agent): write, then ack.
    def send_before(_conn: Any, envelope_id: str, _body: bytes) -> None:
        record("client.send", envelope_id)

    def send_after(ack: Any, _conn: Any, envelope_id: str, _body: bytes) -> None:
        record("client.ack", envelope_id, ack.seq)

    wrap_async(connection_module.Connection, "send_envelope", send_before, send_after)

    # The Runtime's stream: each envelope frame is classified on arrival, applied in
    # batches (receive.apply_batch, one writer transaction; "applied" once it committed).
    original_classify = receive_module.classify

    def classify(frame: Any, *args: Any) -> Any:  # runtime.py imported it by name
        received = original_classify(frame, *args)
        record("runtime.frame_in", str(received.envelope_id), frame.seq)
        return received

    runtime_module.classify = classify  # type: ignore[attr-defined,assignment]
    original_apply = receive_module.apply_batch

    def apply_batch(txn: Any, items: Any, *args: Any) -> Any:
        for item in items:
            record("runtime.apply", str(item.envelope_id))
        return original_apply(txn, items, *args)

    receive_module.apply_batch = apply_batch  # type: ignore[assignment]

    def written(_result: Any, _db: Any, fn: Any, *args: Any) -> None:
        if fn is apply_batch:
            for item in args[0]:
                record("runtime.applied", str(item.envelope_id))

    wrap_async(sqlite_module.SQLiteDatabase, "write", None, written)

    # The agent: the user's message off the stream, the handler, the cursor file.
    wrap_async(
        agent_module.Agent,
        "_on_envelope",
        lambda _agent, frame: record("agent.frame_in", str(frame.seq)),
        None,
    )
    wrap_async(
        agent_module.Agent,
        "_dispatch",
        lambda _agent, _conv, envelope: record("agent.dispatch", envelope.id),
        lambda _r, _agent, _conv, envelope: record("agent.handled", envelope.id),
    )
    original_save = cursor_module.FileCursorStore.save

    def save(self: Any, cursors: dict[str, int]) -> None:
        began = time.time()
        original_save(self, cursors)
        record("agent.cursor_save", "", time.time() - began)

    cursor_module.FileCursorStore.save = save  # type: ignore[method-assign]

    # Every SQLite writer batch (AppServer and Runtime): on the writer thread, and when
    # the event loop gets to its futures.
    original_batch = sqlite_module.SQLiteDatabase._run_batch
    original_finish = sqlite_module.SQLiteDatabase._finish

    def run_batch(self: Any, conn: Any, batch: list[Any]) -> None:
        began = time.time()
        original_batch(self, conn, batch)
        names = [getattr(job.fn, "__name__", "?") for job in batch]
        record("db.batch", self._name, [began, time.time(), names])

    def finish(self: Any, batch: list[Any]) -> None:
        record("db.finish", self._name, len(batch))
        original_finish(self, batch)

    sqlite_module.SQLiteDatabase._run_batch = run_batch  # type: ignore[method-assign]
    sqlite_module.SQLiteDatabase._finish = finish  # type: ignore[method-assign]


def main() -> int:
    path = os.environ["LINEUP_BENCH_TRACE"]
    install()
    try:
        cli.main(args=sys.argv[1:], prog_name="lineup", standalone_mode=False)
    finally:
        with open(path, "w", encoding="utf-8") as out:
            for entry in EVENTS:
                out.write(json.dumps(entry) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
