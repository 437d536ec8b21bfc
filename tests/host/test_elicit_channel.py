"""The host channel's ``elicit`` frame: a tab's answer to an MCP server's form reaches
the Runtime, which decides; the tab hears the code only. (The form itself, answered in
Chromium against a real server: tests/browser/test_mcp_elicitation.py.)"""

from __future__ import annotations

import json

from lineup.protocol import ErrorCode
from tests.support.browser_interactions import chat_id
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client


async def test_an_answer_to_a_form_that_does_not_exist_is_refused(client: Client) -> None:
    conversation = await chat_id(client)
    async with tab(client) as ws:
        await hello(ws)
        for action, content in (("accept", {"name": "Ada"}), ("decline", None)):
            frame = {
                "op": "elicit",
                "conversation_id": conversation,
                "elicitation_id": "eli_nothing",
                "action": action,
                "content": content,
            }
            await ws.send(json.dumps(frame))
            receipt = await next_frame(ws, "elicit_receipt", elicitation_id="eli_nothing")
            assert receipt["outcome"] == ErrorCode.ELICITATION_NOT_FOUND
