"""``Agent``: connect to the AppServer, receive envelopes in order, answer them.

Each conversation has a queue. Handlers registered the default way run from it one
at a time, in sequence order: a handler that waits (for an answer, a tool result)
holds its conversation's queue until it returns. A handler registered with
``concurrent=True`` runs beside the queue instead: it starts the moment its envelope
arrives, while earlier handlers still wait, so a person's click or message is
answered at once even while a question is pending. Concurrent handlers of one
conversation start only after its ``on_conversation`` handlers have finished, and at
most ``CONCURRENT_LIMIT`` run at once per conversation (the next one waits for a
slot: backpressure on the stream, like a full queue). Different conversations run
side by side.

The cursor of a conversation advances (and is saved) only past envelopes whose
handlers have *all* finished, queued and concurrent: it stops before the oldest
envelope with a handler still running, so a crash or ``stop()`` replays it (and what
follows it). Handlers see each envelope at least once; sends are made exactly-once
by their client-made ids, and calls (``ask_*``, ``call_tool``, ``call_capability``)
by ids derived from the envelope, the handler and the call's position in it, so a
replayed handler makes the same calls and gets their recorded results.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import httpx
import msgspec

from lineup import wire
from lineup.client import Backoff, Connection
from lineup.client.connection import stream_url
from lineup.logs import pseudonym
from lineup.protocol import (
    Envelope,
    ErrorCode,
    ErrorResponse,
    MessageEnvelope,
    Rejection,
    Unsupported,
    decode,
)

from .conversation import Clock, Conversation, utcnow
from .cursor import CursorStore, FileCursorStore, default_cursor_path
from .errors import AgentClosed, AuthenticationFailed, SendRejected
from .ids import HandlerScope, handler_scope

log = logging.getLogger("lineup.agent")

for _noisy in ("httpx", "httpcore"):
    # The SDK's own request lines are off unless the user set a level on these loggers.
    if logging.getLogger(_noisy).level == logging.NOTSET:
        logging.getLogger(_noisy).setLevel(logging.WARNING)

MessageHandler = Callable[[Conversation, MessageEnvelope], Awaitable[Any]]
EventHandler = Callable[[Conversation, Envelope], Awaitable[Any]]
ConversationHandler = Callable[[Conversation], Awaitable[Any]]
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])

_QUEUE_LIMIT = 10_000
_HISTORY_PAGE = 500

CONCURRENT_LIMIT = 64
"""Concurrent handler invocations running at once in one conversation."""


class Agent:
    """An agent process's handle on LineUp.

    >>> agent = Agent("http://127.0.0.1:8765", api_key)
    >>> @agent.on_message
    ... async def echo(conv, message):
    ...     await conv.send_markdown(message.payload.text)
    >>> await agent.run()
    """

    def __init__(
        self,
        server_url: str,
        api_key: str,
        *,
        cursor_path: str | os.PathLike[str] | None = None,
        cursor_store: CursorStore | None = None,
        clock: Clock = utcnow,
        backoff: Backoff | None = None,
    ) -> None:
        self.server_url = server_url.rstrip("/")
        self.api_key = api_key
        if cursor_store is None and cursor_path is not None:
            cursor_store = FileCursorStore(cursor_path)
        self.cursor_store: CursorStore | None = cursor_store  # None: default file, set in run()
        self.clock = clock
        self.agent_id: str | None = None
        self.conversations: dict[str, Conversation] = {}
        self._message_handlers: list[_Registered] = []
        self._event_handlers: dict[str, list[_Registered]] = {}
        self._conversation_handlers: list[ConversationHandler] = []
        self._handled: dict[str, int] = {}  # saved: handlers finished up to here
        self._lanes: dict[str, _Lane] = {}  # concurrent handlers, per conversation
        self._received: dict[str, int] = {}  # seen on the stream
        self._saved: dict[str, int] = {}  # what the cursor store holds
        self._cursors_dirty = asyncio.Event()
        self._saver_closing = False
        self._queues: dict[str, asyncio.Queue[tuple[int, Envelope | None]]] = {}
        self._tasks: asyncio.TaskGroup | None = None
        self._stopped = asyncio.Event()
        self._history = _History(self)
        self.ready = asyncio.Event()
        self.connection = Connection(
            stream_url(self.server_url),
            api_key,
            on_frame=self._on_frame,
            subscribe=self._subscription,
            backoff=backoff,
            on_state=self._on_state,
        )
        self._first_backoff = backoff or Backoff()

    # --- registration --------------------------------------------------------------------

    @overload
    def on_message(self, handler: MessageHandler, /) -> MessageHandler: ...

    @overload
    def on_message(
        self, handler: None = None, /, *, concurrent: bool = False
    ) -> Callable[[MessageHandler], MessageHandler]: ...

    def on_message(
        self, handler: MessageHandler | None = None, /, *, concurrent: bool = False
    ) -> MessageHandler | Callable[[MessageHandler], MessageHandler]:
        """Call ``handler(conversation, envelope)`` for each message from the user
        (``@agent.on_message``), from the conversation's queue; with
        ``@agent.on_message(concurrent=True)``, beside it (see the module's doc)."""

        def register(handler: MessageHandler) -> MessageHandler:
            key = _handler_key("message", len(self._message_handlers), handler)
            self._message_handlers.append(_Registered(handler, key, concurrent))
            return handler

        return register if handler is None else register(handler)

    def on_event(self, envelope_type: str, *, concurrent: bool = False) -> Callable[[H], H]:
        """Call the handler for every incoming envelope of ``envelope_type``, from the
        conversation's queue, or beside it with ``concurrent=True``."""

        def register(handler: H) -> H:
            handlers = self._event_handlers.setdefault(envelope_type, [])
            key = _handler_key(f"event:{envelope_type}", len(handlers), handler)
            handlers.append(_Registered(handler, key, concurrent))
            return handler

        return register

    def on_conversation(self, handler: ConversationHandler) -> ConversationHandler:
        """Call ``handler(conversation)`` once per conversation when the agent first sees it."""
        self._conversation_handlers.append(handler)
        return handler

    # --- running ---------------------------------------------------------------------------

    async def run(self, *, handle_signals: bool = True) -> None:
        """Run until cancelled or ``stop()``; connects (the first time too) and
        reconnects by itself, with backoff. An API key the AppServer refuses raises
        ``AuthenticationFailed`` at once. ``handle_signals``: in the main thread, when
        the program handles SIGINT/SIGTERM the default way, the first Ctrl-C (or
        SIGTERM) stops the agent and ``run()`` returns; a second one exits at once
        (``lineup.stopping``). ``False`` leaves signals alone."""
        signals = None
        if handle_signals and _default_signals():
            from lineup.stopping import StopSignals

            signals = StopSignals(watchdog=False)
            signals.install()
            stopper = asyncio.ensure_future(self._stop_on(signals.event))
        try:
            await self._run()
        finally:
            if signals is not None:
                signals.remove()
                stopper.cancel()

    async def _stop_on(self, event: asyncio.Event) -> None:
        await event.wait()
        log.info("stopping")
        await self.stop()

    def _on_state(self, state: str) -> None:
        if state == "connected":
            log.info("connected to %s", self.server_url)

    async def _first_contact(self, http: httpx.AsyncClient) -> wire.Me:
        """``/v1/me``, retried with backoff while the AppServer is unreachable."""
        while True:
            if self._stopped.is_set():
                raise AgentClosed("the agent stopped")
            try:
                return msgspec.convert(await _checked(http.get("/v1/me")), wire.Me)
            except httpx.TransportError as exc:
                why = type(exc).__name__
            except SendRejected as exc:
                if exc.code not in (ErrorCode.UNAVAILABLE, ErrorCode.INTERNAL_ERROR):
                    raise
                why = exc.code
            delay = self._first_backoff.next_delay()
            log.info("AppServer unreachable (%s); next try in %.1f s", why, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), delay)

    async def _run(self) -> None:
        try:
            async with httpx.AsyncClient(base_url=self.server_url, headers=self._auth) as http:
                me = await self._first_contact(http)
                self._first_backoff.reset()
                self.agent_id = me.id
                if self.cursor_store is None:
                    self.cursor_store = FileCursorStore(default_cursor_path(self.server_url, me.id))
                self._handled = self.cursor_store.load()
                self._saved = dict(self._handled)
                self._saver_closing = False
                self._received = dict(self._handled)
                for item in (await _checked(http.get("/v1/conversations")))["conversations"]:
                    self._add_conversation(_conversation(item))
        except AgentClosed:
            return  # stopped before the first connection
        saver = asyncio.create_task(self._save_cursors(self.cursor_store))
        try:
            async with asyncio.TaskGroup() as tg:
                self._tasks = tg
                for conversation in list(self.conversations.values()):
                    self._start_worker(conversation)
                await self.connection.run()
        except* AgentClosed:
            pass
        finally:
            self._tasks = None
            self.ready.clear()
            self._saver_closing = True
            self._cursors_dirty.set()
            await saver  # the last handled cursors are on disk when run() returns

    async def stop(self) -> None:
        self._stopped.set()
        await self.connection.close()
        for conversation in self.conversations.values():
            # A handler waiting for an answer ends with AgentClosed; its cursor stays,
            # so a restarted agent replays it and asks the same call again.
            conversation._close()
        for queue in self._queues.values():
            queue.put_nowait((0, None))
        for lane in self._lanes.values():
            lane.cancel()  # unfinished: their envelopes stay after the cursor

    async def start_conversation(
        self, user_id: str, *, title: str = "", conversation_id: str | None = None
    ) -> Conversation:
        """Open (or, with the same ``conversation_id``, reopen) a conversation with a user."""
        body = wire.CreateConversation(user_id=user_id, title=title, id=conversation_id)
        async with httpx.AsyncClient(base_url=self.server_url, headers=self._auth) as http:
            data = await _checked(
                http.post("/v1/conversations", content=msgspec.json.encode(body), headers=_JSON)
            )
        return self._add_conversation(_conversation(data))

    @property
    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    # --- stream handling ----------------------------------------------------------------------

    def _subscription(self) -> wire.Subscribe:
        return wire.Subscribe(cursors=dict(self._received), all=True)

    async def _on_frame(self, frame: wire.ServerFrame) -> None:
        if isinstance(frame, wire.EnvelopeFrame):
            await self._on_envelope(frame)
        elif isinstance(frame, wire.ConversationFrame):
            conversation = self._add_conversation(frame.conversation)
            self._start_worker(conversation)
        elif isinstance(frame, wire.Synced):
            self.ready.set()
        elif isinstance(frame, wire.ErrorFrame):
            log.warning("AppServer reported an error: %s", frame.error.code)

    async def _on_envelope(self, frame: wire.EnvelopeFrame) -> None:
        """Note results and inventories on their conversation at once (a handler may be
        waiting for one while it holds the queue), then queue the envelope for the
        handlers and the cursor."""
        conversation_id = frame.conversation_id
        if frame.seq <= self._received.get(conversation_id, 0):
            return  # replayed after a reconnect; already queued or handled
        self._received[conversation_id] = frame.seq
        result = decode(bytes(frame.envelope))
        envelope: Envelope | None
        if isinstance(result, Rejection | Unsupported):
            log.warning(
                "skipping an envelope this SDK cannot read (conversation %s, seq %d)",
                pseudonym(conversation_id),
                frame.seq,
            )
            envelope = None
        elif result.sender.kind == "agent":
            envelope = None  # our own words, echoed by the log
        else:
            envelope = result
        if conversation_id not in self.conversations:
            log.warning("envelope for an unknown conversation (%s)", pseudonym(conversation_id))
            return
        conversation = self.conversations[conversation_id]
        if envelope is not None:
            conversation._observe(frame.seq, envelope)
        queue = self._queues.get(conversation_id)
        if queue is None:
            self._start_worker(conversation)
            queue = self._queues[conversation_id]
        lane = self._lanes.get(conversation_id)
        if envelope is not None and lane is not None:
            for handler in self._handlers_of(envelope):
                if handler.concurrent:
                    await lane.start(frame.seq, self._invoke(handler, conversation, envelope))
        await queue.put((frame.seq, envelope))

    def _add_conversation(self, conversation: wire.Conversation) -> Conversation:
        existing = self.conversations.get(conversation.id)
        if existing is not None:
            return existing
        created = Conversation(
            conversation.id,
            user_id=conversation.user_id,
            agent_id=conversation.agent_id,
            title=conversation.title,
            connection=self.connection,
            clock=self.clock,
            history=self._history,
        )
        self.conversations[conversation.id] = created
        return created

    def _start_worker(self, conversation: Conversation) -> None:
        if conversation.id in self._queues or self._tasks is None:
            return
        queue: asyncio.Queue[tuple[int, Envelope | None]] = asyncio.Queue(_QUEUE_LIMIT)
        self._queues[conversation.id] = queue
        lane = _Lane(self._tasks, self._handled.get(conversation.id, 0))
        lane.on_progress = lambda: self._advance(conversation.id, lane)
        self._lanes[conversation.id] = lane
        self._tasks.create_task(self._worker(conversation, queue, lane))

    async def _worker(
        self,
        conversation: Conversation,
        queue: asyncio.Queue[tuple[int, Envelope | None]],
        lane: _Lane,
    ) -> None:
        if conversation.id not in self._handled:
            for index, handler in enumerate(self._conversation_handlers):
                scope = HandlerScope("conversation", _handler_key("conversation", index, handler))
                await self._call(handler, conversation, scope=scope)
        lane.open.set()  # concurrent handlers may start now
        while True:
            seq, envelope = await queue.get()
            if seq == 0:
                return
            if envelope is not None:
                for registered in self._handlers_of(envelope):
                    if not registered.concurrent:
                        await self._invoke(registered, conversation, envelope)
            lane.queued_done = seq
            self._advance(conversation.id, lane)

    def _advance(self, conversation_id: str, lane: _Lane) -> None:
        """Move the cursor to just before the oldest envelope still being handled."""
        handled = lane.handled()
        if handled > self._handled.get(conversation_id, 0):
            self._handled[conversation_id] = handled
            self._cursors_dirty.set()

    async def _save_cursors(self, store: CursorStore) -> None:
        """Write the handled cursors off the event loop (a save fsyncs), coalescing
        saves that pile up while one is being written. Only this task writes the store."""
        while True:
            await self._cursors_dirty.wait()
            self._cursors_dirty.clear()
            if self._saved != self._handled:
                snapshot = dict(self._handled)
                try:
                    await asyncio.to_thread(store.save, snapshot)
                except OSError:
                    # The cursor only lags (a restart replays more); try again next time.
                    log.exception("could not save the agent's cursors")
                else:
                    self._saved = snapshot
            if self._saver_closing and not self._cursors_dirty.is_set():
                return

    def _handlers_of(self, envelope: Envelope) -> list[_Registered]:
        """The handlers an envelope goes to, in registration order."""
        handlers = list(self._message_handlers) if isinstance(envelope, MessageEnvelope) else []
        return handlers + self._event_handlers.get(envelope.type, [])

    async def _invoke(
        self, handler: _Registered, conversation: Conversation, envelope: Envelope
    ) -> None:
        scope = HandlerScope(f"envelope:{envelope.id}", handler.key)
        await self._call(handler.fn, conversation, envelope, scope=scope)

    async def _call(
        self, handler: Callable[..., Awaitable[Any]], *args: Any, scope: HandlerScope
    ) -> None:
        # The scope makes interactions asked by this handler invocation get ids derived
        # from what triggered it, so a replay after a restart asks the same calls.
        token = handler_scope.set(scope)
        try:
            await handler(*args)
        except AgentClosed:
            raise
        except Exception:
            # A failing handler must not stop the conversation; the error is the
            # agent author's to see, without the envelope's content.
            log.exception("handler %s failed", getattr(handler, "__name__", "?"))
        finally:
            handler_scope.reset(token)

    async def _read_history_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        """One page of a conversation's stored log, through the AppServer's HTTP read API;
        an unreachable or unavailable AppServer is retried with backoff until ``stop()``."""
        backoff = Backoff()
        url = f"/v1/conversations/{conversation_id}/envelopes"
        params = {"since": since, "limit": _HISTORY_PAGE}
        while True:
            if self._stopped.is_set():
                raise AgentClosed("the agent stopped")
            try:
                async with httpx.AsyncClient(
                    base_url=self.server_url, headers=self._auth, timeout=30
                ) as http:
                    response = await http.get(url, params=params)
            except httpx.TransportError:
                log.info(
                    "history read failed (conversation %s); retrying", pseudonym(conversation_id)
                )
            else:
                if response.status_code not in (502, 503, 504):
                    page = msgspec.json.decode(_checked_bytes(response), type=wire.EnvelopePage)
                    return [(item.seq, bytes(item.envelope)) for item in page.envelopes]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), backoff.next_delay())


@dataclass(frozen=True, slots=True)
class _Registered:
    fn: Callable[..., Awaitable[Any]]
    key: str  # stable across restarts: the call ids it derives depend on it
    concurrent: bool


class _Lane:
    """The concurrent handlers of one conversation, and how far its envelopes are
    handled: everything up to ``queued_done`` went through the queue, and the seqs in
    ``running`` still have a concurrent handler at work."""

    def __init__(self, tasks: asyncio.TaskGroup, handled: int) -> None:
        self._tasks = tasks
        self._slots = asyncio.Semaphore(CONCURRENT_LIMIT)
        self._running: collections.Counter[int] = collections.Counter()
        self._started: set[asyncio.Task[None]] = set()
        self.queued_done = handled
        self.open = asyncio.Event()  # set once the conversation's own handlers ran
        self.on_progress: Callable[[], None] = lambda: None

    def handled(self) -> int:
        if not self._running:
            return self.queued_done
        return min(self.queued_done, min(self._running) - 1)

    async def start(self, seq: int, handling: Awaitable[None]) -> None:
        """Run ``handling`` for envelope ``seq`` beside the queue (after waiting for a
        free slot); the envelope counts as handled once it returns."""
        await self._slots.acquire()
        self._running[seq] += 1
        task = self._tasks.create_task(self._run(seq, handling))
        self._started.add(task)
        task.add_done_callback(self._started.discard)

    async def _run(self, seq: int, handling: Awaitable[None]) -> None:
        finished = False
        try:
            await self.open.wait()
            await handling
            finished = True
        except AgentClosed:
            pass  # the agent stopped: the envelope stays unhandled, replayed next run
        finally:
            self._slots.release()
            if finished:
                self._running[seq] -= 1
                if not self._running[seq]:
                    del self._running[seq]
                self.on_progress()

    def cancel(self) -> None:
        for task in list(self._started):
            task.cancel()


class _History:
    """What a conversation reads when the stream will not replay it (before the cursor)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def streamed_after(self, conversation_id: str) -> int:
        return self._agent._received.get(conversation_id, 0)

    async def read_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        return await self._agent._read_history_page(conversation_id, since)


def _default_signals() -> bool:
    """In the main thread, with SIGINT and SIGTERM handled the default way."""
    if threading.current_thread() is not threading.main_thread():
        return False
    sigint = signal.getsignal(signal.SIGINT)
    # asyncio.run() puts its own SIGINT handler in place of the default one.
    owner = getattr(getattr(sigint, "func", sigint), "__self__", None)
    default = sigint is signal.default_int_handler or isinstance(owner, asyncio.Runner)
    return default and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)


def _handler_key(kind: str, index: int, handler: Callable[..., Any]) -> str:
    """Stable across restarts: where the handler is registered and what it is called."""
    name = getattr(handler, "__qualname__", None) or type(handler).__qualname__
    return f"{kind}:{index}:{getattr(handler, '__module__', '')}.{name}"


_JSON = {"Content-Type": "application/json"}


async def _checked(response_awaitable: Awaitable[httpx.Response]) -> Any:
    response = await response_awaitable
    _checked_bytes(response)
    return response.json()


def _checked_bytes(response: httpx.Response) -> bytes:
    if response.status_code == 401:
        raise AuthenticationFailed("the AppServer refused the API key")
    if response.status_code >= 400:
        raise SendRejected(msgspec.json.decode(response.content, type=ErrorResponse).error)
    return response.content


def _conversation(data: dict[str, Any]) -> wire.Conversation:
    return msgspec.convert(data, wire.Conversation)
