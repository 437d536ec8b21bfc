"""The agent's link to the AppServer: one WebSocket, reconnecting, resuming.

Sends are pipelined: each envelope is written at once and its future resolves
when the AppServer acknowledges it. Until then it stays in ``pending`` and is
written again after a reconnect with the same id, which the AppServer answers
with the original sequence number; so a resend is always harmless.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from lineup import wire

from .errors import AuthenticationFailed, ClientClosed, SendRejected

log = logging.getLogger("lineup.client")

FrameHandler = Callable[[wire.ServerFrame], Awaitable[None]]
ConnectionState = Literal["connecting", "connected", "reconnecting", "offline"]

_frame_decoder = msgspec.json.Decoder(wire.ServerFrame)
_encode = msgspec.json.encode


class Backoff:
    """Exponential backoff with full jitter (a delay drawn from ``uniform(0,
    ceiling)``, the ceiling doubling from ``base`` up to ``cap``); ``reset`` after a
    success."""

    def __init__(
        self, base: float = 0.2, cap: float = 10.0, rng: random.Random | None = None
    ) -> None:
        self.base = base
        self.cap = cap
        self.attempt = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        ceiling = min(self.cap, self.base * (2**self.attempt))
        self.attempt += 1
        return self._rng.uniform(0, ceiling)

    def reset(self) -> None:
        self.attempt = 0


class Connection:
    def __init__(
        self,
        ws_url: str,
        api_key: str,
        *,
        on_frame: FrameHandler,
        subscribe: Callable[[], wire.Subscribe],
        backoff: Backoff | None = None,
        on_state: Callable[[ConnectionState], None] | None = None,
    ) -> None:
        self.ws_url = ws_url
        self._on_state = on_state
        self.state: ConnectionState = "connecting"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._on_frame = on_frame
        self._subscribe = subscribe
        self._backoff = backoff or Backoff()
        self._ws: ClientConnection | None = None
        self._pending: dict[str, tuple[bytes, asyncio.Future[wire.Ack]]] = {}
        self._write_lock = asyncio.Lock()
        self.connected = asyncio.Event()
        self.connects = 0
        self._closed = False

    # --- sending -------------------------------------------------------------------------

    async def send_envelope(self, envelope_id: str, envelope: bytes) -> wire.Ack:
        """Send (and resend after reconnects) until the AppServer acknowledges."""
        if self._closed:
            raise ClientClosed("the client is stopped")
        existing = self._pending.get(envelope_id)
        if existing is not None:
            return await asyncio.shield(existing[1])
        frame = _encode(wire.Send(envelope=msgspec.Raw(envelope)))
        future: asyncio.Future[wire.Ack] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = (frame, future)
        ws = self._ws
        if ws is not None:
            await self._write(ws, frame)
        try:
            return await asyncio.shield(future)
        finally:
            if future.done():
                self._pending.pop(envelope_id, None)

    async def _write(self, ws: ClientConnection, data: bytes) -> None:
        try:
            async with self._write_lock:
                await ws.send(data.decode("utf-8"))
        except ConnectionClosed:
            pass  # resent after reconnect

    # --- the connection loop ----------------------------------------------------------------

    async def run(self) -> None:
        """Connect, subscribe, read frames; reconnect with backoff until closed."""
        while not self._closed:
            try:
                async with connect(
                    self.ws_url,
                    additional_headers=self._headers,
                    max_size=1024 * 1024,
                    open_timeout=10,
                    # A link that died without a FIN is noticed within 10-20 s.
                    ping_interval=10,
                    ping_timeout=10,
                    # Closing is final for us: never wait long for the server's echo
                    # (it may not read the close frame behind our own pipelined sends).
                    close_timeout=2,
                ) as ws:
                    await self._session(ws)
            except InvalidStatus as exc:
                status = exc.response.status_code
                if status in (401, 403):
                    self._fail_all(AuthenticationFailed("the AppServer refused the credentials"))
                    raise AuthenticationFailed("the AppServer refused the credentials") from None
                why = f"handshake refused, status {status}"
            except (OSError, ConnectionClosed, InvalidHandshake, TimeoutError) as exc:
                why = type(exc).__name__
            else:
                why = "stream closed"
            finally:
                self._ws = None
                self.connected.clear()
            if self._closed:
                break
            self._set_state("reconnecting")
            delay = self._backoff.next_delay()
            log.info("AppServer stream lost (%s); next try in %.1f s", why, delay)
            await asyncio.sleep(delay)
        self._set_state("offline")

    def _set_state(self, state: ConnectionState) -> None:
        if state != self.state:
            self.state = state
            if self._on_state is not None:
                self._on_state(state)

    async def _session(self, ws: ClientConnection) -> None:
        self._ws = ws
        self.connects += 1
        await self._write(ws, _encode(self._subscribe()))
        for pending_frame, _future in list(self._pending.values()):
            await self._write(ws, pending_frame)
        self.connected.set()
        self._set_state("connected")
        async for raw in ws:
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            try:
                frame: wire.ServerFrame = _frame_decoder.decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                log.warning("unreadable frame from the AppServer (%d bytes)", len(data))
                continue
            if isinstance(frame, wire.Acks):
                self._backoff.reset()
                for ack in frame.acks:
                    self._settle(ack.id, ack, None)
            elif isinstance(frame, wire.Nack):
                if frame.id is not None:
                    self._settle(frame.id, None, SendRejected(frame.error))
            else:
                if isinstance(frame, wire.Synced):
                    self._backoff.reset()
                await self._on_frame(frame)

    def _settle(self, envelope_id: str, ack: wire.Ack | None, error: Exception | None) -> None:
        entry = self._pending.pop(envelope_id, None)
        if entry is None or entry[1].done():
            return
        if error is not None:
            entry[1].set_exception(error)
        else:
            entry[1].set_result(ack)  # type: ignore[arg-type]

    def _fail_all(self, error: Exception) -> None:
        for _frame, future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()

    async def close(self) -> None:
        self._closed = True
        self._fail_all(ClientClosed("the client stopped"))
        ws = self._ws
        if ws is not None:
            await ws.close()

    @property
    def pending_count(self) -> int:
        return len(self._pending)


def stream_url(server_url: str) -> str:
    """The AppServer's WebSocket stream for an ``http(s)://`` base URL."""
    parts = urlsplit(server_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/v1/stream", "", ""))
