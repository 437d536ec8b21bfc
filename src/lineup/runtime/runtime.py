"""``Runtime``: one per user; the only owner of transport, store, sync and outbox.

It logs in to the AppServer (the token stays here), keeps every conversation in a
local SQLite store, applies the stream in order from stored cursors, and sends
through a transactional outbox: a message is shown as ``sending`` and queued in one
transaction, then sent until the AppServer acknowledges it, across reconnects and
restarts. Hosts watch it through events; they never touch the transport or store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lineup import wire
from lineup.client import AuthenticationFailed, Backoff, ClientClosed, Connection, SendRejected
from lineup.client.connection import ConnectionState, stream_url
from lineup.delivery.cache import VerifiedCache
from lineup.delivery.catalog import CatalogClient
from lineup.protocol import (
    ErrorCode,
    MessageEnvelope,
    Rejection,
    Sender,
    decode,
    encode,
    payloads,
)
from lineup.protocol.interactions import MAX_INPUT_CHARS
from lineup.protocol.payloads import ClientInventory

from . import appserver_api, preferences, receive, ui_surfaces
from .apps import registry
from .apps.app_api import AppApi
from .apps.installer import CATALOG_INTERVAL, AppDelivery
from .apps.kernel import AppKernel
from .apps.registry import AppRegistry
from .apps.router import ToolRouter
from .apps.sessions_view import (
    AppSessionGroup,
    read_groups,
    read_groups_by_id,
    read_groups_of_instances,
)
from .capabilities import queries as capability_queries
from .capabilities.gateway import CapabilityGateway
from .dev_surfaces import DevSurface, DevSurfaces
from .events import (
    AppsChanged,
    ConnectionChanged,
    InventoryChanged,
    Listener,
    RuntimeEvent,
)
from .host_sessions import HostSessions
from .interaction_store import Outcome
from .mcp.config import ServerConfig
from .mcp.elicitation_store import ElicitationRecord
from .mcp.elicitor import Elicitor
from .mcp.gateway import McpGateway
from .mcp.results import ElicitAnswer
from .receive import DEFAULT_SCOPE, INVENTORY, classify
from .records import (
    ConversationInfo,
    InteractionRecord,
    OutboxItem,
    Received,
    Session,
    SurfaceRecord,
    TimelineItem,
)
from .store import RuntimeStore, upsert_conversation_txn
from .tables import has_session
from .timeline_pages import TimelinePage
from .txn import RuntimeTxn
from .ui_surfaces import UiEventRefused

log = logging.getLogger("lineup.runtime")

STORE_FILE = "runtime.sqlite3"
LOCK_FILE = "runtime.lock"
VERIFIED_CACHE_DIR = "apps/verified"
"""Under the data dir: signed MiniApp artifacts that passed verification."""


MAX_DRAFTS = 1000
MAX_EXPIRY_WAIT_S = 60.0
"""The expiry timer re-reads the clock at least this often (clock jumps, suspend)."""


class DataDirInUse(Exception):
    """Another Runtime holds this data directory."""


class NotLoggedIn(Exception):
    """The Runtime has no AppServer session; log in first."""


class InteractionRefused(Exception):
    """An answer that did not count: ``code`` says why (``call_already_final``,
    ``interaction_expired``, ``interaction_not_found``, ``answer_invalid``)."""

    def __init__(self, code: str, record: InteractionRecord | None) -> None:
        super().__init__(code)
        self.code = code
        self.record = record


class Runtime:
    def __init__(
        self,
        data_dir: str | Path,
        *,
        clock: Callable[[], datetime] | None = None,
        backoff: Backoff | None = None,
        known_scopes: frozenset[str] = frozenset({DEFAULT_SCOPE}),
        inline_surfaces: Collection[str] = (),
        catalog_interval: float | None = CATALOG_INTERVAL,
        dev_surfaces: str | Path | None = None,
        mcp_servers: Sequence[ServerConfig] = (),
    ) -> None:
        """``inline_surfaces``: dev mode only, the integrities of inline surface
        bundles (``ui.open`` with ``html``/``css``/``js``) this Runtime accepts; empty
        (the default) accepts none. ``catalog_interval``: seconds between catalog
        fetches while running (one at start); ``None`` fetches only when asked.
        ``dev_surfaces``: dev mode only, a directory whose bundles (one per
        subdirectory) agents may open as surfaces, read afresh at every ``ui.open`` and
        mount (``dev_surfaces.DevSurfaces``); ``None`` (the default): none.
        ``mcp_servers``: the MCP servers the person configured (``mcp.config``), run
        while the Runtime runs (``mcp.connection``)."""
        self._catalog_interval = catalog_interval
        self._lock_fd: int | None = None
        self.data_dir = Path(data_dir)
        self.inline_surfaces = frozenset(inline_surfaces)
        self.dev_surfaces = None if dev_surfaces is None else DevSurfaces(Path(dev_surfaces))
        self._clock = clock or (lambda: datetime.now(UTC))
        self.store = RuntimeStore(self.data_dir / STORE_FILE, clock=self._clock)
        self._backoff = backoff
        self._known_scopes = known_scopes
        self.session: Session | None = None
        self.state: ConnectionState | str = "offline"
        self._listeners: list[Listener] = []
        self._connection: Connection | None = None
        self._tasks: asyncio.TaskGroup | None = None
        self._cursors: dict[str, int] = {}
        self._incoming: list[Received] = []
        self._incoming_ready = asyncio.Event()
        self.ready = asyncio.Event()
        self.logged_in = asyncio.Event()
        self._expiry_changed = asyncio.Event()
        self._drafts: dict[str, str] = {}  # interaction id -> unsent input (memory only)
        self.apps = AppKernel(self.store, clock=self._clock)
        """The MiniApp kernel: instances, focus and their sub-sessions."""
        self.registry = AppRegistry(self.store, clock=self._clock, initial=INVENTORY)
        """Installed and enabled apps; the inventory they make."""
        self.tools = ToolRouter(self.store, clock=self._clock)
        """The Tool Router's app side: results, timeouts, acks of ordinary tool calls."""
        self.capabilities = CapabilityGateway(self.store, clock=self._clock)
        """Host capabilities: what agents and apps request, decided and answered once."""
        self.app_api = AppApi(
            self.store, self.apps, self.tools, self.capabilities, clock=self._clock
        )
        """What a MiniApp may ask (the MiniApp SDK's requests, through a host)."""
        self.delivery = AppDelivery(
            self.store,
            VerifiedCache(self.data_dir / VERIFIED_CACHE_DIR),
            clock=self._clock,
            catalog_client=self._catalog_client,
        )
        """Signed delivery: trusted keys, the catalog, install, update, revoke, remove."""
        self._mcp_servers = tuple(mcp_servers)
        self.elicitor = Elicitor(self.store, clock=self._clock)
        """MCP servers' forms (``elicitation/create``): shown as cards, answered once."""
        connect = listing = None
        if self._mcp_servers:  # the MCP SDK is imported only by a Runtime that runs servers
            from .mcp import connect as mcp_connect

            connect, listing = mcp_connect.connect(elicit=self.elicit), mcp_connect.listing
        self.mcp = McpGateway(
            self.store, clock=self._clock, connect=connect, listing=listing, notify=self._emit
        )
        """MCP servers: their tools in the inventory, the calls agents make of them."""
        self._scopes = self._known_scopes
        # After the kernel and the registry (they adopt their values first): what every
        # committed unit of work sends, tells and wakes.
        self.store.listen(
            send=self._start_send, emit=self._emit, deadline_added=self._expiry_changed.set
        )

    # --- lifecycle --------------------------------------------------------------------------

    async def open(self) -> None:
        self._lock_data_dir()
        await self.store.open()
        await self.apps.recover()  # starting/stopping instances become suspended
        self.session = await self.store.load_session()
        if self.session is not None:
            self.logged_in.set()
        await self.capabilities.recover()  # calls a stop caught approved never run again
        await self.mcp.recover()  # MCP calls a stop caught executing never run again
        await self.elicitor.recover()  # and the servers' forms they had open end cancelled
        await self.registry.load()  # the stored inventory (bumped if the content changed)
        await self.delivery.open()  # what a crash left in the verified cache goes
        if self.dev_surfaces is not None:  # one line each for what DIR holds that is refused
            await asyncio.to_thread(self.dev_surfaces.report)

    async def close(self) -> None:
        await self.stop()
        await self.store.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the lock
            self._lock_fd = None

    def _lock_data_dir(self) -> None:
        """One Runtime per data directory: a second one (another process, a second
        ``lineup client``) would sweep the first one's verified cache mid-install and
        race its sync loop. Raises ``DataDirInUse``."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory locks here yet
            return
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirInUse("another LineUp Runtime uses this data directory") from None
        self._lock_fd = fd

    @property
    def inventory(self) -> ClientInventory:
        """What this Runtime advertises now (``inv-<n>``, monotonic)."""
        return self.registry.inventory

    def _accept_scopes(self, inventory: ClientInventory) -> None:
        """The inventory was recomputed (and published in that transaction): accept
        calls for the enabled apps' scopes."""
        scopes = {t.target.app_scope for t in inventory.tools if t.target is not None}
        self._scopes = self._known_scopes | scopes

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Hear about timeline and connection changes; returns the unsubscribe call."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _emit(self, event: RuntimeEvent) -> None:
        self.mcp.on_event(event)  # forwards and cancels what the MCP calls' rules decided
        self.elicitor.on_event(event)  # a call that ended takes its open forms with it
        if isinstance(event, InventoryChanged):
            self._accept_scopes(event.inventory)
            return  # internal: hosts are not told
        if isinstance(event, AppsChanged) and not event.effects:
            return  # the kernel adopted the value; nothing for hosts
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # one host's bug never stops the others hearing
                log.error("runtime listener failed", extra={"error": type(exc).__name__})

    # --- session ----------------------------------------------------------------------------

    async def login(self, server_url: str, username: str, password: str) -> Session:
        """Log in to the AppServer; the token is stored here and never given out."""
        self.session = await appserver_api.login(server_url, username, password)
        await self.store.save_session(self.session)
        self.logged_in.set()
        return self.session

    def _session(self) -> Session:
        if self.session is None:
            raise NotLoggedIn("log in to an AppServer first")
        return self.session

    # --- conversations ----------------------------------------------------------------------

    async def open_conversation(
        self, agent_id: str, *, conversation_id: str | None = None, title: str = ""
    ) -> ConversationInfo:
        """Create (or, with the same id, find) a conversation with ``agent_id``."""
        record = await appserver_api.create_conversation(
            self._session(), agent_id, conversation_id, title
        )
        await self._conversation_known(record.id, record.agent_id, record.title)
        return ConversationInfo(record.id, record.agent_id, record.title, 0)

    async def _sync_conversation_list(self) -> None:
        """Learn the conversations the AppServer has for this user. Best effort: with
        the AppServer down or failing, the Runtime starts anyway (its outbox waits,
        and the stream announces conversations once it connects)."""
        for record in await appserver_api.list_conversations(self._session()) or []:
            await self.store.upsert_conversation(record.id, record.agent_id, record.title)

    # --- sending ----------------------------------------------------------------------------

    async def send_message(self, conversation_id: str, text: str) -> TimelineItem:
        """Show the message as ``sending`` and queue it durably; it leaves when it can."""
        session = self._session()
        envelope = MessageEnvelope(
            id=f"msg_{uuid.uuid4().hex}",
            conversation_id=conversation_id,
            sender=Sender(kind="user", id=session.user_id),
            created_at=self._clock(),
            payload=payloads.Message(text=text),
        )
        body = encode(envelope)
        checked = decode(body)
        if isinstance(checked, Rejection):
            raise SendRejected(checked.as_body())
        return await self.store.queue_envelope(
            conversation_id, envelope.id, envelope.type, "user", body
        )

    async def retry(self, conversation_id: str, envelope_id: str) -> TimelineItem | None:
        return await self.store.retry(conversation_id, envelope_id)

    # --- interactions ---------------------------------------------------------------------

    async def answer(
        self, interaction_id: str, conversation_id: str, value: object
    ) -> InteractionRecord:
        """The person answers an interaction. Only the first valid answer counts:
        anything else raises ``InteractionRefused`` and changes nothing (an answer
        that arrives after ``expires_at`` finds the interaction expired)."""
        outcome = await self.store.answer(interaction_id, conversation_id, value)
        self._after(outcome)
        if not outcome.won or outcome.interaction is None:
            code = outcome.code or ErrorCode.CALL_ALREADY_FINAL
            log.info("answer refused", extra={"interaction": interaction_id[:64], "code": code})
            raise InteractionRefused(code, outcome.interaction)
        return outcome.interaction

    # --- MCP servers' forms ---------------------------------------------------------------

    async def elicit(
        self, server_key: str, message: str, requested_schema: dict[str, Any]
    ) -> ElicitAnswer:
        """An MCP server asks the person to fill in a form (``elicitation/create``,
        form mode; ``connection.Elicit``). It is shown in the conversation of the call
        the server is running (its most recently forwarded call still executing) and
        answered once: by the person (accept, decline, cancel), or ``cancel`` when it
        expires (10 minutes, never past the call's deadline), when that call ends, or
        when the server withdraws it. With no such call, or a schema MCP does not
        allow, it is declined at once and nothing is shown."""
        return await self.elicitor.elicit(server_key, message, requested_schema)

    async def answer_elicitation(
        self,
        elicitation_id: str,
        conversation_id: str,
        action: str,
        content: dict[str, Any] | None = None,
    ) -> ElicitationRecord:
        """The person's ``accept`` (with ``content``, checked against the server's
        schema), ``decline`` or ``cancel`` of a form. Only the first counts: anything
        else raises ``mcp.elicitor.ElicitationRefused`` (``elicitation_not_found``,
        ``elicitation_answer_invalid``, ``call_already_final``, ``interaction_expired``)
        and changes nothing."""
        return await self.elicitor.answer(elicitation_id, conversation_id, action, content)

    async def expire_due(self) -> int:
        """Expire every pending interaction whose ``expires_at`` has passed."""
        outcomes = await self.store.expire_due()
        for outcome in outcomes:
            self._after(outcome)
        return sum(1 for outcome in outcomes if outcome.outbox is not None)

    async def fail_interaction(self, interaction_id: str) -> Outcome:
        """End a pending interaction because the Runtime cannot complete it."""
        outcome = await self.store.fail_interaction(interaction_id)
        self._after(outcome)
        return outcome

    def clock(self) -> datetime:
        """The Runtime's (injectable) clock: expiry is decided by it."""
        return self._clock()

    def set_draft(self, interaction_id: str, text: str) -> bool:
        """Remember unsent input in memory only: a reload shows it, a restart forgets it."""
        if len(text) > MAX_INPUT_CHARS:
            return False
        if not text:
            self._drafts.pop(interaction_id, None)
        elif interaction_id in self._drafts or len(self._drafts) < MAX_DRAFTS:
            self._drafts[interaction_id] = text
        else:
            return False
        return True

    def drafts(self) -> dict[str, str]:
        return dict(self._drafts)

    def _after(self, outcome: Outcome) -> None:
        """The card and the result followed the commit; what is left is the Runtime's
        memory (the draft goes) and the log."""
        record = outcome.interaction
        if outcome.outbox is not None and record is not None and record.final_at is not None:
            # Ids, tool and state only: never the prompt, the arguments or the answer.
            log.info(
                "interaction ended",
                extra={"interaction": record.id, "tool": record.tool, "state": record.state},
            )
        if outcome.outbox is not None and outcome.interaction is not None:
            self._drafts.pop(outcome.interaction.id, None)

    async def _expiry_loop(self) -> None:
        """Fire each pending interaction's expiry at its stored ``expires_at``, also
        for interactions created before a restart (and the calls' deadlines likewise).

        The due passes are writes, and the store has one writer: they run at start, at
        each deadline and at least every ``MAX_EXPIRY_WAIT_S``, but a wake-up for a new
        deadline (every call stores one) runs them only when something is due by then,
        so a busy Runtime's calls do not queue behind four empty passes each."""
        scheduled = False  # woken for a new deadline, not by the clock
        while True:
            self._expiry_changed.clear()
            due_at = await self._deadlines()
            now = self._clock()
            if not scheduled or any(at is not None and at <= now for at in due_at):
                await self.expire_due()
                await self.tools.due()  # ordinary tool calls past their timeout_ms
                await self.capabilities.due()
                await self.mcp.due()
                await self.elicitor.due()  # MCP servers' forms (their waiters expire them too)
                due_at = await self._deadlines()
            delay = MAX_EXPIRY_WAIT_S
            for next_at in due_at:
                if next_at is not None:
                    delay = min(delay, max(0.0, (next_at - self._clock()).total_seconds()))
            try:
                await asyncio.wait_for(self._expiry_changed.wait(), delay)
                scheduled = True
            except TimeoutError:
                scheduled = False

    async def _deadlines(self) -> list[datetime | None]:
        return [
            await self.store.next_expiry(),
            await self.tools.next_deadline(),
            await self.capabilities.next_deadline(),
            await self.mcp.next_deadline(),
            await self.elicitor.next_deadline(),
        ]

    async def _conversation_known(self, conversation_id: str, agent_id: str, title: str) -> None:
        """Keep a conversation and advertise the current inventory to it (with its
        ``app.list``), in one transaction."""
        await self.store.db.write(
            _conversation_txn, conversation_id, agent_id, title, self.inventory, self._stamp()
        )

    def _stamp(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    async def ui_event(
        self, conversation_id: str, instance_id: str, name: str, data: dict[str, Any]
    ) -> None:
        """The person acted in a surface the agent opened: send the agent a
        ``lineup.v1.ui.event`` (``close`` also ends the surface). Raises
        ``ui_surfaces.UiEventRefused`` with a stable code."""
        await self.store.db.write(
            ui_surfaces.event,
            conversation_id,
            instance_id,
            name,
            data,
            self._stamp(),
            self.dev_surfaces,
        )

    async def ui_reloading(self, conversation_id: str, instance_id: str) -> None:
        """The person's client stopped showing an open surface the agent opened: its
        document kept reloading itself. The agent hears it once per ``ui.open`` (a
        ``lineup.v1.error`` ``surface_reloading``). Raises ``UiEventRefused``
        (``app_instance_not_found``) when the surface is not open."""
        await self.store.db.write(
            ui_surfaces.reloading, conversation_id, instance_id, self._stamp()
        )

    async def app_event(self, instance_id: str, name: str, data: dict[str, Any]) -> None:
        """The person acted in a MiniApp instance's surface and the app reported it
        (``LineUpSurface.event``): the agent gets it as ``lineup.v1.ui.event`` when
        the manifest declares the event. Raises ``UiEventRefused``."""
        record = self.apps.record(instance_id)
        if record is None or record.conversation_id is None:
            raise UiEventRefused(ErrorCode.APP_INSTANCE_NOT_FOUND.value)
        await self.store.db.write(
            ui_surfaces.app_event,
            record.conversation_id,
            instance_id,
            record.app_scope,
            name,
            data,
            self._stamp(),
        )

    async def grant_capability(
        self, app_id: str, name: str, *, version: str = "1.0", risk: str = "user_confirmation"
    ) -> ClientInventory:
        """Policy: allow ``app_id`` the capability ``name`` (default: denied)."""
        return await self.registry.grant_capability(app_id, name, version=version, risk=risk)

    async def revoke_capability(self, app_id: str, name: str) -> ClientInventory:
        return await self.registry.revoke_capability(app_id, name)

    def _catalog_client(self) -> CatalogClient | None:
        """The catalog of the AppServer this Runtime is logged in to."""
        if self.session is None:
            return None
        return CatalogClient(self.session.server_url, self.session.token)

    def _start_send(self, item: OutboxItem) -> None:
        if self._tasks is not None and self._connection is not None:
            self._tasks.create_task(self._send(self._connection, item))
        # Not running: the row waits in the outbox; run() sends it.

    async def _send(self, connection: Connection, item: OutboxItem) -> None:
        try:
            ack = await connection.send_envelope(item.envelope_id, item.body)
        except SendRejected as exc:
            if exc.code == ErrorCode.UNAVAILABLE:
                return  # stays in the outbox; sent again on the next run or reconnect
            await self.store.mark_failed(item.conversation_id, item.envelope_id, exc.code)
        except (ClientClosed, AuthenticationFailed):
            return  # stays in the outbox
        else:
            await self.store.mark_sent(item.conversation_id, item.envelope_id, ack.seq)
            if item.envelope_id.startswith("res_"):  # a tool result: its call is delivered
                await self.tools.delivered(item.conversation_id, item.envelope_id)

    # --- the sync loop ----------------------------------------------------------------------

    async def run(self) -> None:
        """Stream, apply and send until ``stop()``; reconnects by itself."""
        session = self._session()
        await self._sync_conversation_list()
        self._cursors = {c.id: c.cursor for c in await self.store.conversations()}
        await self.store.db.write(registry.publish_everywhere, self.inventory, self._stamp())
        connection = Connection(
            stream_url(session.server_url),
            session.token,
            on_frame=self._on_frame,
            subscribe=lambda: wire.Subscribe(cursors=dict(self._cursors), all=True),
            backoff=self._backoff,
            on_state=self._on_state,
        )
        self._connection = connection
        await self.mcp.configure(self._mcp_servers)
        try:
            async with asyncio.TaskGroup() as tg:
                self._tasks = tg
                for item in await self.store.outbox():
                    self._start_send(item)
                tg.create_task(self._apply_loop())
                tg.create_task(self._expiry_loop())
                if self._catalog_interval is not None:
                    tg.create_task(self.delivery.catalog_loop(self._catalog_interval))
                await connection.run()
                raise ClientClosed("stopped")
        except* ClientClosed:
            pass
        finally:
            await self.mcp.stop()
            self._tasks = None
            self._connection = None
            self.ready.clear()
            self._on_state("offline")

    async def stop(self) -> None:
        if self._connection is not None:
            await self._connection.close()

    async def drain(self, within: float = 5.0) -> bool:
        """Before a clean stop: wait, at most ``within`` seconds and only while the
        sync loop is in sync, until everything queued has been acknowledged. ``True``
        when the outbox is empty; what is left stays on disk and goes after the next
        start."""
        changed = asyncio.Event()
        unsubscribe = self.subscribe(lambda _: changed.set())  # every ack is a change
        try:
            async with asyncio.timeout(within):
                while await self.store.outbox():
                    if not self.ready.is_set():
                        return False
                    changed.clear()
                    await changed.wait()
        except TimeoutError:
            return False
        finally:
            unsubscribe()
        return True

    def _on_state(self, state: ConnectionState | str) -> None:
        if state != self.state:
            self.state = state
            self._emit(ConnectionChanged(state))

    async def _on_frame(self, frame: wire.ServerFrame) -> None:
        if isinstance(frame, wire.EnvelopeFrame):
            self._incoming.append(classify(frame, self._scopes, self.inventory))
            self._incoming_ready.set()
        elif isinstance(frame, wire.ConversationFrame):
            record = frame.conversation
            await self._conversation_known(record.id, record.agent_id, record.title)
            self._cursors.setdefault(record.id, 0)
        elif isinstance(frame, wire.Synced):
            self.ready.set()
        elif isinstance(frame, wire.ErrorFrame):
            log.warning("AppServer reported an error", extra={"code": str(frame.error.code)})

    async def _apply_loop(self) -> None:
        """Apply received envelopes in order, many per transaction."""
        while True:
            await self._incoming_ready.wait()
            self._incoming_ready.clear()
            batch, self._incoming = self._incoming, []
            if not batch:
                continue
            context = receive.Context(
                self._stamp(),
                self.inline_surfaces,
                self.capabilities.remembered(),
                self.dev_surfaces,
            )
            moved = await self.store.db.write(receive.apply_batch, batch, context)
            self._cursors.update(moved)

    # --- the hosts' face --------------------------------------------------------------------
    # What hosts (the Web Host, the desktop, the CLI) ask the Runtime, named for the
    # question. A host never holds the store or its connection: each answer here is a thin
    # call to the store or to the module that owns those rows. The public components
    # (``apps``, ``app_api``, ``capabilities``, ``delivery``, ``registry``, ``tools``) are
    # asked directly, not through here (docs/decisions.md, "The Runtime's face").

    async def conversations(self) -> list[ConversationInfo]:
        """Every conversation this Runtime knows."""
        return await self.store.conversations()

    async def history(
        self,
        conversation_id: str,
        *,
        before: int | None = None,
        after: int | None = None,
        limit: int = 50,
    ) -> TimelinePage | None:
        """A page of a conversation's timeline in its order (by ``seq``, rows not yet
        sent last): the newest ``limit`` rows, or those just before the row keyed
        ``before``, or just after the row keyed ``after``. ``None`` when that key is
        not a row of the conversation."""
        return await self.store.page(conversation_id, before=before, after=after, limit=limit)

    async def unread(self, app_scope: str = DEFAULT_SCOPE) -> frozenset[tuple[str, str]]:
        """(conversation id, envelope id) of what ``app_scope``'s inbox still holds: for
        Interact, the agent's messages no tab has shown yet."""
        return frozenset(
            (i.conversation_id, i.envelope_id) for i in await self.store.inbox(app_scope)
        )

    async def mark_seen(
        self, conversation_id: str, envelope_ids: Iterable[str], *, app_scope: str = DEFAULT_SCOPE
    ) -> int:
        """A tab showed these messages: ``app_scope``'s inbox lets them go. How many did."""
        return await self.store.inbox_ack_envelopes(app_scope, conversation_id, list(envelope_ids))

    async def app_session_groups(self, conversation_id: str) -> list[AppSessionGroup]:
        """A conversation's app sub-sessions as the IM shows them (newest ones)."""
        return await read_groups(self.store, conversation_id)

    async def app_session_groups_by_id(
        self, app_session_ids: Iterable[str]
    ) -> list[AppSessionGroup]:
        """These sub-sessions as the IM shows them (a tab is told when one changed)."""
        return await read_groups_by_id(self.store, app_session_ids)

    async def app_session_groups_of_instances(
        self, instance_ids: Iterable[str]
    ) -> list[AppSessionGroup]:
        """The sub-sessions these app instances opened (an instance that opened or
        closed changes its group)."""
        return await read_groups_of_instances(self.store, instance_ids)

    async def ui_surface(self, conversation_id: str, instance_id: str) -> SurfaceRecord | None:
        """A surface an agent opened (``ui.open``) in a conversation."""
        return await self.store.db.read(ui_surfaces.record_of, conversation_id, instance_id)

    async def ui_inline_parts(
        self, conversation_id: str, open_envelope_id: str
    ) -> tuple[str, str, str] | None:
        """The inline html, css and js an agent's ``ui.open`` carried (dev mode), if any."""
        return await self.store.db.read(ui_surfaces.inline_parts, conversation_id, open_envelope_id)

    async def ui_surface_parts(
        self, record: SurfaceRecord
    ) -> tuple[str, str, str, str] | ErrorCode | None:
        """What to mount for a surface the agent opened that is not an installed app's:
        a dev surface's html, css and js as its files are now (read afresh, so a reload
        of the card shows an edit) and its manifest's name, else the inline parts its
        ``ui.open`` carried (and no name); ``surface_invalid`` or
        ``surface_unavailable`` when its dev bundle no longer loads or lost that
        surface; ``None``: mount it from the registry."""
        if not record.inline:
            return None
        if self.dev_surfaces is not None:
            found = await asyncio.to_thread(
                self.dev_surfaces.find, record.app_id, record.app_version, record.surface_id
            )
            if isinstance(found, DevSurface):
                return found.source.html, found.source.css, found.source.js, found.name
            if found is not None:
                return found
        parts = await self.ui_inline_parts(record.conversation_id, record.open_envelope_id)
        return None if parts is None else (*parts, "")

    async def pending_interactions(self) -> list[InteractionRecord]:
        """The interactions still waiting for the person's answer."""
        return await self.store.pending_interactions()

    async def declared_capabilities(self) -> frozenset[str]:
        """The capabilities declared now: provided by an attached host, not revoked."""
        return await self.store.db.read(capability_queries.declared_names)

    async def locale_choice(self) -> str | None:
        """The language the person chose in the shell, or ``None``: the browser's."""
        return await self.store.db.read(preferences.locale_choice)

    async def choose_locale(self, choice: str | None) -> None:
        """Remember the person's language (``None``: as the browser says). The
        inventory carries it: a change is a new revision for every conversation."""
        await self.store.db.write(_choose_locale_txn, choice, self._stamp())

    async def locale_seen(self, locale: str) -> None:
        """A tab of the person's showed itself in ``locale`` (one of ``LOCALES``); when
        that changes the person's language, the inventory says so everywhere."""
        await self.store.db.write(_locale_seen_txn, locale, self._stamp())

    async def person_locale(self) -> str:
        """The person's language: the one they chose, else the one their newest tab
        showed (their browser's), else English. What agents and apps are told."""
        return await self.store.db.read(preferences.person_locale)

    @property
    def host_sessions(self) -> HostSessions:
        """The Web Host's browser sessions and one-time login links, kept in this
        Runtime's store (the host holds the cookie, never the table)."""
        return HostSessions(self.store)


def _choose_locale_txn(txn: RuntimeTxn, choice: str | None, now: str) -> None:
    preferences.set_locale_choice_txn(txn, choice)
    registry.refresh_inventory(txn, now)  # a new revision only if the language changed


def _locale_seen_txn(txn: RuntimeTxn, locale: str, now: str) -> None:
    if preferences.set_seen_locale_txn(txn, locale):
        registry.refresh_inventory(txn, now)


def _conversation_txn(
    txn: RuntimeTxn,
    conversation_id: str,
    agent_id: str,
    title: str,
    inventory: ClientInventory,
    now: str,
) -> None:
    upsert_conversation_txn(txn, conversation_id, agent_id, title, now)
    if has_session(txn):  # nobody to publish as before a login
        registry.publish_to(txn, conversation_id, inventory, now)
