"""Login throttling: password guessing gets slow, legitimate users barely notice.

Pure and clock-injected. Per process: with several AppServer processes each keeps
its own count, which still bounds guesses to ``limit`` per window per process.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta


class LoginThrottle:
    """After ``limit`` failed logins for one username within ``window``, refuse
    further attempts for that username until the oldest failure leaves the window."""

    def __init__(
        self,
        clock: Callable[[], datetime],
        *,
        limit: int = 10,
        window: timedelta = timedelta(minutes=5),
        max_tracked: int = 10_000,
    ) -> None:
        self._clock = clock
        self.limit = limit
        self.window = window
        self._max_tracked = max_tracked
        self._failures: OrderedDict[str, list[datetime]] = OrderedDict()

    def retry_after(self, username: str) -> timedelta | None:
        """How long this username must wait before trying again, or ``None``."""
        recent = self._recent(username.lower())
        if len(recent) < self.limit:
            return None
        return recent[0] + self.window - self._clock()

    def failed(self, username: str) -> None:
        key = username.lower()
        recent = self._recent(key)
        recent.append(self._clock())
        self._failures[key] = recent[-self.limit :]
        self._failures.move_to_end(key)
        while len(self._failures) > self._max_tracked:
            self._failures.popitem(last=False)

    def succeeded(self, username: str) -> None:
        self._failures.pop(username.lower(), None)

    def _recent(self, key: str) -> list[datetime]:
        cutoff = self._clock() - self.window
        recent = [t for t in self._failures.get(key, ()) if t > cutoff]
        if not recent:
            self._failures.pop(key, None)
        return recent
