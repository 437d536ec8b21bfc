"""The Web Host's background jobs: work a host starts and does not wait for (an app
centre action, taking a closed instance's surfaces down, a native provider's run, a
desktop's badge), in one task group whose lifetime is the Web Host's serving.

Nothing is fire-and-forget: every job is owned by the group until it ends, the group
cancels what is left (and waits for it) when the Web Host stops, before the Runtime
closes its store. A job that fails ends alone: its failure is logged by the
exception's type, never its message (which may carry a message body, an argument, a
file name or a token), and never takes the Web Host or a tab's channel with it; a job
that owes someone an answer catches its own failure and answers ``internal_error``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["HostJobs"]

log = logging.getLogger("lineup.host")

Job = Coroutine[Any, Any, None]


class HostJobs:
    def __init__(self) -> None:
        self._group: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Jobs may start while this is entered; leaving it cancels and awaits them."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                for task in list(self._tasks):
                    task.cancel()

    def start(self, job: Job, what: str) -> None:
        """Run ``job`` in the background; ``what`` names it in the log (a fixed word,
        never data)."""
        if self._group is None:
            job.close()  # never started: nothing of it ran
            log.warning("host job dropped: the Web Host is not serving", extra={"job": what})
            return
        task = self._group.create_task(_logged(job, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _logged(job: Job, what: str) -> None:
    try:
        await job
    except Exception as exc:  # one job's bug ends that job, never the Web Host
        log.error("host job failed", extra={"job": what, "error": type(exc).__name__})
