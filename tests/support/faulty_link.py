"""A faulty link: an asyncio TCP proxy on a loopback port in front of a real AppServer,
which cuts, delays, stalls and "drops", seeded and switchable while it runs.

Point a client (a ``Runtime``'s login URL, an ``Agent``'s server URL) at ``link.url``
instead of the AppServer's; everything it says, HTTP and the WebSocket stream, then
crosses the link. What each fault means at this layer:

- **cut**: both sides of one connection are aborted (no FIN, no flush: what the
  proxy holds is lost), now (``cut_all``) or once a connection has carried a random
  number of bytes (``FaultPlan.cut_after``).
- **drop**: a TCP proxy cannot lose bytes *inside* a stream without corrupting it
  (the receiver would read garbage, not a shorter stream); a dropped link loses the
  bytes in flight and the connection with them. So a drop forwards a random prefix
  of a chunk, discards the rest and cuts: the peer sees a frame cut off mid-way. A
  ``cut_after`` budget that runs out inside a chunk is a drop too.
- **delay**: a chunk is held ``delay_ms`` before it is forwarded (order is kept:
  each direction of a connection forwards one chunk at a time).
- **stall**: a connection stops forwarding in both directions for ``stall_ms``
  without closing, like a dead link that sends no FIN; nothing is lost, it just
  arrives late (``stall_all`` stalls every open connection).
- **duplicate**: duplicating bytes inside a TCP stream is meaningless too (the
  receiver would parse garbage). An application-level duplicate is a *resend*: the
  server received a request and acted on it, but the reply was lost, so the client
  sends the same thing again. ``FaultPlan.lose_reply`` does exactly that: after a
  client-to-server chunk of at least ``lose_reply_min_bytes`` (a WebSocket ``send``
  frame, not a ping), everything the server says on that connection is discarded
  and the connection is cut ``lose_reply_ms`` later; the client must resend its
  unacknowledged envelopes under the same ids, and the AppServer must store each
  once.

Decisions come from ``random.Random`` seeded per link and per connection
(``f"{seed}/{n}"``), so a seed replays the same decisions for the same sequence of
chunks; where chunks split is up to the OS, so a run is reproducible in its faults'
kind and density, not byte for byte. ``counts`` says what was injected.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field, fields

CHUNK = 4096


@dataclass(frozen=True)
class FaultPlan:
    """What the link does to each chunk; all zero (the default) forwards untouched.

    Probabilities are per chunk; ranges are ``(low, high)``, drawn uniformly."""

    cut_after: tuple[int, int] | None = None
    """Cut (mid-chunk: a drop) once a connection carried this many bytes, both ways."""
    drop: float = 0.0
    """Forward a random prefix of the chunk, lose the rest, cut."""
    delay: float = 0.0
    delay_ms: tuple[float, float] = (1.0, 20.0)
    stall: float = 0.0
    stall_ms: tuple[float, float] = (50.0, 300.0)
    lose_reply: float = 0.0
    """After a client chunk of at least ``lose_reply_min_bytes``: lose the replies, cut."""
    lose_reply_min_bytes: int = 100
    lose_reply_ms: float = 30.0


def _is_text_frame(chunk: bytes) -> bool:
    """A chunk that starts a client's WebSocket text frame (``send``, ``subscribe``),
    not an HTTP request, a ping or a close: FIN set, opcode 1 (RSV1 may be set)."""
    return chunk[0] & 0x8F == 0x81


@dataclass
class FaultCounts:
    connections: int = 0
    cuts: int = 0
    """Connections cut, whatever the reason (drops and lost replies included)."""
    drops: int = 0
    dropped_bytes: int = 0
    delays: int = 0
    delayed_ms: float = 0.0
    stalls: int = 0
    stalled_ms: float = 0.0
    lost_replies: int = 0
    """Cuts after a request reached the server whose reply was discarded (resends)."""
    lost_reply_bytes: int = 0
    bytes_up: int = 0
    bytes_down: int = 0

    @property
    def faults(self) -> int:
        """Every injected fault: cuts (drops and lost replies are cuts), delays, stalls."""
        return self.cuts + self.delays + self.stalls

    def as_dict(self) -> dict[str, int | float]:
        values: dict[str, int | float] = {f.name: getattr(self, f.name) for f in fields(self)}
        values["delayed_ms"] = round(self.delayed_ms)
        values["stalled_ms"] = round(self.stalled_ms)
        return values


class FaultyLink:
    """``async with FaultyLink(port, seed=7) as link:`` ... ``link.plan = FaultPlan(...)``."""

    def __init__(
        self,
        target_port: int,
        *,
        seed: int,
        plan: FaultPlan | None = None,
        target_host: str = "127.0.0.1",
    ) -> None:
        self.target = (target_host, target_port)
        self.seed = seed
        self.plan = plan or FaultPlan()
        """Read for every chunk: assign a new plan to switch faults at run time."""
        self.counts = FaultCounts()
        self._server: asyncio.Server | None = None
        self._pipes: set[_Pipe] = set()
        self._armed_lose_reply: int | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for pipe in list(self._pipes):
            pipe.cut()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FaultyLink:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- run-time controls --------------------------------------------------------------

    def cut_all(self) -> int:
        """Cut every open connection now; returns how many."""
        pipes = [pipe for pipe in self._pipes if not pipe.closed]
        for pipe in pipes:
            if not pipe.losing_replies:  # already counted, about to be cut
                self.counts.cuts += 1
            pipe.cut()
        return len(pipes)

    def stall_all(self, ms: float) -> None:
        """Stop forwarding on every open connection for ``ms`` (they stay open)."""
        for pipe in self._pipes:
            pipe.stall_for(ms)

    def arm_lose_reply(self, min_bytes: int = 200) -> None:
        """Once: the next client text frame of at least ``min_bytes`` reaches the server,
        its reply is lost and the connection cut (the client must resend)."""
        self._armed_lose_reply = min_bytes

    def _take_armed(self, chunk: bytes) -> bool:
        armed = self._armed_lose_reply
        if armed is None or len(chunk) < armed:
            return False
        self._armed_lose_reply = None
        return True

    def heal(self) -> None:
        """No more faults: back to forwarding untouched (open stalls end now)."""
        self.plan = FaultPlan()
        for pipe in self._pipes:
            pipe.resume()

    # --- connections -----------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.counts.connections += 1
        rng = random.Random(f"{self.seed}/{self.counts.connections}")
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        pipe = _Pipe(self, rng, writer, up_writer)
        self._pipes.add(pipe)
        try:
            await asyncio.gather(
                pipe.pump(reader, up_writer, upstream=True),
                pipe.pump(up_reader, writer, upstream=False),
            )
        finally:
            pipe.cut()
            self._pipes.discard(pipe)


@dataclass(eq=False)
class _Pipe:
    """One proxied connection: the client's side, the server's side, two pumps."""

    link: FaultyLink
    rng: random.Random
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    closed: bool = False
    budget: int | None = None
    losing_replies: bool = False
    running: asyncio.Event = field(default_factory=asyncio.Event)
    _resume_at: float = 0.0

    def __post_init__(self) -> None:
        self.running.set()
        self._new_budget()

    def _new_budget(self) -> None:
        cut_after = self.link.plan.cut_after
        self.budget = None if cut_after is None else self.rng.randint(*cut_after)

    def cut(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.transport.abort()
            self.server.transport.abort()
        self.running.set()  # wake stalled pumps: they see ``closed`` and end

    def stall_for(self, ms: float) -> None:
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        self.link.counts.stalls += 1
        self.link.counts.stalled_ms += ms
        self._resume_at = max(self._resume_at, loop.time() + ms / 1000)
        self.running.clear()
        loop.call_at(self._resume_at, self._maybe_resume)

    def _maybe_resume(self) -> None:
        if asyncio.get_running_loop().time() >= self._resume_at:
            self.running.set()

    def resume(self) -> None:
        self._resume_at = 0.0
        self.running.set()

    async def pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        counts = self.link.counts
        try:
            while not self.closed:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    break
                await self.running.wait()
                if self.closed:
                    return
                if not upstream and self.losing_replies:
                    counts.lost_reply_bytes += len(chunk)
                    continue
                plan = self.link.plan
                if plan.cut_after is not None and self.budget is None:
                    self._new_budget()  # the plan switched cuts on for this connection
                rng = self.rng
                if plan.stall and rng.random() < plan.stall:
                    self.stall_for(rng.uniform(*plan.stall_ms))
                    await self.running.wait()
                    if self.closed:
                        return
                if plan.delay and rng.random() < plan.delay:
                    ms = rng.uniform(*plan.delay_ms)
                    counts.delays += 1
                    counts.delayed_ms += ms
                    await asyncio.sleep(ms / 1000)  # the link's latency, not a test's wait
                    if self.closed:
                        return
                keep = len(chunk)
                if plan.drop and rng.random() < plan.drop:
                    keep = rng.randrange(len(chunk))
                elif self.budget is not None and plan.cut_after is not None:
                    if self.budget < len(chunk):
                        keep = self.budget
                    else:
                        self.budget -= len(chunk)
                if keep < len(chunk):
                    writer.write(chunk[:keep])
                    counts.drops += 1
                    counts.dropped_bytes += len(chunk) - keep
                    self._count(keep, upstream)
                    counts.cuts += 1
                    self.cut()
                    return
                writer.write(chunk)
                self._count(len(chunk), upstream)
                if upstream and _is_text_frame(chunk) and self._loses_reply(chunk, plan):
                    self.losing_replies = True
                    counts.lost_replies += 1
                    counts.cuts += 1
                    asyncio.get_running_loop().call_later(plan.lose_reply_ms / 1000, self.cut)
                    with contextlib.suppress(ConnectionError):
                        await writer.drain()
                    return  # nothing more goes up: the request is the last thing it heard
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not (upstream and self.losing_replies):  # a lost reply is cut by its timer
                self.cut()

    def _loses_reply(self, chunk: bytes, plan: FaultPlan) -> bool:
        if self.link._take_armed(chunk):
            return True
        return (
            plan.lose_reply > 0
            and len(chunk) >= plan.lose_reply_min_bytes
            and self.rng.random() < plan.lose_reply
        )

    def _count(self, n: int, upstream: bool) -> None:
        if upstream:
            self.link.counts.bytes_up += n
        else:
            self.link.counts.bytes_down += n
