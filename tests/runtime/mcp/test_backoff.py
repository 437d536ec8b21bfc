"""The restart policy (pure): capped full-jitter backoff, and giving up on quick failures."""

from __future__ import annotations

from lineup.runtime.mcp.backoff import Backoff


def test_delays_double_up_to_the_cap_with_full_jitter() -> None:
    backoff = Backoff(base_s=1.0, cap_s=5.0, quick_s=10.0, max_quick_failures=10)
    ceilings = [backoff.after_failure(0.0, lambda: 1.0) for _ in range(6)]
    assert ceilings == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert Backoff(base_s=1.0).after_failure(0.0, lambda: 0.25) == 0.25


def test_quick_failures_give_up_and_a_long_run_starts_the_count_again() -> None:
    backoff = Backoff(base_s=1.0, quick_s=10.0, max_quick_failures=3)
    assert backoff.after_failure(0.5, lambda: 1.0) == 1.0
    assert backoff.after_failure(0.5, lambda: 1.0) == 2.0
    assert backoff.after_failure(60.0, lambda: 1.0) == 1.0  # it ran for a minute: count anew
    assert backoff.after_failure(0.5, lambda: 1.0) == 2.0
    assert backoff.after_failure(0.5, lambda: 1.0) is None
