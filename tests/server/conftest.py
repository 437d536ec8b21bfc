"""The AppServer suite runs against both engines: every test that uses ``appserver``
or ``own_appserver`` runs once on SQLite and once on PostgreSQL (a fresh database in
the session's throwaway cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.appserver import AppServerProcess

ENGINES = ["sqlite", "postgres"]


def _database(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("postgres_cluster").create_database())


@pytest.fixture(scope="session", params=ENGINES)
def appserver(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServerProcess]:
    """One AppServer process per engine for the session."""
    root = tmp_path_factory.mktemp(f"appserver-{request.param}")
    server = AppServerProcess(root / "data", root / "appserver.log", database=_database(request))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=ENGINES)
def own_appserver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AppServerProcess]:
    """An AppServer (per engine) that this test alone may kill and restart."""
    server = AppServerProcess(
        tmp_path / "data", tmp_path / "appserver.log", database=_database(request)
    )
    server.start()
    yield server
    server.stop()
