"""A conversation's timeline as the Runtime records it and as the shell shows it, for
the browser tests of history paging (issue 20).

``record_of`` derives from the Runtime's store alone, without the shell's code, the
rows the IM must show once every page of history is loaded, in the conversation's
order (synced rows by ``seq``; rows not sent yet last, by id): each row the views
show (``item_view``), except the rows of an app sub-session (``group_of``: its
interactions and the files its instance kept), which are inside their group; each
sub-session as one group row where its hidden ``app_session.opened`` row is (the
group's key is that row's id); of the agent's status rows only the newest, and only
while it says the agent is busy.

``shown_on`` reads what a page shows (``#items > li.item[data-key]``, and each group's
cards), ``page_back`` pages a tab all the way back the way a person does (scrolling to
the top, "Show earlier messages") until the button is gone and no history request is
left unanswered, and ``assert_shows_record`` compares the two with a diff that says
which rows are missing and what they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec
from playwright.async_api import Page, WebSocketRoute
from playwright.async_api import TimeoutError as PlaywrightTimeout

from lineup.host.views import group_of, in_group, item_view
from lineup.runtime import Runtime
from lineup.runtime.records import TimelineItem
from tests.support.browser_interactions import chat_id
from tests.support.webhost import Client

__all__ = [
    "HistoryReply",
    "HistoryWatch",
    "Link",
    "Record",
    "Shown",
    "arrived",
    "assert_shows_record",
    "page_back",
    "record_of",
    "say",
    "shown_on",
]

OPENED = "lineup.v1.app_session.opened"
STATUS = "lineup.v1.status"
IDLE_STATES = frozenset({"idle", "done"})
"""A status row in these states is not shown (the agent is not busy)."""
ALL_ROWS = 1_000_000
HOST_SOCKET = re.compile(r"^ws://[^/]+/host$")


@dataclass(frozen=True, slots=True)
class Record:
    """What the IM must show once all history is loaded."""

    keys: list[int]
    """The top-level rows, in order (a group by the key of its opened row)."""
    groups: dict[int, list[int]]
    """Group key -> the keys of its interaction cards, in order."""
    what: dict[int, str]
    """Every row of the conversation (shown or not) -> a short description."""
    total: int
    """How many rows the conversation holds, hidden ones included."""


@dataclass(frozen=True, slots=True)
class Shown:
    """What a page shows."""

    keys: list[int]
    groups: dict[int, list[int]]
    every: list[int]
    """Every ``li.item[data-key]`` under ``#items``, cards inside groups included."""


def _payload(row: TimelineItem) -> dict[str, object]:
    payload = msgspec.json.decode(row.body).get("payload", {})
    return payload if isinstance(payload, dict) else {}


def _order(row: TimelineItem) -> tuple[int, int, int]:
    return (0, row.seq, row.id) if row.seq is not None else (1, 0, row.id)


def describe(row: TimelineItem) -> str:
    """``#id seq=N type sender: text``: enough to tell what a missing row was."""
    payload = _payload(row)
    kind = row.type.removeprefix("lineup.v1.")
    detail = ""
    if row.interaction is not None:
        arguments = msgspec.json.decode(row.interaction.arguments)
        prompt = arguments.get("prompt") or arguments.get("text") or ""
        group = row.interaction.app_session_id
        detail = f"{row.interaction.state} {prompt!r}" + (f" in {group}" if group else "")
    elif row.artifact is not None:
        group = row.artifact.app_session_id
        detail = f"file {row.artifact.name!r}" + (f" in {group}" if group else "")
    elif row.type == OPENED:
        detail = f"group {payload.get('app_scope')} {payload.get('app_session_id')}"
    elif isinstance(payload.get("text"), str):
        detail = repr(str(payload["text"])[:48])
    elif "tool" in payload:
        detail = str(payload["tool"])
    elif "capability" in payload:
        detail = str(payload["capability"])
    elif "state" in payload and isinstance(payload["state"], str):
        detail = str(payload["state"])
    elif "message" in payload:
        detail = repr(str(payload["message"])[:48])
    return f"#{row.id} seq={row.seq} {kind} {row.sender_kind}: {detail}".rstrip()


async def record_of(runtime: Runtime, conversation_id: str) -> Record:
    """The Runtime's record of what the IM shows for ``conversation_id`` (see above)."""
    rows = sorted(await runtime.store.timeline(conversation_id, limit=ALL_ROWS), key=_order)
    assert len(rows) < ALL_ROWS
    statuses = [r for r in rows if r.type == STATUS]
    newest_status = statuses[-1] if statuses else None
    group_of_session: dict[str, int] = {}
    keys: list[int] = []
    for row in rows:
        if row.type == OPENED:
            session = str(_payload(row)["app_session_id"])
            assert session not in group_of_session, f"two opened rows for {session}"
            group_of_session[session] = row.id
            keys.append(row.id)
            continue
        if item_view(row) is None or in_group(row):
            continue
        if row.type == STATUS and (
            row is not newest_status or _payload(row).get("state") in IDLE_STATES
        ):
            continue
        keys.append(row.id)
    groups: dict[int, list[int]] = {key: [] for key in group_of_session.values()}
    for row in rows:
        session = group_of(row)
        if session is not None and item_view(row) is not None:
            groups[group_of_session[session]].append(row.id)
    return Record(keys, groups, {row.id: describe(row) for row in rows}, len(rows))


_SHOWN_JS = """() => {
  const items = document.getElementById("items");
  const top = [...items.querySelectorAll(":scope > li.item[data-key]")];
  const groups = {};
  for (const li of top) {
    if (!li.classList.contains("app-session")) continue;
    groups[li.dataset.key] = [
      ...li.querySelectorAll(".group-items > li.item[data-key]"),
    ].map((card) => Number(card.dataset.key));
  }
  return {
    keys: top.map((li) => Number(li.dataset.key)),
    groups,
    every: [...items.querySelectorAll("li.item[data-key]")].map((li) => Number(li.dataset.key)),
  };
}"""


async def shown_on(page: Page) -> Shown:
    found = await page.evaluate(_SHOWN_JS)
    groups = {int(key): [int(k) for k in cards] for key, cards in found["groups"].items()}
    return Shown([int(k) for k in found["keys"]], groups, [int(k) for k in found["every"]])


def _op(message: str | bytes) -> object:
    try:
        frame = json.loads(message)
    except ValueError:
        return None
    return frame.get("op") if isinstance(frame, dict) else None


@dataclass(eq=False)
class Link:
    """One host WebSocket of the tab, relayed by Playwright between the page and the
    Web Host (``route_web_socket``), so the test sees exactly what the page was given."""

    number: int
    """0 for the tab's first connection once watched, 1 for the next, ..."""
    watch: HistoryWatch
    page_side: WebSocketRoute
    server_side: WebSocketRoute
    open: bool = True
    outstanding: int = 0
    """History requests the page sent here that the Web Host has not answered."""

    def to_page(self, message: str | bytes) -> None:
        if not self.open:
            return
        self.page_side.send(message)
        if _op(message) == "history":
            self.watch.answered += 1
            self.watch.poke()

    async def lose(self, reason: str) -> None:
        """The connection breaks (both ends close), as when the Web Host drops it."""
        if not self.open:
            return
        self.open = False
        self.watch.poke()
        await self.page_side.close(code=1011, reason=reason)
        await self.server_side.close(code=1011, reason=reason)


HistoryReply = Callable[[Link, str | bytes], Awaitable[None]]
"""What to do with the Web Host's reply to a history request (the default: give it
to the page, ``link.to_page``)."""


async def _to_page(link: Link, message: str | bytes) -> None:
    link.to_page(message)


@dataclass(eq=False)
class HistoryWatch:
    """The history requests a tab sent on its host WebSockets and the replies it was
    given, per connection: a request still unanswered on a closed connection is void
    (the shell asks again on the new one). ``on_reply`` may hold a reply back or break
    the connection instead."""

    on_reply: HistoryReply = _to_page
    links: list[Link] = field(default_factory=list)
    sent: int = 0
    answered: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    async def on(cls, page: Page, on_reply: HistoryReply = _to_page) -> HistoryWatch:
        """Watch the host connections ``page`` opens from now on (before it loads)."""
        watch = cls(on_reply)
        await page.route_web_socket(HOST_SOCKET, watch._relay)
        return watch

    def _relay(self, page_side: WebSocketRoute) -> None:
        link = Link(len(self.links), self, page_side, page_side.connect_to_server())
        self.links.append(link)
        page_side.on_message(lambda message: self._from_page(link, message))
        link.server_side.on_message(lambda message: self._from_server(link, message))
        page_side.on_close(lambda _code, _reason: self._closed(link, link.server_side))
        link.server_side.on_close(lambda _code, _reason: self._closed(link, page_side))

    def _from_page(self, link: Link, message: str | bytes) -> None:
        if not link.open:
            return
        if _op(message) == "history":
            self.sent += 1
            link.outstanding += 1
            self.poke()
        link.server_side.send(message)

    async def _from_server(self, link: Link, message: str | bytes) -> None:
        if _op(message) != "history":
            link.to_page(message)
            return
        link.outstanding -= 1
        await self.on_reply(link, message)

    async def _closed(self, link: Link, other_side: WebSocketRoute) -> None:
        if link.open:
            link.open = False
            self.poke()
            await other_side.close()

    def poke(self) -> None:
        self._changed.set()

    @property
    def idle(self) -> bool:
        """No history request waits for its reply on an open connection."""
        return all(link.outstanding <= 0 for link in self.links if link.open)

    async def changed(self, within: float) -> None:
        """Until a history frame or a closed connection, or ``within`` seconds."""
        self._changed.clear()
        try:
            async with asyncio.timeout(within):
                await self._changed.wait()
        except TimeoutError:
            pass


_NEXT_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


QUIET = 0.5
"""Seconds without any history traffic after which paging back is over."""
STUCK = 5.0
"""Seconds the button may show without any history traffic before paging has stopped."""


async def page_back(page: Page, watch: HistoryWatch, *, within: float = 45) -> int:
    """Page the tab all the way back, as a person does: scroll the timeline to the top
    and press "Show earlier messages" while it shows, until it is gone, no history
    request is unanswered, none comes for a while and the rows stay as they are.
    Returns how many history replies the page got meanwhile. Fails when the button
    stays but paging has stopped (no history traffic at all for ``STUCK`` seconds)."""
    older = page.locator("#older")
    timeline = page.locator("#timeline")
    before = watch.answered
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last_traffic = (watch.sent, watch.answered, len(watch.links))
    quiet_since = loop.time()
    while True:
        assert loop.time() < deadline, (
            f"paging back did not finish within {within} s: the page got"
            f" {watch.answered - before} history pages, asked for {watch.sent} in all;"
            f" the button shows: {await older.is_visible()}"
        )
        await timeline.evaluate("(element) => { element.scrollTop = 0; }")
        if await older.is_visible():
            # The page the scroll asked for may come first and hide it.
            with contextlib.suppress(PlaywrightTimeout):
                await older.click(timeout=2_000)
        await page.evaluate(_NEXT_FRAMES)
        traffic = (watch.sent, watch.answered, len(watch.links))
        if traffic != last_traffic:
            last_traffic, quiet_since = traffic, loop.time()
        if await older.is_hidden() and watch.idle:
            rows = await shown_on(page)
            await watch.changed(within=QUIET)
            await page.evaluate(_NEXT_FRAMES)
            if (
                (watch.sent, watch.answered, len(watch.links)) == traffic
                and watch.idle
                and await older.is_hidden()
                and await shown_on(page) == rows
            ):
                return watch.answered - before
            continue
        if watch.idle:
            assert loop.time() - quiet_since < STUCK, (
                '"Show earlier messages" still shows, but scrolling to the top and pressing'
                f" it has asked the Runtime for nothing for {STUCK:.0f} s (the page got"
                f" {watch.answered - before} history pages)"
            )
        await watch.changed(within=1)


def _ranges(keys: Sequence[int], record: Record) -> list[str]:
    return [record.what.get(key, f"#{key} (not a row of this conversation)") for key in keys]


def _runs(missing: Sequence[int], record: Record) -> list[str]:
    """``record[i..j]``: each stretch of the record that is missing, with its ends."""
    gone = set(missing)
    runs: list[str] = []
    start: int | None = None
    for index, key in enumerate([*record.keys, None]):
        if key is not None and key in gone:
            start = index if start is None else start
            continue
        if start is not None:
            first, last = record.keys[start], record.keys[index - 1]
            if first == last:
                runs.append(f"record[{start}] (1 row): {record.what[first]}")
            else:
                runs.append(
                    f"record[{start}..{index - 1}] ({index - start} rows):"
                    f" {record.what[first]}  ...  {record.what[last]}"
                )
            start = None
    return runs


def _listing(title: str, lines: Iterable[str], limit: int = 40) -> str:
    lines = list(lines)
    shown = "\n    ".join(lines[:limit])
    more = f"\n    ... and {len(lines) - limit} more" if len(lines) > limit else ""
    return f"  {title} ({len(lines)}):\n    {shown}{more}" if lines else ""


def _first_difference(shown: Sequence[int], expected: Sequence[int]) -> int | None:
    for index, (a, b) in enumerate(zip(shown, expected, strict=False)):
        if a != b:
            return index
    return None if len(shown) == len(expected) else min(len(shown), len(expected))


def _around(keys: Sequence[int], index: int, record: Record) -> list[str]:
    start = max(0, index - 3)
    return [
        f"[{n}] {record.what.get(key, f'#{key}')}"
        for n, key in enumerate(keys[start : index + 4], start)
    ]


def assert_shows_record(shown: Shown, record: Record, where: str) -> None:
    """The page shows exactly the record: the same rows in the same order, each once,
    each group with its own cards."""
    problems: list[str] = []
    twice = sorted({key for key in shown.every if shown.every.count(key) > 1})
    if twice:
        problems.append(_listing("shown more than once", _ranges(twice, record)))
    index = _first_difference(shown.keys, record.keys)
    if index is not None:
        missing = [key for key in record.keys if key not in set(shown.keys)]
        extra = [key for key in shown.keys if key not in set(record.keys)]
        problems += [
            f"  the page shows {len(shown.keys)} rows, the Runtime's record has"
            f" {len(record.keys)} (of {record.total} rows stored);"
            f" the first difference is at index {index}",
            _listing("missing, as runs of the record", _runs(missing, record)),
            _listing("missing from the page", _ranges(missing, record)),
            _listing("shown but not in the record", _ranges(extra, record)),
            _listing("the record around it", _around(record.keys, index, record)),
            _listing("the page around it", _around(shown.keys, index, record)),
        ]
    for key, cards in record.groups.items():
        if key in shown.groups and shown.groups[key] != cards:
            problems.append(
                _listing(
                    f"group {record.what[key]} shows other cards",
                    _ranges(shown.groups[key], record),
                )
                + "\n"
                + _listing("its cards in the record", _ranges(cards, record))
            )
    problems = [p for p in problems if p]
    assert not problems, f"{where}: the page does not show the Runtime's record\n" + "\n".join(
        problems
    )


async def say(client: Client, text: str) -> str:
    """The agent says ``text``; its envelope id."""
    envelope_id = f"m-{uuid.uuid4().hex}"
    await client.pair.agent.send_text(await chat_id(client), text, envelope_id=envelope_id)
    return envelope_id


async def arrived(client: Client, envelope_id: str) -> None:
    """Wait (on Runtime events, not time) until the store holds this envelope."""
    await client.wait_for_envelope(await chat_id(client), envelope_id)
