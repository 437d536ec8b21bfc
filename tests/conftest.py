"""Fixtures shared by every suite."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import log_canary
from tests.support.appserver import AppServerProcess
from tests.support.clients import Api, agent_api, login
from tests.support.postgres import postgres_cluster, postgres_dsn

__all__ = ["postgres_cluster", "postgres_dsn"]  # fixtures for every suite

_names = itertools.count(1)


@pytest.fixture(scope="session", autouse=True)
def _private_state_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Default file locations (agent cursors, data dirs) point into the test's tmp."""
    root = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(root / "state"))
        patch.setenv("XDG_DATA_HOME", str(root / "data"))
        yield


@pytest.fixture(scope="session", autouse=True)
def _log_hygiene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[log_canary.Guard]:
    """No canary or secret in any log line, AppServer log or audit row (issue 11)."""
    with log_canary.guard(tmp_path_factory.getbasetemp()) as guard:
        yield guard


@pytest.fixture(autouse=True)
def _log_hygiene_per_test(_log_hygiene: log_canary.Guard) -> Iterator[None]:
    with _log_hygiene.test():
        yield


@pytest.fixture(scope="session")
def appserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServerProcess]:
    """One AppServer process for the session; tests make their own principals."""
    root = tmp_path_factory.mktemp("appserver")
    server = AppServerProcess(root / "data", root / "appserver.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_appserver(tmp_path: Path) -> Iterator[AppServerProcess]:
    """An AppServer that this test alone may kill and restart."""
    server = AppServerProcess(tmp_path / "data", tmp_path / "appserver.log")
    server.start()
    yield server
    server.stop()


@dataclass
class Pair:
    """A user and an agent with a conversation between them."""

    user: Api
    agent: Api
    agent_key: str
    conversation_id: str
    user_name: str


async def make_pair(server: AppServerProcess) -> Pair:
    n = next(_names)
    server.add_user(f"user{n}")
    agent_id = f"agent{n}"
    key = server.add_agent(agent_id)
    user = await login(server.url, f"user{n}")
    agent = agent_api(server.url, agent_id, key)
    log_canary.identify(user.id)
    conversation_id = log_canary.identify(await user.open_conversation(agent_id))
    return Pair(user, agent, key, conversation_id, f"user{n}")


@pytest.fixture
async def pair(appserver: AppServerProcess) -> AsyncIterator[Pair]:
    made = await make_pair(appserver)
    yield made
    await made.user.aclose()
    await made.agent.aclose()
