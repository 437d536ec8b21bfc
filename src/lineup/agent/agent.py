"""``Agent``: connect to the AppServer, receive envelopes in order, answer them.

Handlers for one conversation run one at a time, in sequence order; different
conversations run side by side. The cursor of a conversation advances (and is
saved) after its handlers finish, so a crash replays what was not handled:
handlers see each envelope at least once, and sends are made exactly-once by
their client-made ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import msgspec

from lineup import wire
from lineup.client import Backoff, Connection
from lineup.client.connection import stream_url
from lineup.logs import pseudonym
from lineup.protocol import (
    Envelope,
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

MessageHandler = Callable[[Conversation, MessageEnvelope], Awaitable[Any]]
EventHandler = Callable[[Conversation, Envelope], Awaitable[Any]]
ConversationHandler = Callable[[Conversation], Awaitable[Any]]
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])

_QUEUE_LIMIT = 10_000
_HISTORY_PAGE = 500


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
        self._message_handlers: list[MessageHandler] = []
        self._event_handlers: dict[str, list[EventHandler]] = {}
        self._conversation_handlers: list[ConversationHandler] = []
        self._handled: dict[str, int] = {}  # saved: handlers finished up to here
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
        )

    # --- registration --------------------------------------------------------------------

    def on_message(self, handler: MessageHandler) -> MessageHandler:
        """Call ``handler(conversation, envelope)`` for each message from the user."""
        self._message_handlers.append(handler)
        return handler

    def on_event(self, envelope_type: str) -> Callable[[H], H]:
        """Call the handler for every incoming envelope of ``envelope_type``."""

        def register(handler: H) -> H:
            self._event_handlers.setdefault(envelope_type, []).append(handler)
            return handler

        return register

    def on_conversation(self, handler: ConversationHandler) -> ConversationHandler:
        """Call ``handler(conversation)`` once per conversation when the agent first sees it."""
        self._conversation_handlers.append(handler)
        return handler

    # --- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled or ``stop()``; reconnects by itself."""
        async with httpx.AsyncClient(base_url=self.server_url, headers=self._auth) as http:
            me = msgspec.convert(await _checked(http.get("/v1/me")), wire.Me)
            self.agent_id = me.id
            if self.cursor_store is None:
                self.cursor_store = FileCursorStore(default_cursor_path(self.server_url, me.id))
            self._handled = self.cursor_store.load()
            self._saved = dict(self._handled)
            self._saver_closing = False
            self._received = dict(self._handled)
            for item in (await _checked(http.get("/v1/conversations")))["conversations"]:
                self._add_conversation(_conversation(item))
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
            log.warning("AppServer reported an error", extra={"code": str(frame.error.code)})

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
                "skipping an envelope this SDK cannot read",
                extra={"conversation_id": pseudonym(conversation_id), "seq": frame.seq},
            )
            envelope = None
        elif result.sender.kind == "agent":
            envelope = None  # our own words, echoed by the log
        else:
            envelope = result
        if conversation_id not in self.conversations:
            log.warning(
                "envelope for an unknown conversation",
                extra={"conversation_id": pseudonym(conversation_id)},
            )
            return
        if envelope is not None:
            self.conversations[conversation_id]._observe(frame.seq, envelope)
        queue = self._queues.get(conversation_id)
        if queue is None:
            self._start_worker(self.conversations[conversation_id])
            queue = self._queues[conversation_id]
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
        self._tasks.create_task(self._worker(conversation, queue))

    async def _worker(
        self, conversation: Conversation, queue: asyncio.Queue[tuple[int, Envelope | None]]
    ) -> None:
        if conversation.id not in self._handled:
            for index, handler in enumerate(self._conversation_handlers):
                scope = HandlerScope("conversation", _handler_key("conversation", index, handler))
                await self._call(handler, conversation, scope=scope)
        while True:
            seq, envelope = await queue.get()
            if seq == 0:
                return
            if envelope is not None:
                await self._dispatch(conversation, envelope)
            self._handled[conversation.id] = seq
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

    async def _dispatch(self, conversation: Conversation, envelope: Envelope) -> None:
        trigger = f"envelope:{envelope.id}"
        if isinstance(envelope, MessageEnvelope):
            for index, handler in enumerate(self._message_handlers):
                scope = HandlerScope(trigger, _handler_key("message", index, handler))
                await self._call(handler, conversation, envelope, scope=scope)
        kind = f"event:{envelope.type}"
        for index, event_handler in enumerate(self._event_handlers.get(envelope.type, ())):
            scope = HandlerScope(trigger, _handler_key(kind, index, event_handler))
            await self._call(event_handler, conversation, envelope, scope=scope)

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
            log.exception("handler failed", extra={"handler": getattr(handler, "__name__", "?")})
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
                    "history read failed; retrying",
                    extra={"conversation_id": pseudonym(conversation_id)},
                )
            else:
                if response.status_code not in (502, 503, 504):
                    page = msgspec.json.decode(_checked_bytes(response), type=wire.EnvelopePage)
                    return [(item.seq, bytes(item.envelope)) for item in page.envelopes]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), backoff.next_delay())


class _History:
    """What a conversation reads when the stream will not replay it (before the cursor)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def streamed_after(self, conversation_id: str) -> int:
        return self._agent._received.get(conversation_id, 0)

    async def read_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        return await self._agent._read_history_page(conversation_id, since)


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
