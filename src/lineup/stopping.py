"""How ``lineup demo``, ``lineup client`` and an SDK agent stop (docs/decisions.md,
"Stop means stop").

``StopSignals`` installs SIGINT and SIGTERM handlers on the running loop as the first
thing a long-running command does. The first signal sets ``event``: the command stops
gracefully (drain the outbox, stop, then cancel what is left) within ``deadline``
seconds. A watchdog thread ends the process if that did not happen a little after the
deadline (a last resort: a stop step that blocks a thread). A second signal exits at
once. Exit codes: 0 after a graceful stop; 128 + the signal's number (130 for SIGINT,
143 for SIGTERM) when the process is ended at once (second signal, watchdog).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["DEADLINE", "StopSignals", "within"]

DEADLINE = 2.5
"""Seconds from the first signal to a stopped process (the issue's bound is 3 s)."""

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


class StopSignals:
    def __init__(self, deadline: float = DEADLINE, *, watchdog: bool = True) -> None:
        self.deadline = deadline
        self.event = asyncio.Event()
        self.signum: int | None = None
        self._watchdog = watchdog
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> bool:
        """Handle SIGINT/SIGTERM on the running loop; ``False`` (nothing installed)
        outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, sig)
        self._loop = loop
        return True

    def remove(self) -> None:
        if self._loop is None or self._loop.is_closed():
            return
        for sig in _SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError):
                self._loop.remove_signal_handler(sig)
        self._loop = None

    def _on_signal(self, signum: int) -> None:
        if self.signum is not None:
            _exit_now(signum, "stopping at once")
        self.signum = signum
        self.event.set()
        if self._watchdog:
            timer = threading.Timer(
                self.deadline + 0.3, _exit_now, (signum, "did not stop in time")
            )
            timer.daemon = True
            timer.start()


def _exit_now(signum: int, why: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"lineup: {why}\n")
        sys.stderr.flush()
    os._exit(128 + signum)


async def within(seconds: float, awaitable: Awaitable[T]) -> T | None:
    """``awaitable``'s result, or ``None`` when it took longer than ``seconds`` (it is
    cancelled then)."""
    try:
        return await asyncio.wait_for(awaitable, max(seconds, 0.0))
    except TimeoutError:
        return None


async def run_until_stopped(
    body: Awaitable[None], stop: asyncio.Event, deadline: float = DEADLINE
) -> None:
    """Run ``body`` (which watches ``stop`` itself and stops gracefully when it is
    set) until it returns; once ``stop`` is set, give it ``deadline`` seconds, then
    cancel it, wherever it is (imports done: migrations, start-up, login, ...)."""
    task = asyncio.ensure_future(body)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait({task}, timeout=max(deadline - 0.4, 0.1))
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.3)
    finally:
        waiter.cancel()
    if task.done() and not task.cancelled():
        task.result()


async def run_stoppable(
    body: Callable[[asyncio.Event], Awaitable[None]], stop: asyncio.Event | None
) -> None:
    """``run_until_stopped(body(stop), stop)`` for a long-running command: with no
    ``stop`` of the caller's, SIGINT and SIGTERM are this process's (``StopSignals``)
    from here until ``body`` ends; with one, signals stay the caller's (the desktop)."""
    signals = None
    if stop is None:
        signals = StopSignals()
        signals.install()
        stop = signals.event
    try:
        await run_until_stopped(body(stop), stop)
    finally:
        if signals is not None:
            signals.remove()
