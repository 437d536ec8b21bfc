"""The scripted demo agent used by ``lineup demo``: no model, just manners."""

from __future__ import annotations

from lineup.protocol import MessageEnvelope
from lineup.protocol.fields import MAX_TEXT_CHARS

from .agent import Agent
from .conversation import Conversation

HELP = """I am the LineUp demo agent. I understand:

- `/help`: this list
- anything else: I say it back to you

Messages, order and delivery are real: stop me, restart me, and nothing is lost or repeated."""


def build_demo_agent(agent: Agent) -> Agent:
    @agent.on_conversation
    async def welcome(conversation: Conversation) -> None:
        # A fixed id makes the greeting idempotent across restarts.
        await conversation.send_markdown(
            "Hello! Type `/help` to see what I can do.",
            envelope_id=f"welcome.{conversation.id}"[:128],
        )

    @agent.on_message
    async def answer(conversation: Conversation, message: MessageEnvelope) -> None:
        text = message.payload.text.strip()
        reply_id = f"reply.{message.id}"[:128]
        if text == "/help":
            await conversation.send_markdown(HELP, reply_to=message.id, envelope_id=reply_id)
        else:
            echoed = message.payload.text[: MAX_TEXT_CHARS - 16]
            await conversation.send_markdown(
                f"You said: {echoed}", reply_to=message.id, envelope_id=reply_id
            )

    return agent
