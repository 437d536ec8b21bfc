"""A user's agent script, as the README shows it: ``python -m tests.support.signal_agent
URL KEY CURSORS`` (``logging.basicConfig(level=INFO)``, then ``asyncio.run(agent.run())``)."""

from __future__ import annotations

import asyncio
import logging
import sys

from lineup.agent import Agent
from lineup.client import Backoff


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    url, key, cursors = sys.argv[1:4]
    agent = Agent(url, key, cursor_path=cursors, backoff=Backoff(base=0.1, cap=0.5))

    @agent.on_message
    async def echo(conversation, message):  # type: ignore[no-untyped-def]
        await conversation.send_markdown(message.payload.text)

    asyncio.run(agent.run())


if __name__ == "__main__":
    main()
