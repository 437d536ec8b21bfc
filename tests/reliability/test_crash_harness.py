"""The crash harness in CI: an AppServer, a Runtime and an agent in separate processes
(the agent in this one), chatting and asking questions while at least 25 SIGKILLs hit
the Runtime or the AppServer; then every invariant of ``tests/support/crash_harness``
holds (nothing lost, nothing twice, order kept, one result per question, the agent
got each answer once). The long version is ``scripts/crash_harness``."""

from __future__ import annotations

from pathlib import Path

from tests.support.crash_harness import run_harness


async def test_25_kills_lose_nothing_and_repeat_nothing(tmp_path: Path) -> None:
    report = await run_harness(tmp_path, messages=60, kills=25, seed=11)
    print("\n" + report.table())
    assert report.kills.total() == 25, report.kills  # the workload outlasted the kills
    assert report.kills["runtime"] >= 5 and report.kills["appserver"] >= 5
    assert report.checked["user"] == 60 and report.checked["answers"] == 12
