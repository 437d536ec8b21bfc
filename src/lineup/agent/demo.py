"""The scripted demo agent used by ``lineup demo``: no model, just manners."""

from __future__ import annotations

from datetime import timedelta

from lineup.protocol import MessageEnvelope
from lineup.protocol.fields import MAX_TEXT_CHARS

from .agent import Agent
from .conversation import Conversation
from .errors import CapabilityError, Dismissed, Expired, InteractionError

HELP = """I am the LineUp demo agent. I understand:

- `/help`: this list
- `/notice`: I show you a notice card
- `/choose`: I ask you to pick one option (`/choose many`: several)
- `/confirm`: I ask you to confirm something
- `/ask`: I ask you to type an answer
- `/link URL`: I ask to open a link for you
- `/copy TEXT`: I ask to put text on your clipboard
- `/save TEXT`: I ask to save a note as a file you can download
- `/file`: I ask you to share a file with me
- `/notify TEXT`: I show you a notification (no question asked)
- anything else: I say it back to you

Questions wait for you for 5 minutes; I read your other messages once you have
answered. Messages, order and delivery are real: stop me, restart me, reload the
page or restart the client, and nothing is lost or repeated."""

WAIT = timedelta(minutes=5)
COLOURS = {"blue": "Blue", "green": "Green", "orange": "Orange", "purple": "Purple"}


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
        command, _, rest = text.partition(" ")
        reply_id = f"reply.{message.id}"[:128]
        try:
            reply = await _command(conversation, command, rest.strip())
        except Expired:
            reply = "You did not answer in time, so I let that question go."
        except Dismissed:
            reply = "I withdrew that question."
        except InteractionError as exc:
            reply = f"That question could not be asked (`{exc.code}`)."
        except CapabilityError as exc:
            reply = f"That did not happen (`{exc.code}`)."
        if reply is None:
            echoed = message.payload.text[: MAX_TEXT_CHARS - 16]
            reply = f"You said: {echoed}"
        await conversation.send_markdown(reply, reply_to=message.id, envelope_id=reply_id)

    return agent


async def _command(conversation: Conversation, command: str, rest: str) -> str | None:
    """The reply to a command, or ``None`` when the message is not one."""
    if command == "/help":
        return HELP
    if command == "/notice":
        await conversation.notify(
            rest or "Your weekly report is ready. Nothing needs your attention.",
            title="Notice",
            level="info",
        )
        return "I showed you a notice."
    if command == "/choose":
        if rest == "many":
            picked = await conversation.ask_choice(
                "Which colours should the dashboard use? Pick two or three.",
                COLOURS,
                multiple=True,
                min_selected=2,
                max_selected=3,
                expires_in=WAIT,
            )
            return "You picked " + ", ".join(f"**{COLOURS[c]}**" for c in picked) + "."
        colour = await conversation.ask_choice(
            "Which colour should the dashboard use?", COLOURS, expires_in=WAIT
        )
        return f"You chose **{COLOURS[colour]}**."
    if command == "/confirm":
        confirmed = await conversation.ask_confirm(
            "Delete the scratch notes from last week? This cannot be undone.",
            confirm_label="Delete",
            cancel_label="Keep them",
            danger=True,
            expires_in=WAIT,
        )
        return "Deleted (not really: this is a demo)." if confirmed else "I kept them."
    if command == "/ask":
        name = await conversation.ask_input(
            "What should I call you?",
            placeholder="Your name",
            min_length=1,
            max_length=80,
            expires_in=WAIT,
        )
        return f"Nice to meet you, {name.strip() or 'friend'}."
    return await _capability(conversation, command, rest)


async def _capability(conversation: Conversation, command: str, rest: str) -> str | None:
    """Host capabilities: the person decides in the shell's consent dialog."""
    if command == "/link":
        url = rest or "https://example.com/"
        await conversation.call_capability(
            "app.open_url", {"url": url}, reason="You asked me to open this link.", expires_in=WAIT
        )
        return "I opened the link for you."
    if command == "/copy":
        await conversation.call_capability(
            "clipboard.write",
            {"text": rest or "Hello from LineUp"},
            reason="You asked me to copy this.",
            expires_in=WAIT,
        )
        return "It is on your clipboard."
    if command == "/save":
        saved = await conversation.call_capability(
            "artifact.save",
            {"name": "note.txt", "media_type": "text/plain", "text": rest or "A note from LineUp."},
            reason="You asked me to save a note.",
            expires_in=WAIT,
        )
        return f"Saved **{saved['name']}** ({saved['size']} bytes); download it from the chat."
    if command == "/file":
        picked = await conversation.call_capability(
            "device.pick_file", {}, reason="You asked to share a file with me.", expires_in=WAIT
        )
        return f"Thanks: I got **{picked['name']}**, {picked['size']} bytes."
    if command == "/notify":
        await conversation.call_capability(
            "notification.show", {"title": rest or "Hello"}, reason="You asked.", expires_in=WAIT
        )
        return "I showed you a notification."
    return None
