"""The crash harness in CI: an AppServer, a Runtime and an agent in separate processes
(the agent in this one), chatting, asking questions, opening the test MiniApp,
calling its tools, asking for a capability and closing instances, while at least 25
SIGKILLs hit the Runtime or the AppServer; then every invariant of
``tests/support/crash_harness`` holds (nothing lost, nothing twice, order kept, one
result per question, tool call and capability call, which the agent got once; no
instance left starting or stopping, focus on a live one). The long version is
``scripts/crash_harness``."""

from __future__ import annotations

from pathlib import Path

from tests.support.crash_harness import run_harness


async def test_25_kills_lose_nothing_and_repeat_nothing(tmp_path: Path) -> None:
    report = await run_harness(tmp_path, messages=60, kills=25, seed=11)
    print("\n" + report.table())
    assert report.kills.total() == 25, report.kills  # the workload outlasted the kills
    assert report.kills["runtime"] >= 5 and report.kills["appserver"] >= 5
    assert report.checked["user"] == 60 and report.checked["answers"] == 12
    # 20 app rounds: open + a tool call in the instance, and a capability call.
    assert (report.checked["tools"], report.checked["capabilities"]) == (40, 20)
    assert (report.checked["opened"], report.checked["closed"]) == (20, 19)  # newest stays
