"""Receiving: what the Runtime does with each envelope the AppServer streams to it.

``classify`` first validates each frame outside any transaction (never raising: a
rejection keeps its code). Then one batch of received envelopes is one writer
transaction (``apply_batch``): each new envelope gets its timeline row (and its
inbox row, for an agent's content in an app scope), then the handler for its kind
decides what it means, and the conversation's cursor moves past it. What the
handlers queue, show and wake up follows the commit through the unit of work
(``RuntimeTxn``); nothing here sends or notifies by hand.

- ``tool.call`` (``_tool_call``): an ordinary tool goes to the Tool Router
  (``apps.router.route``); a standard interaction starts
  (``interaction_store.create``), or is refused with its one result.
- ``interaction.dismiss`` (``_dismiss``): the agent takes a pending question back, or
  stops a call of an MCP server's tool (``mcp.call_store.dismiss``).
- ``app.call`` (``_capability_call``): an agent's capability request reaches the
  gateway's store (``capabilities.call_store.receive``).
- ``ui.open`` / ``ui.patch`` / ``ui.close`` (``_surface``): an agent's surface is
  opened, patched or closed.
- anything else: stored and shown.

Envelopes at or below a conversation's cursor are skipped (already applied); one we
sent ourselves turns our ``sending`` row into ``sent``; a rejected one is recorded
with its code and shown to nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lineup import wire
from lineup.protocol import (
    ErrorCode,
    InteractionDismissEnvelope,
    Rejection,
    ToolCallEnvelope,
    Unsupported,
    decode,
)
from lineup.protocol.interactions import TOOL_IDS, Interaction, parse_arguments
from lineup.protocol.interactions import inventory as build_inventory
from lineup.protocol.payloads import ClientInventory

from . import interaction_store, ui_surfaces
from .apps import instance_store, router
from .apps.registry import INITIAL_REVISION, published_elsewhere
from .capabilities import call_store
from .dev_surfaces import DevSurfaces
from .events import ToolCallsChanged
from .mcp import call_store as mcp_call_store
from .records import REJECTED_ROW, DismissIntent, Received, ToolCallIntent, rejected_row_id
from .tables import audit, get_item, show
from .txn import RuntimeTxn

__all__ = ["DEFAULT_SCOPE", "HANDLERS", "INVENTORY", "Context", "apply_batch", "classify"]

DEFAULT_SCOPE = "chat"
"""Interact's app scope (spec 002 §2.1 keeps the compatible name ``chat``)."""

INVENTORY = build_inventory(revision=INITIAL_REVISION)
"""What a fresh Runtime advertises to agents: the four standard interactions, and no
language (none is known before a tab shows one or the person chooses), under the first
revision (``inv-1``).
``Runtime.inventory`` is the current one: the registry adds enabled apps and the
person's language, and bumps the revision whenever the content changes."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a batch is applied with. ``inline_surfaces``: the dev-mode allowlist of
    inline bundle integrities; ``remembered``: the (requester, capability) pairs the
    person allowed for this session; ``dev_surfaces``: the Runtime's dev surfaces."""

    now: str
    inline_surfaces: frozenset[str] = frozenset()
    remembered: frozenset[tuple[str, str]] = frozenset()
    dev_surfaces: DevSurfaces | None = None


Handler = Callable[[RuntimeTxn, Received, Context], None]


def _tool_call(txn: RuntimeTxn, item: Received, ctx: Context) -> None:
    if item.call is None:
        return
    if router.is_ordinary(item.call):
        router.route(txn, item, item.call, ctx.now)
    elif interaction_store.create(txn, item, item.call, ctx.now) is not None:
        txn.deadline_added()  # its expires_at


def _dismiss(txn: RuntimeTxn, item: Received, ctx: Context) -> None:
    if item.dismiss is None:
        return
    intent = item.dismiss
    if mcp_call_store.get(txn, item.conversation_id, intent.call_id) is not None:
        mcp_call_store.dismiss(txn, item.conversation_id, intent.call_id, intent.sender_id, ctx.now)
        return
    interaction_store.dismiss(txn, item.conversation_id, item.dismiss, ctx.now)  # shows the card


def _capability_call(txn: RuntimeTxn, item: Received, ctx: Context) -> None:
    if item.sender_kind != "agent":
        return
    call_store.receive(txn, item, ctx.now, ctx.remembered)  # tells hosts, wakes the timer


def _surface(txn: RuntimeTxn, item: Received, ctx: Context) -> None:
    if item.sender_kind != "agent":
        return
    outcome = ui_surfaces.apply(
        txn, item, ctx.now, inline_allowlist=ctx.inline_surfaces, dev=ctx.dev_surfaces
    )
    for envelope_id in outcome.changed:
        if envelope_id != item.envelope_id:
            show(txn, item.conversation_id, envelope_id)


HANDLERS: dict[str, Handler] = {
    "lineup.v1.tool.call": _tool_call,
    "lineup.v1.interaction.dismiss": _dismiss,
    "lineup.v1.app.call": _capability_call,
    **{kind: _surface for kind in ui_surfaces.UI_TYPES},
}
"""Envelope kind -> what receiving it does (after its timeline row is stored)."""


def apply_batch(txn: RuntimeTxn, items: Sequence[Received], ctx: Context) -> dict[str, int]:
    """Store received envelopes, their inbox rows and the new cursors atomically, and
    run each new envelope's handler. Returns the cursors that moved."""
    cursors: dict[str, int] = {}
    inboxed: set[tuple[str, str]] = set()
    for item in items:
        cursor = cursors.get(item.conversation_id)
        if cursor is None:
            row = txn.execute(
                "SELECT cursor FROM conversations WHERE id = ?", (item.conversation_id,)
            ).fetchone()
            if row is None:
                continue  # not a conversation we know; the sync loop adds them first
            cursor = row[0]
        if item.seq <= cursor:
            continue
        cursors[item.conversation_id] = item.seq
        if item.envelope_id is None:
            _rejected(txn, item, ctx.now)
            continue
        if _ours(txn, item, ctx.now):
            continue
        _store(txn, item, ctx.now)
        if item.app_scope is not None:
            inboxed.add((item.app_scope, item.conversation_id))
        handler = HANDLERS.get(item.type or "")
        if handler is not None:
            handler(txn, item, ctx)
        show(txn, item.conversation_id, item.envelope_id)
    for conversation_id, cursor in cursors.items():
        txn.execute("UPDATE conversations SET cursor = ? WHERE id = ?", (cursor, conversation_id))
    if inboxed:
        _tell_readers(txn, inboxed)
    return cursors


def _rejected(txn: RuntimeTxn, item: Received, now: str) -> None:
    """Kept as its code and size, never its bytes; its row takes its place in the
    timeline (the shell shows it as a message it could not show)."""
    code = item.code or ErrorCode.MALFORMED_ENVELOPE
    txn.execute(
        "INSERT INTO rejections (conversation_id, seq, code, size, at) VALUES (?, ?, ?, ?, ?)",
        (item.conversation_id, item.seq, code, len(item.body), now),
    )
    envelope_id = rejected_row_id(item.seq)
    txn.execute(
        "INSERT OR IGNORE INTO timeline (conversation_id, envelope_id, seq, type, sender_kind,"
        " body, state, error_code, created_at) VALUES (?, ?, ?, ?, 'runtime', X'', 'received',"
        " ?, ?)",
        (item.conversation_id, envelope_id, item.seq, REJECTED_ROW, code, now),
    )
    subject = f"{item.conversation_id}#{item.seq}"
    audit(txn, now, "appserver", "receive", subject, "rejected", item.code)
    show(txn, item.conversation_id, envelope_id)


def _ours(txn: RuntimeTxn, item: Received, now: str) -> bool:
    """Our own envelope coming back: it is stored, whatever the ack said (``True``:
    nothing else to do)."""
    assert item.envelope_id is not None
    existing = get_item(txn, item.conversation_id, item.envelope_id)
    if existing is None:
        return False
    if existing.state == "sent" and existing.seq == item.seq:
        return True  # its echo, after its ack: nothing changes
    txn.execute(
        "UPDATE timeline SET seq = ?, state = 'sent', error_code = NULL WHERE id = ?",
        (item.seq, existing.id),
    )
    txn.execute(
        "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
        (item.conversation_id, item.envelope_id),
    )
    if item.envelope_id.startswith("res_"):  # a tool result is stored: delivered
        router.delivered(txn, item.conversation_id, item.envelope_id, now)
    show(txn, item.conversation_id, item.envelope_id)
    return True


def _store(txn: RuntimeTxn, item: Received, now: str) -> None:
    txn.execute(
        "INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind, body,"
        " state, created_at) VALUES (?, ?, ?, ?, ?, ?, 'received', ?)",
        (
            item.conversation_id,
            item.envelope_id,
            item.seq,
            item.type,
            item.sender_kind,
            item.body,
            now,
        ),
    )
    if item.app_scope is not None:
        txn.execute(
            "INSERT OR IGNORE INTO inbox (app_scope, conversation_id, envelope_id)"
            " VALUES (?, ?, ?)",
            (item.app_scope, item.conversation_id, item.envelope_id),
        )


def _tell_readers(txn: RuntimeTxn, inboxed: set[tuple[str, str]]) -> None:
    """The live instances whose (scope, conversation) inbox got new rows read it again."""
    readers = frozenset(
        record.instance_id
        for record in instance_store.load(txn).live()
        if (record.app_scope, record.conversation_id) in inboxed
    )
    if readers:
        txn.emit(ToolCallsChanged(readers, "inbox"))


# --- validating what arrives --------------------------------------------------------------


def classify(
    frame: wire.EnvelopeFrame,
    known_scopes: frozenset[str],
    inventory: ClientInventory = INVENTORY,
) -> Received:
    """Validate what the AppServer sent. Never raises: a rejection is recorded with its
    code; a well-formed kind this version does not know is kept, to be shown as an
    "unsupported message" row and never executed."""
    conversation_id, seq, body = frame.conversation_id, frame.seq, bytes(frame.envelope)
    result = decode(body)
    if isinstance(result, Rejection):
        return Received(conversation_id, seq, body, code=result.code.value)
    if result.conversation_id != conversation_id:
        return Received(conversation_id, seq, body, code=ErrorCode.MALFORMED_ENVELOPE.value)
    if isinstance(result, Unsupported):
        return Received(
            conversation_id,
            seq,
            body,
            envelope_id=result.id,
            type=result.type,
            sender_kind=result.sender.kind,
        )
    scope = (result.target.app_scope if result.target else None) or DEFAULT_SCOPE
    if scope not in known_scopes:
        return Received(conversation_id, seq, body, code=ErrorCode.APP_SCOPE_MISMATCH.value)
    call: ToolCallIntent | None = None
    dismiss: DismissIntent | None = None
    if isinstance(result, ToolCallEnvelope):
        call = _call_intent(result, inventory)
    elif isinstance(result, InteractionDismissEnvelope):
        p = result.payload
        dismiss = DismissIntent(p.control_id, p.call_id, result.sender.id, result.id)
    for_interact = result.sender.kind == "agent" and dismiss is None  # a control, not content
    return Received(
        conversation_id,
        seq,
        body,
        envelope_id=result.id,
        type=result.type,
        sender_kind=result.sender.kind,
        app_scope=scope if for_interact else None,
        call=call,
        dismiss=dismiss,
    )


def _call_intent(envelope: ToolCallEnvelope, inventory: ClientInventory) -> ToolCallIntent:
    """Everything about a tool call that can be checked without the store."""
    p = envelope.payload
    context = p.app_session_context.app_session_id if p.app_session_context else None
    refusal: Rejection | None = None
    parsed: Interaction | None = None
    if p.tool not in TOOL_IDS:
        # An ordinary tool: the Tool Router checks it in the apply transaction, against
        # the stored inventory and registry.
        return ToolCallIntent(p.call_id, envelope.sender.id, context, None, None)
    if published_elsewhere(p.inventory_revision, inventory.revision):
        return ToolCallIntent(p.call_id, envelope.sender.id, context, None, None, elsewhere=True)
    if p.inventory_revision != inventory.revision:
        refusal = Rejection(
            code=ErrorCode.INVENTORY_REVISION_MISMATCH,
            message=f"the current inventory revision is {inventory.revision}",
        )
    elif not any(t.id == p.tool and t.handling == "interactive" for t in inventory.tools):
        refusal = Rejection(code=ErrorCode.TOOL_NOT_ADVERTISED, message="no such tool")
    else:
        checked = parse_arguments(p.tool, p.arguments)
        if isinstance(checked, Rejection):
            refusal = checked
        else:
            parsed = checked
    return ToolCallIntent(p.call_id, envelope.sender.id, context, parsed, refusal)
