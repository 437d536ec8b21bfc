"""LoginThrottle with a movable clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lineup.server.throttle import LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_locks_after_the_limit_and_opens_when_failures_age_out() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock, limit=3, window=timedelta(minutes=5))
    for _ in range(3):
        assert throttle.retry_after("Alice") is None
        throttle.failed("alice")
        clock.now += timedelta(seconds=10)
    wait = throttle.retry_after("ALICE")
    assert wait == timedelta(minutes=5) - timedelta(seconds=30)
    assert throttle.retry_after("bob") is None
    clock.now += wait
    assert throttle.retry_after("alice") is None


def test_success_clears_the_count_and_memory_is_bounded() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock, limit=2, max_tracked=100)
    throttle.failed("carol")
    throttle.succeeded("carol")
    throttle.failed("carol")
    assert throttle.retry_after("carol") is None
    for n in range(1000):
        throttle.failed(f"user{n}")
    assert len(throttle._failures) == 100
