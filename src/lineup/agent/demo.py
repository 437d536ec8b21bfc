"""The scripted demo agent used by ``lineup demo``: no model, just manners.

Its handlers run ``concurrent=True``: a question or a game waiting for the person
does not hold up the conversation, so chat, the Focus Timer's ``done`` and the
Whiteboard's strokes are answered at once. Every follow-up call names the app
instance it means (``open_app`` and ``AppInstance.call``): a call for a board that
was closed is refused, never carried out on another board.

It speaks the person's language as the Runtime's inventory says it (English unless
told otherwise, or for a language it does not have): every word it sends comes from
its own catalogue (``demo_locales``, i18next JSON like the client's). Its commands
stay the same in every language; Chinese names are understood too (``/看板``), as is
a full-width slash (U+FF0F, what a Chinese input method may type)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from datetime import timedelta
from importlib import resources

from lineup.i18n import DEFAULT, Catalogues, canonical
from lineup.protocol import (
    ClientInventoryEnvelope,
    Envelope,
    ErrorCode,
    MessageEnvelope,
    UiEventEnvelope,
)
from lineup.protocol.fields import MAX_TEXT_CHARS

from .agent import Agent
from .apps import AppInstance
from .conversation import Conversation
from .demo_mcp import mcp_command
from .errors import (
    CapabilityError,
    Dismissed,
    Expired,
    InteractionError,
    SendRejected,
    ToolCallError,
)

CATALOGUES = Catalogues(resources.files("lineup.agent").joinpath("demo_locales"))
"""The demo agent's words, one catalogue per language (its own, not the client's)."""

Say = Callable[..., str]
"""``say(key, **values)``: a string of the catalogue in the person's language."""

ALIASES = {
    "/帮助": "/help",
    "/通知": "/notice",
    "/选择": "/choose",
    "/确认": "/confirm",
    "/提问": "/ask",
    "/链接": "/link",
    "/复制": "/copy",
    "/保存": "/save",
    "/文件": "/file",
    "/提醒": "/notify",
    "/看板": "/dashboard",
    "/白板": "/whiteboard",
    "/游戏": "/game",
    "/计时": "/timer",
    "/导览": "/tour",
    "/工具": "/mcp",
}
"""The commands' Chinese names (the English ones work in every language)."""
MANY = ("many", "多选")
FULLWIDTH_SLASH = "\uff0f"

WAIT = timedelta(minutes=5)
COLOURS = ("blue", "green", "orange", "purple")

FOCUS_TIMER_ID = "dev.lineup.focus-timer"
"""The signed sample app ``lineup demo`` publishes (``/timer`` shows its ``card``)."""
TIMER_SURFACE = "card"
TIMER_PREFIX = "focus-timer."
"""The instance ids of the timers this agent opens (``focus-timer.<message id>``)."""
TIMER_MINUTES = 25
MAX_TIMER_MINUTES = 600
INVENTORY_WAIT = 10.0
"""Seconds ``/timer`` waits for a first inventory when none is known yet."""
SUN_WORDS = frozenset({"sun", "太阳"})
"""What counts as a right guess of round A's sun, in either language."""


def speech(locale: str | None) -> Say:
    """The demo's words in ``locale``: Simplified Chinese for any Chinese tag, else
    English."""
    return functools.partial(CATALOGUES.text, canonical(locale) or DEFAULT)


async def speech_for(conversation: Conversation) -> Say:
    """The demo's words in the person's language as the latest inventory says it
    (looked for in the history after a restart)."""
    return speech(conversation.locale or await conversation.known_locale())


def command_of(text: str) -> tuple[str, str]:
    """The command a message starts with (its English name) and the rest."""
    # Any whitespace ends the command: a Chinese input method may type U+3000.
    command, rest = ([*text.split(maxsplit=1), "", ""])[:2]
    if command.startswith(FULLWIDTH_SLASH):
        command = "/" + command[1:]
    return ALIASES.get(command, command), rest.strip()


async def _greet(conversation: Conversation, locale: str | None) -> None:
    try:
        await conversation.send_markdown(
            speech(locale)("welcome"), envelope_id=f"welcome.{conversation.id}"[:128]
        )
    except SendRejected as exc:
        if exc.code != ErrorCode.CONFLICT:
            raise  # conflict: greeted before this run (at another time, maybe in
            # another language); that greeting stands


def build_demo_agent(agent: Agent) -> Agent:
    # The greeting is in the person's language, so it waits until the Runtime knows it:
    # at once when it does, else when its inventory first says it (the person opened
    # their client), else before the first answer (a client that never says). A fixed
    # id makes it one message however often it is sent, across restarts too.
    greetings: dict[str, asyncio.Future[None]] = {}

    async def greet(conversation: Conversation, locale: str | None) -> None:
        """Send the greeting once (every later caller waits for that one send, so an
        answer never overtakes it)."""
        sending = greetings.get(conversation.id)
        if sending is None:
            sending = asyncio.ensure_future(_greet(conversation, locale))
            greetings[conversation.id] = sending
        try:
            await asyncio.shield(sending)
        except Exception:
            if greetings.get(conversation.id) is sending:
                del greetings[conversation.id]  # not sent: the next caller tries again
            raise

    @agent.on_conversation
    async def welcome(conversation: Conversation) -> None:
        locale = conversation.locale or await conversation.known_locale()
        if locale is not None:
            await greet(conversation, locale)

    @agent.on_event("lineup.v1.client.inventory", concurrent=True)
    async def language_known(conversation: Conversation, envelope: Envelope) -> None:
        if isinstance(envelope, ClientInventoryEnvelope) and envelope.payload.locale:
            await greet(conversation, envelope.payload.locale)

    @agent.on_message(concurrent=True)
    async def answer(conversation: Conversation, message: MessageEnvelope) -> None:
        say = await speech_for(conversation)
        await greet(conversation, conversation.locale)
        command, rest = command_of(message.payload.text)
        reply_id = f"reply.{message.id}"[:128]
        reply: str | None
        try:
            if command == "/timer":
                reply = await _timer(conversation, say, rest, f"{TIMER_PREFIX}{message.id}")
            else:
                reply = await _command(conversation, say, command, rest)
        except Expired:
            reply = say("error.expired")
        except Dismissed:
            reply = say("error.dismissed")
        except InteractionError as exc:
            reply = say("error.interaction", code=exc.code)
        except CapabilityError as exc:
            reply = say("error.capability", code=exc.code)
        except ToolCallError as exc:
            reply = _tool_failure(say, exc)
        if reply is None:
            reply = say("echo", text=message.payload.text[: MAX_TEXT_CHARS - 16])
        await conversation.send_markdown(reply, reply_to=message.id, envelope_id=reply_id)

    @agent.on_event("lineup.v1.ui.event", concurrent=True)
    async def surface_event(conversation: Conversation, envelope: Envelope) -> None:
        if not isinstance(envelope, UiEventEnvelope):
            return
        text = _event_reply(await speech_for(conversation), envelope)
        if text is not None:
            await conversation.send_markdown(text, envelope_id=f"reply.{envelope.id}"[:128])

    return agent


def _event_reply(say: Say, envelope: UiEventEnvelope) -> str | None:
    """The reply to what the person did in a surface: the timer's ``done``, the
    Whiteboard's "Send to agent" (its ``snapshot``; Draw & Guess's snapshots carry
    a ``round_id`` and are read by the game itself)."""
    event = envelope.payload
    if event.event == "done" and event.instance_id.startswith(TIMER_PREFIX):
        minutes = _count(event.data.get("minutes"))
        if minutes:
            return say("timer.done", count=minutes)
        return say("timer.done_plain")
    if event.event == "snapshot" and "round_id" not in event.data:
        strokes = event.data.get("strokes")
        total = _count(event.data.get("total"))
        if total is None:
            total = len(strokes) if isinstance(strokes, list) else 0
        if not total:
            return say("whiteboard.empty")
        return say("whiteboard.strokes", count=total)
    return None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _tool_failure(say: Say, exc: ToolCallError) -> str:
    if exc.code == ErrorCode.APP_INSTANCE_AMBIGUOUS:
        return say("error.ambiguous")
    if exc.code == ErrorCode.APP_INSTANCE_NOT_FOUND:
        return say("error.gone")
    return say("error.tool", code=exc.code)


async def _command(conversation: Conversation, say: Say, command: str, rest: str) -> str | None:
    """The reply to a command, or ``None`` when the message is not one."""
    if command == "/help":
        return say("help")
    if command == "/mcp":
        return await mcp_command(conversation, say, rest)
    if command == "/notice":
        await conversation.notify(
            rest or say("notice.default"), title=say("notice.title"), level="info"
        )
        return say("notice.done")
    if command == "/choose":
        colours = {c: say(f"colour.{c}") for c in COLOURS}
        if rest in MANY:
            picked = await conversation.ask_choice(
                say("choose.question_many"),
                colours,
                multiple=True,
                min_selected=2,
                max_selected=3,
                expires_in=WAIT,
            )
            listed = say("choose.separator").join(f"**{colours[c]}**" for c in picked)
            return say("choose.picked", colours=listed)
        colour = await conversation.ask_choice(say("choose.question"), colours, expires_in=WAIT)
        return say("choose.chose", colour=colours[colour])
    if command == "/confirm":
        confirmed = await conversation.ask_confirm(
            say("confirm.question"),
            confirm_label=say("confirm.delete"),
            cancel_label=say("confirm.keep"),
            danger=True,
            expires_in=WAIT,
        )
        return say("confirm.deleted") if confirmed else say("confirm.kept")
    if command == "/ask":
        name = await conversation.ask_input(
            say("ask.question"),
            placeholder=say("ask.placeholder"),
            min_length=1,
            max_length=80,
            expires_in=WAIT,
        )
        return say("ask.greeting", name=name.strip() or say("ask.friend"))
    if (reply := await _capability(conversation, say, command, rest)) is not None:
        return reply
    return await _miniapp(conversation, say, command, rest)


async def _timer(conversation: Conversation, say: Say, rest: str, instance_id: str) -> str:
    """Show the Focus Timer's card, at the version the person installed. The app is
    delivered signed, so it is there only once the person installed it from Apps."""
    minutes = TIMER_MINUTES
    if rest:
        # ASCII digits, and few of them: int() of a long string is slow or refused.
        digits = rest.isascii() and rest.isdigit() and len(rest) <= 3
        minutes = int(rest) if digits else 0
        if not 1 <= minutes <= MAX_TIMER_MINUTES:
            return say("timer.usage", max=MAX_TIMER_MINUTES)
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
        return say("timer.missing")
    await conversation.open_surface(
        FOCUS_TIMER_ID,
        app.version,
        instance_id=instance_id[:128],
        surface=TIMER_SURFACE,
        state={"minutes": minutes, "label": say("timer.label")},
        name=say("timer.name"),
    )
    return say("timer.ready", count=minutes)


async def _capability(conversation: Conversation, say: Say, command: str, rest: str) -> str | None:
    """Host capabilities: the person decides in the shell's consent dialog."""
    if command == "/link":
        url = rest or "https://example.com/"
        await conversation.call_capability(
            "app.open_url", {"url": url}, reason=say("link.reason"), expires_in=WAIT
        )
        return say("link.done")
    if command == "/copy":
        await conversation.call_capability(
            "clipboard.write",
            {"text": rest or say("copy.default")},
            reason=say("copy.reason"),
            expires_in=WAIT,
        )
        return say("copy.done")
    if command == "/save":
        saved = await conversation.call_capability(
            "artifact.save",
            {"name": "note.txt", "media_type": "text/plain", "text": rest or say("save.default")},
            reason=say("save.reason"),
            expires_in=WAIT,
        )
        return say("save.done", name=saved["name"], size=saved["size"])
    if command == "/file":
        picked = await conversation.call_capability(
            "device.pick_file", {}, reason=say("file.reason"), expires_in=WAIT
        )
        return say("file.done", name=picked["name"], size=picked["size"])
    if command == "/notify":
        await conversation.call_capability(
            "notification.show",
            {"title": rest or say("notify.default")},
            reason=say("notify.reason"),
            expires_in=WAIT,
        )
        return say("notify.done")
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


async def _miniapp(
    conversation: Conversation, say: Say, command: str, rest: str = ""
) -> str | None:
    """The reference MiniApps, driven through their tools."""
    if command == "/tour":
        return await _tour(conversation, say)
    if command == "/game" and rest.lower() == "b":
        return await _round_b(conversation, say)
    if command == "/dashboard":
        board = await conversation.open_app("task-dashboard.open")
        for task in ("report", "room", "reply"):
            await board.call("task-dashboard.add_task", {"title": say(f"dashboard.task.{task}")})
        listed = await board.call("task-dashboard.list_tasks")
        return say("dashboard.done", before=board.result["tasks"], count=len(listed["tasks"]))
    if command == "/whiteboard":
        return (await _whiteboard(conversation, say))[1]
    if command == "/game":
        return await _round_a(conversation, say)
    return None


async def _whiteboard(conversation: Conversation, say: Say) -> tuple[AppInstance, str]:
    """Open a Whiteboard and draw on it; the board and the reply."""
    board = await conversation.open_app("whiteboard.open")
    strokes = [
        {"kind": "rect", "points": [[60, 60], [260, 180]], "color": "#3358d4", "width": 4},
        {
            "kind": "text",
            "points": [[80, 130]],
            "color": "#1d2330",
            "width": 2,
            "text": say("whiteboard.hello"),
        },
    ]
    added = await board.call("whiteboard.draw", {"strokes": strokes})
    return board, say("whiteboard.done", count=added["added"])


async def _round_a(conversation: Conversation, say: Say) -> str:
    """Round A: the demo agent draws a sun, the person guesses (the game waits for
    each guess; the other handlers keep answering meanwhile)."""
    from lineup.miniapps.draw_guess_matcher import same_word

    word = say("word.sun")
    game = await conversation.open_app(
        "draw-guess.start_round_a",
        {"word_length": len(word), "hint": say("game.hint"), "seconds": 120},
    )
    round_id = game.result["round_id"]
    for points in SUN:
        await game.call("draw-guess.draw", {"round_id": round_id, "strokes": [{"points": points}]})
    for _ in range(5):
        guess = await game.call("draw-guess.next_guess", {"round_id": round_id})
        if guess.get("guess") is None:
            break  # the round ended (time ran out)
        said = str(guess["guess"])
        correct = same_word(said, "sun") or said.strip().lower() in SUN_WORDS | {word}
        await game.call(
            "draw-guess.judge",
            {"round_id": round_id, "correct": correct, "hint": say("game.hint_again")},
        )
        if correct:
            return say("game.right")
    await game.call("draw-guess.end_round", {"round_id": round_id, "word": word})
    return say("game.reveal")


async def _round_b(conversation: Conversation, say: Say) -> str:
    """Round B: the person draws, the demo agent looks at the strokes now and then
    and guesses with the small matcher (a real agent would use its own model)."""
    from lineup.miniapps.draw_guess_matcher import guess_word

    game = await conversation.open_app(
        "draw-guess.start_round_b", {"word": say("word.sun"), "seconds": 120}
    )
    round_id = game.result["round_id"]
    tried: set[str] = set()
    for _ in range(60):
        await asyncio.sleep(2)
        pulled = await game.call("draw-guess.strokes", {"round_id": round_id})
        if pulled.get("ended"):
            break
        found = guess_word(pulled["strokes"])
        if found is None or found in tried:
            continue
        tried.add(found)
        word = say(f"word.{found}")  # the matcher's words are English
        verdict = await game.call("draw-guess.guess", {"round_id": round_id, "guess": word})
        if verdict["correct"]:
            return say("game.guessed", word=word)
    return say("game.gave_up")


async def _tour(conversation: Conversation, say: Say) -> str:
    """Everything once: the dashboard through its tools, a question over it, the
    whiteboard and its export (the consent dialog), and a round of the game."""
    await conversation.send_markdown(say("tour.start"))
    board = await conversation.open_app("task-dashboard.open")
    for task in ("whiteboard", "game"):
        await board.call("task-dashboard.add_task", {"title": say(f"tour.task.{task}")})
    keep = await conversation.ask_confirm(
        say("tour.keep_question"),
        confirm_label=say("tour.keep"),
        cancel_label=say("tour.clear"),
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
            await conversation.send_markdown(say("tour.closed"))
    await conversation.send_markdown(say("tour.whiteboard"))
    whiteboard, _ = await _whiteboard(conversation, say)
    try:
        saved = await whiteboard.call("whiteboard.export", {"format": "svg"})
        await conversation.send_markdown(say("tour.saved", name=saved["name"], size=saved["size"]))
    except ToolCallError as exc:
        await conversation.send_markdown(say("tour.no_file", code=exc.code))
    await conversation.send_markdown(say("tour.game"))
    game = await _round_a(conversation, say)
    return say("tour.end", game=game)
