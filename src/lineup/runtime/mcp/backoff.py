"""When to try a failed MCP server again, and when to stop trying. Pure: no I/O.

Capped exponential backoff with full jitter (the delay is uniform in ``[0, min(cap,
base * 2**n)]``), so servers that failed together do not come back together. A
failure is *quick* when the server was up for less than ``quick_s``: one that crashes
at once or on every call; ``max_quick_failures`` quick ones in a row and the server is
``failed`` (the person is told, with the reason) instead of being started forever. A
server that ran for a while before it failed starts the count again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass
class Backoff:
    base_s: float = 0.5
    cap_s: float = 30.0
    quick_s: float = 10.0
    max_quick_failures: int = 5
    quick_failures: int = field(default=0, init=False)

    def after_failure(self, up_for_s: float, rand: Callable[[], float]) -> float | None:
        """The delay before the next try, or ``None``: give up."""
        if up_for_s >= self.quick_s:
            self.quick_failures = 0
        self.quick_failures += 1
        if self.quick_failures >= self.max_quick_failures:
            return None
        ceiling = min(self.cap_s, self.base_s * 2.0 ** (self.quick_failures - 1))
        return rand() * ceiling

    def reset(self) -> None:
        self.quick_failures = 0
