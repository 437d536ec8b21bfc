"""docs/agent-sdk.md's Python snippets run: read top to bottom they are one program
(the first snippet makes ``agent``), which is executed against a real AppServer
process with the placeholders of the first snippet (URL, key, cursor file) replaced.
Every name a handler uses must be defined by the page, and the page's agent must
greet, answer and run its handlers without one failing."""

from __future__ import annotations

import asyncio
import builtins
import logging
import re
import symtable
from pathlib import Path
from typing import Any

import pytest

from lineup.agent import Agent
from tests.agent.test_agent import wait_for_texts
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-sdk.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
RUN = "asyncio.run(agent.run())\n"


def program(url: str, key: str, cursor_path: Path) -> str:
    """The page's snippets as one program, to run against ``url`` (``run()`` is left
    to the test)."""
    source = "\n".join(BLOCK.findall(DOC.read_text(encoding="utf-8")))
    assert source.count(RUN) == 1
    assert source.count('"http://127.0.0.1:8765"') == source.count('"lak_..."') == 1
    source = source.replace(RUN, "")
    source = source.replace('"http://127.0.0.1:8765"', repr(url)).replace('"lak_..."', repr(key))
    return source.replace('"cursors.json"', repr(str(cursor_path)))


def names_used_by_functions(table: symtable.SymbolTable) -> set[str]:
    found: set[str] = set()
    for child in table.get_children():
        found |= {s.get_name() for s in child.get_symbols() if s.is_global() and s.is_referenced()}
        found |= names_used_by_functions(child)
    return found


def test_every_snippet_is_valid_python_and_uses_only_names_the_page_defines() -> None:
    source = program("http://127.0.0.1:1", "lak_x", Path("cursors.json"))
    table = symtable.symtable(source, str(DOC), "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    undefined = names_used_by_functions(table) - defined - set(dir(builtins))
    assert not undefined, f"docs/agent-sdk.md uses undefined names: {sorted(undefined)}"


def test_the_undefined_name_check_finds_one() -> None:
    snippet = """
async def f(conversation):
    await conversation.call_tool("x", app_session_id=session_id)
"""
    table = symtable.symtable(snippet, "snippet", "exec")
    assert names_used_by_functions(table) == {"session_id"}


async def test_the_page_s_agent_runs_against_a_real_appserver(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    namespace: dict[str, Any] = {"__name__": "agent_sdk_snippets"}
    exec(  # noqa: S102 - the page's own code, run on purpose
        compile(program(appserver.url, pair.agent_key, tmp_path / "c.json"), str(DOC), "exec"),
        namespace,
    )
    agent = namespace["agent"]
    assert isinstance(agent, Agent)
    with caplog.at_level(logging.ERROR, logger="lineup.agent"):
        task = asyncio.create_task(agent.run())
        try:
            await asyncio.wait_for(agent.ready.wait(), 15)
            await pair.user.send_text(pair.conversation_id, "hi")
            texts = await asyncio.wait_for(wait_for_texts(pair, 3), 20)
        finally:
            await agent.stop()
            await asyncio.wait_for(task, 15)
    # The greeting, the queued reply and the concurrent one (the other handlers wait
    # for the Runtime this test does not run).
    assert texts[0] == "Hello!"
    assert sorted(texts[1:]) == ["On it.", "You said: hi"]
    assert [r.getMessage() for r in caplog.records if r.name == "lineup.agent"] == []
