"""The base of the Hypothesis machines that drive a real on-disk Runtime store: each
run has its own event loop and scratch directory (in memory where the machine has
``/dev/shm``: thousands of fsyncs per run), closed and removed at teardown."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hypothesis.stateful import RuleBasedStateMachine

T = TypeVar("T")

SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class _Closable(Protocol):
    async def close(self) -> None: ...


class StoreMachine(RuleBasedStateMachine):
    """Subclasses set ``self.h`` (a harness with an async ``close``) in ``__init__``."""

    h: _Closable

    def __init__(self, prefix: str = "lineup-machine-") -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix=prefix, dir=SCRATCH))

    def teardown(self) -> None:
        try:
            self.run(self.h.close())
        finally:
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)
