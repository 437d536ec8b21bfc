"""What a server sends us that could grow without end, kept bounded.

``StderrTail``: the last lines of a child's stderr (never logged; shown to the person
when the server fails). ``ProgressPump``: a server's progress notifications for one
call, coalesced to the newest and paced, so a flood costs one slot.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Protocol

import anyio

from .results import one_line

__all__ = ["Progress", "ProgressPump", "StderrTail"]

log = logging.getLogger("lineup.runtime.mcp")


class Progress(Protocol):
    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class StderrTail:
    """The last lines a child wrote on stderr, bounded in lines and bytes."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self._lines: deque[bytes] = deque()
        self._bytes = 0
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self.total_lines = 0

    def add(self, line: bytes) -> None:
        line = line[-min(4096, self._max_bytes - 1) :]
        self._lines.append(line)
        self._bytes += len(line) + 1  # with its newline
        self.total_lines += 1
        while len(self._lines) > self._max_lines or self._bytes > self._max_bytes:
            self._bytes -= len(self._lines.popleft()) + 1

    def text(self) -> str:
        return b"\n".join(self._lines).decode("utf-8", "replace")


class ProgressPump:
    """Coalesces a server's progress notifications into a bounded, paced stream.

    The dispatcher calls ``receive`` once per notification; it only keeps the newest
    value, so a flood costs one slot however long it lasts. ``run`` hands the newest
    value to the caller's callback at most once per ``interval_s``.
    """

    def __init__(self, callback: Progress, interval_s: float) -> None:
        self._callback = callback
        self._interval_s = interval_s
        self._latest: tuple[float, float | None, str | None] | None = None
        self._ready = anyio.Event()
        self.received = 0

    async def receive(self, progress: float, total: float | None, message: str | None) -> None:
        self.received += 1
        self._latest = (progress, total, one_line(message, 500) if message else None)
        self._ready.set()

    async def run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready = anyio.Event()
            value, self._latest = self._latest, None
            if value is None:
                continue
            try:
                await self._callback(*value)
            except Exception:
                log.exception("mcp progress callback raised")
            await anyio.sleep(self._interval_s)  # pacing, not waiting for something
