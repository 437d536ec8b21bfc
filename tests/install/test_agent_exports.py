"""Every public name of the agent SDK is exported and documented."""

from __future__ import annotations

import typing
from pathlib import Path

import lineup.agent
from lineup.agent import agent as agent_module

DOC = Path(__file__).parents[2] / "docs" / "agent-sdk.md"


def test_every_export_is_documented() -> None:
    text = DOC.read_text()
    missing = [name for name in lineup.agent.__all__ if f"`{name}`" not in text]
    assert not missing


def test_the_types_handlers_receive_are_exported() -> None:
    for alias in (agent_module.MessageHandler, agent_module.EventHandler):
        params, _ = typing.get_args(alias)
        for param in params:
            assert param.__name__ in lineup.agent.__all__
            assert getattr(lineup.agent, param.__name__) is param
