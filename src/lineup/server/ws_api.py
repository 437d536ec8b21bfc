"""The WebSocket stream: resumable per-conversation delivery and pipelined sends.

One connection carries three flows, each its own task in one task group:
the receive loop (frames in, sends queued to storage in arrival order), the ack
loop (answers in the same order, as commits land) and the stream loop
(envelopes out, from each conversation's cursor, with no gap and no repeat).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

import msgspec
from starlette.websockets import WebSocket, WebSocketDisconnect

from lineup import wire
from lineup.logs import pseudonym
from lineup.protocol import ErrorBody, ErrorCode

from .errors import ApiError
from .http_api import conversation_json
from .hub import Subscription
from .service import AppServerService
from .storage import AppendOutcome, AppendRequest, Principal, StorageError

log = logging.getLogger("lineup.server.ws")

MAX_FRAME_BYTES = 256 * 1024 + 4096
MAX_IN_FLIGHT = 1024
BACKLOG_PAGE = 500

_frame_decoder = msgspec.json.Decoder(wire.ClientFrame)
_encode = msgspec.json.encode


class _Closed(Exception):
    """The peer went away; ends the connection's task group."""


class StreamConnection:
    def __init__(self, websocket: WebSocket, service: AppServerService, principal: Principal):
        self.ws = websocket
        self.service = service
        self.principal = principal
        self.members: set[str] = set()
        # Sends queued to storage, oldest first; at most MAX_IN_FLIGHT at once.
        self.in_flight: deque[tuple[AppendRequest, asyncio.Future[AppendOutcome]]] = deque()
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._queued = asyncio.Event()
        self.subscription: Subscription | None = None
        self.cursors: dict[str, int] = {}
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._ack_loop())
                await self._receive_loop(tg)
        except* (_Closed, WebSocketDisconnect):
            pass
        finally:
            if self.subscription is not None:
                self.service.hub.detach(self.subscription)

    async def _send(self, data: bytes) -> None:
        async with self._send_lock:
            try:
                await self.ws.send_text(data.decode("utf-8"))
            except (WebSocketDisconnect, RuntimeError, OSError) as exc:
                raise _Closed from exc

    # --- inbound -----------------------------------------------------------------------

    async def _receive_loop(self, tg: asyncio.TaskGroup) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise _Closed
            data = message.get("bytes")
            if data is None:
                text = message.get("text") or ""
                data = text.encode("utf-8", "surrogatepass")
            if len(data) > MAX_FRAME_BYTES:
                await self._error(ErrorCode.ENVELOPE_TOO_LARGE, "frame is too large")
                continue
            try:
                frame = _frame_decoder.decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                await self._error(ErrorCode.INVALID_REQUEST, str(exc).splitlines()[0][:300])
                continue
            if isinstance(frame, wire.Send):
                await self._on_send(frame)
            elif isinstance(frame, wire.Subscribe):
                if self.subscription is not None:
                    await self._error(ErrorCode.INVALID_REQUEST, "already subscribed")
                    continue
                self.subscription = Subscription(self.principal, follow_new=frame.all)
                tg.create_task(self._stream_loop(frame))
            else:
                await self._send(_encode(wire.Pong()))

    async def _on_send(self, frame: wire.Send) -> None:
        raw = bytes(frame.envelope)
        await self._slots.acquire()  # backpressure: stop reading at MAX_IN_FLIGHT
        try:
            request = await self.service.prepare_send(
                self.principal, raw, known_member_of=self.members
            )
            future = self.service.storage.append_nowait(request)
        except ApiError as exc:
            self._slots.release()
            await self._send(_encode(wire.Nack(id=_envelope_id(raw), error=exc.body())))
            return
        except StorageError:
            self._slots.release()
            await self._error(ErrorCode.UNAVAILABLE, "storage is unavailable; resend later")
            return
        self.in_flight.append((request, future))
        self._queued.set()

    async def _ack_loop(self) -> None:
        """Answer sends in arrival order, batching the acks of every landed commit."""
        while True:
            while not self.in_flight:
                self._queued.clear()
                await self._queued.wait()
            await asyncio.wait((self.in_flight[0][1],))
            acks: list[wire.Ack] = []
            while self.in_flight and self.in_flight[0][1].done():
                request, future = self.in_flight.popleft()
                self._slots.release()
                try:
                    sent = self.service.finish_send(request, future.result())
                except (ApiError, StorageError) as exc:
                    if acks:
                        await self._send(_encode(wire.Acks(acks=acks)))
                        acks = []
                    error = (
                        exc
                        if isinstance(exc, ApiError)
                        else self.service.storage_failed(request, exc)
                    )
                    await self._send(_encode(wire.Nack(id=request.envelope_id, error=error.body())))
                else:
                    acks.append(
                        wire.Ack(
                            id=sent.envelope_id,
                            conversation_id=sent.conversation_id,
                            seq=sent.seq,
                            duplicate=sent.duplicate,
                        )
                    )
            if acks:
                await self._send(_encode(wire.Acks(acks=acks)))

    async def _error(self, code: ErrorCode, message: str) -> None:
        await self._send(_encode(wire.ErrorFrame(error=ErrorBody(code=code, message=message))))

    # --- outbound ------------------------------------------------------------------------

    async def _stream_loop(self, frame: wire.Subscribe) -> None:
        sub = self.subscription
        assert sub is not None
        hub = self.service.hub
        wanted: dict[str, int] = {}
        if frame.all:
            # Follow new conversations before listing the existing ones, so one
            # created in between is announced rather than missed.
            hub.attach(sub, ())
            for record in await self.service.list_conversations(self.principal):
                wanted[record.id] = 0
                self.members.add(record.id)
        for conversation_id, since in frame.cursors.items():
            if conversation_id not in self.members:
                try:
                    await self.service.authorize(self.principal, conversation_id)
                except ApiError as exc:
                    await self._send(_encode(wire.Nack(id=conversation_id, error=exc.body())))
                    continue
                self.members.add(conversation_id)
            wanted[conversation_id] = since
        self.cursors = dict(wanted)
        # Attach before reading backlogs so nothing committed in between is missed;
        # the cursor rule drops whatever arrives twice.
        hub.attach(sub, wanted)
        for conversation_id in wanted:
            await self._fill(conversation_id)
        await self._send(_encode(wire.Synced(cursors=dict(self.cursors))))
        while True:
            await sub.wake.wait()
            items, lagging, records = sub.take()
            for record in records:
                if record.id in self.cursors:
                    continue
                self.members.add(record.id)
                self.cursors[record.id] = 0
                await self._send(
                    _encode(wire.ConversationFrame(conversation=conversation_json(record)))
                )
                await self._fill(record.id)
            for item in items:
                cursor = self.cursors.get(item.conversation_id)
                if cursor is None or item.seq <= cursor:
                    continue
                if item.seq == cursor + 1:
                    await self._send(
                        wire.envelope_frame_bytes(item.conversation_id, item.seq, item.body)
                    )
                    self.cursors[item.conversation_id] = item.seq
                else:
                    await self._fill(item.conversation_id)
            for conversation_id in lagging:
                await self._fill(conversation_id)

    async def _fill(self, conversation_id: str) -> None:
        """Send everything stored after the cursor, page by page."""
        while True:
            since = self.cursors[conversation_id]
            page = await self.service.storage.read_since(conversation_id, since, BACKLOG_PAGE)
            for item in page:
                await self._send(wire.envelope_frame_bytes(conversation_id, item.seq, item.body))
                self.cursors[conversation_id] = item.seq
            if len(page) < BACKLOG_PAGE:
                return


def _envelope_id(raw: bytes) -> str | None:
    """Best-effort envelope id for a nack, so the sender can match it."""
    with contextlib.suppress(Exception):
        value = msgspec.json.decode(raw)
        if isinstance(value, dict):
            candidate = value.get("id")
            if isinstance(candidate, str) and len(candidate) <= 128:
                return candidate
    return None


async def stream_endpoint(websocket: WebSocket) -> None:
    service: AppServerService = websocket.app.state.service
    try:
        principal = await service.authenticate(websocket.headers.get("authorization"))
    except ApiError as exc:
        await websocket.close(code=4401, reason=exc.code.value)
        return
    await websocket.accept()
    log.info(
        "stream opened",
        extra={"principal": principal.kind, "principal_id": pseudonym(principal.id)},
    )
    await StreamConnection(websocket, service, principal).run()
    log.info(
        "stream closed",
        extra={"principal": principal.kind, "principal_id": pseudonym(principal.id)},
    )
