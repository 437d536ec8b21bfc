"""The scripted demo agent used by ``lineup demo``: no model, just manners.

Its handlers run ``concurrent=True``: a question or a game waiting for the person
does not hold up the conversation, so chat, the Focus Timer's ``done`` and the
Whiteboard's strokes are answered at once. Every follow-up call names the app
instance it means (``open_app`` and ``AppInstance.call``): a call for a board that
was closed is refused, never carried out on another board."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from lineup.protocol import Envelope, ErrorCode, MessageEnvelope, UiEventEnvelope
from lineup.protocol.fields import MAX_TEXT_CHARS

from .agent import Agent
from .apps import AppInstance
from .conversation import Conversation
from .errors import CapabilityError, Dismissed, Expired, InteractionError, ToolCallError

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
- `/dashboard`: I open the Task Dashboard and add a few tasks
- `/whiteboard`: I open the Whiteboard and draw on it
- `/game`: a round of Draw & Guess: I draw, you guess (`/game b`: you draw, I guess)
- `/timer [minutes]`: a Focus Timer in the chat (25 minutes unless you say); it is a
  signed app: install Focus Timer from Apps first
- `/tour`: a guided tour of all of it
- anything else: I say it back to you

Questions wait for you for 5 minutes; meanwhile I keep answering your other
messages. Messages, order and delivery are real: stop me, restart me, reload the
page or restart the client, and nothing is lost or repeated."""

WAIT = timedelta(minutes=5)
COLOURS = {"blue": "Blue", "green": "Green", "orange": "Orange", "purple": "Purple"}

FOCUS_TIMER_ID = "dev.lineup.focus-timer"
"""The signed sample app ``lineup demo`` publishes (``/timer`` shows its ``card``)."""
TIMER_SURFACE = "card"
TIMER_PREFIX = "focus-timer."
"""The instance ids of the timers this agent opens (``focus-timer.<message id>``)."""
TIMER_MINUTES = 25
MAX_TIMER_MINUTES = 600
INVENTORY_WAIT = 10.0
"""Seconds ``/timer`` waits for a first inventory when none is known yet."""


def build_demo_agent(agent: Agent) -> Agent:
    @agent.on_conversation
    async def welcome(conversation: Conversation) -> None:
        # A fixed id makes the greeting idempotent across restarts.
        await conversation.send_markdown(
            "Hello! Type `/help` to see what I can do.",
            envelope_id=f"welcome.{conversation.id}"[:128],
        )

    @agent.on_message(concurrent=True)
    async def answer(conversation: Conversation, message: MessageEnvelope) -> None:
        text = message.payload.text.strip()
        command, _, rest = text.partition(" ")
        reply_id = f"reply.{message.id}"[:128]
        reply: str | None
        try:
            if command == "/timer":
                reply = await _timer(conversation, rest.strip(), f"{TIMER_PREFIX}{message.id}")
            else:
                reply = await _command(conversation, command, rest.strip())
        except Expired:
            reply = "You did not answer in time, so I let that question go."
        except Dismissed:
            reply = "I withdrew that question."
        except InteractionError as exc:
            reply = f"That question could not be asked (`{exc.code}`)."
        except CapabilityError as exc:
            reply = f"That did not happen (`{exc.code}`)."
        except ToolCallError as exc:
            reply = _tool_failure(exc)
        if reply is None:
            echoed = message.payload.text[: MAX_TEXT_CHARS - 16]
            reply = f"You said: {echoed}"
        await conversation.send_markdown(reply, reply_to=message.id, envelope_id=reply_id)

    @agent.on_event("lineup.v1.ui.event", concurrent=True)
    async def surface_event(conversation: Conversation, envelope: Envelope) -> None:
        if not isinstance(envelope, UiEventEnvelope):
            return
        text = _event_reply(envelope)
        if text is not None:
            await conversation.send_markdown(text, envelope_id=f"reply.{envelope.id}"[:128])

    return agent


def _event_reply(envelope: UiEventEnvelope) -> str | None:
    """The reply to what the person did in a surface: the timer's ``done``, the
    Whiteboard's "Send to agent" (its ``snapshot``; Draw & Guess's snapshots carry
    a ``round_id`` and are read by the game itself)."""
    event = envelope.payload
    if event.event == "done" and event.instance_id.startswith(TIMER_PREFIX):
        minutes = _count(event.data.get("minutes"))
        if minutes:
            return f"Focus session done — {minutes} minute{'' if minutes == 1 else 's'}."
        return "Focus session done."
    if event.event == "snapshot" and "round_id" not in event.data:
        strokes = event.data.get("strokes")
        total = _count(event.data.get("total"))
        if total is None:
            total = len(strokes) if isinstance(strokes, list) else 0
        if not total:
            return "I got your Whiteboard, but it is empty. Draw something and send it again."
        return (
            f"I got {total} stroke{'' if total == 1 else 's'} from the Whiteboard. "
            "Thanks: keep drawing, or use Export to save it as a file."
        )
    return None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _tool_failure(exc: ToolCallError) -> str:
    if exc.code == ErrorCode.APP_INSTANCE_AMBIGUOUS:
        return (
            "More than one of those apps is open here, so I did not guess which one you "
            "meant. Close the ones you do not need and ask again."
        )
    if exc.code == ErrorCode.APP_INSTANCE_NOT_FOUND:
        return "That app is not open any more, so I left it alone."
    return f"The app could not do that (`{exc.code}`)."


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
    if (reply := await _capability(conversation, command, rest)) is not None:
        return reply
    return await _miniapp(conversation, command, rest)


async def _timer(conversation: Conversation, rest: str, instance_id: str) -> str:
    """Show the Focus Timer's card, at the version the person installed. The app is
    delivered signed, so it is there only once the person installed it from Apps."""
    minutes = TIMER_MINUTES
    if rest:
        # ASCII digits, and few of them: int() of a long string is slow or refused.
        digits = rest.isascii() and rest.isdigit() and len(rest) <= 3
        minutes = int(rest) if digits else 0
        if not 1 <= minutes <= MAX_TIMER_MINUTES:
            return f"Say `/timer` or `/timer MINUTES` (1 to {MAX_TIMER_MINUTES})."
    inventory = conversation.inventory
    if inventory is None:
        try:
            async with asyncio.timeout(INVENTORY_WAIT):
                inventory = await conversation.latest_inventory()
        except TimeoutError:
            inventory = None
    app = next(
        (
            a
            for a in (inventory.applications if inventory else [])
            if a.id == FOCUS_TIMER_ID and any(s.id == TIMER_SURFACE for s in a.surfaces)
        ),
        None,
    )
    if app is None:
        return (
            "The Focus Timer is not installed here (or it is disabled). Open **Apps** in the "
            "top bar, install **Focus Timer** (a signed sample app), then type `/timer` again."
        )
    await conversation.open_surface(
        FOCUS_TIMER_ID,
        app.version,
        instance_id=instance_id[:128],
        surface=TIMER_SURFACE,
        state={"minutes": minutes, "label": "Focus"},
        name="Focus Timer",
    )
    return f"Here is a {minutes}-minute Focus Timer. Press Start when you are ready."


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


SUN = [
    [
        [150, 110],
        [170, 90],
        [195, 85],
        [220, 95],
        [235, 118],
        [232, 145],
        [215, 165],
        [190, 172],
        [165, 163],
        [150, 140],
        [150, 110],
    ],
    [[192, 60], [192, 30]],
    [[192, 195], [192, 225]],
    [[120, 128], [90, 128]],
    [[262, 128], [292, 128]],
]
"""A sun, stroke by stroke: a circle and four rays."""


async def _miniapp(conversation: Conversation, command: str, rest: str = "") -> str | None:
    """The reference MiniApps, driven through their tools."""
    if command == "/tour":
        return await _tour(conversation)
    if command == "/game" and rest == "b":
        return await _round_b(conversation)
    if command == "/dashboard":
        board = await conversation.open_app("task-dashboard.open")
        for title in ("Read the report", "Book the meeting room", "Reply to Sam"):
            await board.call("task-dashboard.add_task", {"title": title})
        listed = await board.call("task-dashboard.list_tasks")
        return (
            f"I opened the Task Dashboard ({board.result['tasks']} tasks were there) and it now "
            f"holds {len(listed['tasks'])}. Move them around: I can read the board."
        )
    if command == "/whiteboard":
        return (await _whiteboard(conversation))[1]
    if command == "/game":
        return await _round_a(conversation)
    return None


async def _whiteboard(conversation: Conversation) -> tuple[AppInstance, str]:
    """Open a Whiteboard and draw on it; the board and the reply."""
    board = await conversation.open_app("whiteboard.open")
    strokes = [
        {"kind": "rect", "points": [[60, 60], [260, 180]], "color": "#3358d4", "width": 4},
        {
            "kind": "text",
            "points": [[80, 130]],
            "color": "#1d2330",
            "width": 2,
            "text": "Hello from the agent",
        },
    ]
    added = await board.call("whiteboard.draw", {"strokes": strokes})
    return board, (
        f"I drew {added['added']} shapes on the Whiteboard. Draw with me, press Send to show "
        "me your strokes, or use Export to save it as a file."
    )


async def _round_a(conversation: Conversation) -> str:
    """Round A: the demo agent draws a sun, the person guesses (the game waits for
    each guess; the other handlers keep answering meanwhile)."""
    from lineup.miniapps.draw_guess_matcher import same_word

    game = await conversation.open_app(
        "draw-guess.start_round_a", {"word_length": 3, "hint": "It is hot.", "seconds": 120}
    )
    round_id = game.result["round_id"]
    for points in SUN:
        await game.call("draw-guess.draw", {"round_id": round_id, "strokes": [{"points": points}]})
    for _ in range(5):
        guess = await game.call("draw-guess.next_guess", {"round_id": round_id})
        if guess.get("guess") is None:
            break  # the round ended (time ran out)
        correct = same_word(str(guess["guess"]), "sun")  # "sun", "Sun", "太阳"...
        await game.call(
            "draw-guess.judge",
            {"round_id": round_id, "correct": correct, "hint": "Look up at noon."},
        )
        if correct:
            return "You got it: a sun!"
    await game.call("draw-guess.end_round", {"round_id": round_id, "word": "sun"})
    return "It was a sun. Another round? Type `/game`."


async def _round_b(conversation: Conversation) -> str:
    """Round B: the person draws, the demo agent looks at the strokes now and then
    and guesses with the small matcher (a real agent would use its own model)."""
    from lineup.miniapps.draw_guess_matcher import guess_word

    game = await conversation.open_app("draw-guess.start_round_b", {"word": "sun", "seconds": 120})
    round_id = game.result["round_id"]
    tried: set[str] = set()
    for _ in range(60):
        await asyncio.sleep(2)
        pulled = await game.call("draw-guess.strokes", {"round_id": round_id})
        if pulled.get("ended"):
            break
        word = guess_word(pulled["strokes"])
        if word is None or word in tried:
            continue
        tried.add(word)
        verdict = await game.call("draw-guess.guess", {"round_id": round_id, "guess": word})
        if verdict["correct"]:
            return f"I guessed it: **{word}**!"
    return "I could not guess that one. Another round? Type `/game b`."


async def _tour(conversation: Conversation) -> str:
    """Everything once: the dashboard through its tools, a question over it, the
    whiteboard and its export (the consent dialog), and a round of the game."""
    await conversation.send_markdown("Welcome to the tour! First, your **Task Dashboard**.")
    board = await conversation.open_app("task-dashboard.open")
    for title in ("Try the whiteboard", "Play a round of Draw & Guess"):
        await board.call("task-dashboard.add_task", {"title": title})
    keep = await conversation.ask_confirm(
        "This question shows beside the app in front. Keep these tasks?",
        confirm_label="Keep them",
        cancel_label="Clear them",
        app_session_id=board.app_session_id,
        expires_in=WAIT,
    )
    if not keep:
        try:
            listed = await board.call("task-dashboard.list_tasks")
            for task in listed["tasks"]:
                await board.call("task-dashboard.complete_task", {"id": task["id"]})
        except ToolCallError as exc:
            if exc.code != ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            # Closed before the answer came: its tasks stay, and no other board's move.
            await conversation.send_markdown("You closed that dashboard, so I left it alone.")
    await conversation.send_markdown("Next, the **Whiteboard**: I draw, you may save it.")
    whiteboard, _ = await _whiteboard(conversation)
    try:
        saved = await whiteboard.call("whiteboard.export", {"format": "svg"})
        await conversation.send_markdown(f"Saved **{saved['name']}** ({saved['size']} bytes).")
    except ToolCallError as exc:
        await conversation.send_markdown(f"No file this time (`{exc.code}`).")
    await conversation.send_markdown("Last, **Draw & Guess**: guess what I draw.")
    game = await _round_a(conversation)
    return f"{game} That was the tour. `/help` lists everything."
