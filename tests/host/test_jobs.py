"""The Web Host's background work (``lineup.host.jobs``) with a real Runtime, Web Host
and AppServer: a job that fails is logged by its exception's type, never its message,
and ends alone (the host and the tab's channel serve on); one that owes a tab an answer
answers ``internal_error``; what still runs when the host stops is cancelled."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from lineup.host.native import NativeOutcome
from lineup.runtime import Runtime
from tests.conftest import Pair
from tests.support import log_canary
from tests.support.appserver import AppServerProcess
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client, serving


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == message]


class Following:
    """A desktop's native side whose following job (``attach``'s) is ``job``."""

    def __init__(self, job: Any) -> None:
        self.job = job

    def attach(self, runtime: Runtime) -> Any:
        return self.job()

    def handles(self, capability: str) -> bool:
        return False

    async def run(self, capability: str, arguments: dict[str, Any]) -> NativeOutcome | None:
        return None


async def test_a_failing_host_job_is_logged_by_its_type_and_the_host_serves_on(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    canary = log_canary.plant("job")
    raised = asyncio.Event()

    async def failing() -> None:
        raised.set()  # its waiter wakes after the job's failure was handled
        raise OSError(f"the badge could not read {canary}")

    async with serving(appserver, pair, tmp_path / "runtime", native=Following(failing)) as client:
        await asyncio.wait_for(raised.wait(), 15)
        (record,) = logged(caplog, "host job failed")
        assert (record.__dict__["job"], record.__dict__["error"]) == ("native_host", "OSError")
        assert record.exc_info is None  # no traceback: it would carry the message
        async with tab(client) as ws:
            assert await hello(ws)  # the host serves on
    assert canary not in caplog.text
    for entry in caplog.records:
        assert canary not in repr(entry.__dict__)


async def test_a_failing_app_centre_action_answers_internal_error_and_the_tab_goes_on(
    client: Client, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO)
    canary = log_canary.plant("action")

    async def failing() -> None:
        raise RuntimeError(f"the catalog at {canary} broke")

    monkeypatch.setattr(client.runtime.delivery, "refresh_catalog", failing)
    async with tab(client) as ws:
        await hello(ws)
        await ws.send(json.dumps({"op": "apps_action", "action": "refresh"}))
        receipt = await next_frame(ws, "apps_receipt", action="refresh")
        assert receipt["outcome"] == "internal_error"
        assert await hello(ws)  # the tab's channel serves on
    (record,) = logged(caplog, "app centre action failed")
    assert (record.__dict__["action"], record.__dict__["error"]) == ("refresh", "RuntimeError")
    assert record.exc_info is None
    assert canary not in caplog.text
    for entry in caplog.records:
        assert canary not in repr(entry.__dict__)


async def test_a_job_still_running_when_the_host_stops_is_cancelled(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    started = asyncio.Event()
    ends: list[str] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ends.append("cancelled")
            raise

    async with serving(appserver, pair, tmp_path / "runtime", native=Following(forever)):
        await asyncio.wait_for(started.wait(), 15)
        assert ends == []
    assert ends == ["cancelled"]
