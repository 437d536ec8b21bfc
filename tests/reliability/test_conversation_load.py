"""Many conversations at once with random disconnects (a CI-sized run of
``tests/support/conversation_load``; 200 x 100 is ``benchmarks/conversation_load.py``):
every message and reply stored and received once, in order."""

from __future__ import annotations

from tests.support.appserver import AppServerProcess
from tests.support.conversation_load import run_load


async def test_40_conversations_with_random_disconnects_lose_and_repeat_nothing(
    appserver: AppServerProcess,
) -> None:
    report = await run_load(appserver, users=40, messages=25, seed=5, disconnect_after=(5, 40))
    print("\n" + report.table())
    assert report.disconnects >= 20  # the links really were cut
    assert len(report.round_trips_ms) == 40 * 25
