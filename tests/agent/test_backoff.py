"""``Backoff`` draws full jitter, as docs/agent-sdk.md and docs/runtime.md say:
each delay from 0 up to a ceiling that doubles from ``base`` to ``cap``."""

from __future__ import annotations

import random

from lineup.client import Backoff


def test_delays_are_full_jitter_under_a_doubling_capped_ceiling() -> None:
    draws = []
    for seed in range(200):
        backoff = Backoff(base=0.2, cap=10.0, rng=random.Random(seed))
        draws.append([backoff.next_delay() for _ in range(8)])
    for attempt in range(8):
        ceiling = min(10.0, 0.2 * 2**attempt)
        column = [row[attempt] for row in draws]
        assert all(0 <= delay <= ceiling for delay in column)
        assert min(column) < ceiling / 4  # not uniform(ceiling / 2, ceiling)


def test_reset_starts_again_from_the_base() -> None:
    backoff = Backoff(base=0.2, cap=10.0, rng=random.Random(1))
    for _ in range(6):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() <= 0.2
