"""Surfaces an agent opens in the conversation (spec 000 §4): ``ui.open``,
``ui.patch``, ``ui.close`` and the person's ``ui.event``, persisted.

The agent may only request. ``ui.open`` names an enabled app, the exact version in
use and one of its surfaces (``app.surface``, which the payload requires unless the
bundle is inline); anything else is
``surface_unavailable`` and nothing is mounted: the card shows a safe notice and the
agent gets one ``lineup.v1.error`` naming the envelope (``ref_id``). An inline bundle
(``html``/``css``/``js``) is accepted only in dev mode, when its ``integrity`` is on the
Runtime's allowlist and matches the parts (``inline_integrity``); else it is
``surface_unavailable`` (not in dev mode, or not allowlisted) or ``surface_invalid``
(the digest does not match). A Runtime with dev surfaces (``dev_surfaces``) reads
a bundle of its DIR afresh when the ``ui.open`` names its id and exact version, before
the registry, and stores the parts it showed as an inline surface (a bundle that does
not load: ``surface_invalid``). A second ``ui.open`` of the same ``instance_id`` replaces
the first (``replaced``, its reason saying by what: the same app at a newer, the same
or an older version, or another app). A surface whose document keeps reloading itself is
stopped by the client, which tells the Runtime (``reloading``): the agent gets one
``surface_reloading`` error per ``ui.open``. ``ui.patch`` replaces the state, a JSON object, and can
never touch code; ``ui.close`` ends the surface. A patch or close of an instance
that is not open gets ``app_instance_not_found``.

The person's events (``event``) are checked against the surface's declared events
(the manifest's ``events``; ``close`` always) and sent to the agent as
``lineup.v1.ui.event``; ``close`` also ends the surface. Everything here runs in
writer transactions; logs and audit rows carry ids and codes only.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Collection
from dataclasses import dataclass

import msgspec

from lineup.formats.semver import compare_semver
from lineup.protocol import (
    ErrorCode,
    ErrorEnvelope,
    UiCloseEnvelope,
    UiEventEnvelope,
    UiOpenEnvelope,
    UiPatchEnvelope,
    decode,
    payloads,
)

from .apps import registry
from .dev_surfaces import DevSurface, DevSurfaces
from .records import OutboxItem, Received, SurfaceRecord
from .tables import audit, queue_from_runtime, show, surface_record
from .txn import RuntimeTxn, Sql

__all__ = [
    "UI_TYPES",
    "UiOutcome",
    "apply",
    "close_for_version",
    "event",
    "inline_integrity",
    "record_of",
]

UI_TYPES = frozenset(
    {"lineup.v1.ui.open", "lineup.v1.ui.patch", "lineup.v1.ui.close", "lineup.v1.ui.event"}
)


SURFACE_COLUMNS = (
    "s.conversation_id, s.open_envelope_id, s.instance_id, s.app_id, s.app_version,"
    " s.surface_id, s.state, s.status, s.reason, s.updated_at, s.html IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class UiOutcome:
    """What one ``ui.*`` envelope did: the ``ui.open`` rows to show again, and the
    envelopes queued for the agent."""

    changed: tuple[str, ...] = ()
    outbox: tuple[OutboxItem, ...] = ()


def inline_integrity(html: str, css: str, js: str) -> str:
    """The ``integrity`` of an inline bundle: ``sha256-`` and the base64 SHA-256 of
    the UTF-8 of ``html``, ``css`` and ``js`` joined by NUL characters."""
    digest = hashlib.sha256("\0".join((html, css, js)).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def record_of(conn: Sql, conversation_id: str, instance_id: str) -> SurfaceRecord | None:
    """The open surface ``instance_id`` of the conversation, if any."""
    row = conn.execute(
        f"SELECT {SURFACE_COLUMNS} FROM ui_surfaces s"  # noqa: S608
        " WHERE s.conversation_id = ? AND s.instance_id = ? AND s.status = 'open'",
        (conversation_id, instance_id),
    ).fetchone()
    return None if row is None else surface_record(row)


def inline_parts(
    conn: Sql, conversation_id: str, open_envelope_id: str
) -> tuple[str, str, str] | None:
    row = conn.execute(
        "SELECT html, css, js FROM ui_surfaces WHERE conversation_id = ?"
        " AND open_envelope_id = ? AND html IS NOT NULL",
        (conversation_id, open_envelope_id),
    ).fetchone()
    return None if row is None else (row[0], row[1] or "", row[2] or "")


def _error(
    txn: RuntimeTxn, conversation_id: str, ref_id: str, code: ErrorCode, now: str
) -> OutboxItem:
    payload = payloads.Error(code=code.value, message=_MESSAGES[code], ref_id=ref_id)
    envelope_id = f"err_{uuid.uuid4().hex}"
    return queue_from_runtime(txn, ErrorEnvelope, envelope_id, conversation_id, payload, now)


_MESSAGES = {
    ErrorCode.SURFACE_UNAVAILABLE: "no such enabled app version and surface here",
    ErrorCode.SURFACE_INVALID: "the inline bundle does not match its integrity",
    ErrorCode.APP_INSTANCE_NOT_FOUND: "no open surface with this instance_id",
    ErrorCode.SURFACE_RELOADING: "the surface kept reloading itself and is no longer shown",
}

RELOADING = "reloading"
"""The ``reason`` of an open surface whose reloading the agent was told of."""
REPLACED = "replaced"
REPLACED_BY_NEWER = "replaced_by_newer"
REPLACED_BY_OLDER = "replaced_by_older"
REPLACED_BY_OTHER_APP = "replaced_by_other_app"
"""The ``reason`` of a ``replaced`` surface: what the new ``ui.open`` showed instead
(the same version of the same app: ``replaced``)."""


def apply(
    txn: RuntimeTxn,
    item: Received,
    now: str,
    *,
    inline_allowlist: Collection[str],
    dev: DevSurfaces | None = None,
) -> UiOutcome:
    """Apply one stored ``ui.*`` envelope from the agent (``dev``: the Runtime's dev
    surfaces, if any)."""
    envelope = decode(item.body)
    if isinstance(envelope, UiOpenEnvelope):
        return _open(txn, envelope, now, inline_allowlist, dev)
    if isinstance(envelope, UiPatchEnvelope):
        return _patch(txn, envelope, now)
    if isinstance(envelope, UiCloseEnvelope):
        return _close(txn, envelope, now)
    return UiOutcome()  # ui.event is ours (the Runtime sends it): nothing to apply


def _open(
    txn: RuntimeTxn,
    envelope: UiOpenEnvelope,
    now: str,
    allowlist: Collection[str],
    dev: DevSurfaces | None,
) -> UiOutcome:
    p = envelope.payload
    app = p.app
    conversation_id = envelope.conversation_id
    code: ErrorCode | None = None
    surface_id = app.surface
    inline = app.html is not None or app.css is not None or app.js is not None
    parts = (app.html or "", app.css or "", app.js or "")
    dev_found = None if inline or dev is None else dev.find(app.id, app.version, surface_id)
    if inline:
        if app.integrity not in allowlist:
            code = ErrorCode.SURFACE_UNAVAILABLE
        elif inline_integrity(*parts) != app.integrity:
            code = ErrorCode.SURFACE_INVALID
    elif isinstance(dev_found, DevSurface):  # as its files are now
        inline = True
        parts = (dev_found.source.html, dev_found.source.css, dev_found.source.js)
        surface_id = dev_found.source.surface_id
    elif dev_found is not None:
        code = dev_found
    else:
        entry = registry.entries(txn, enabled_only=True)
        found = next((e for e in entry if e.app_id == app.id and e.version == app.version), None)
        manifest = None if found is None else registry.manifest_of(txn, app.id, app.version)
        surfaces = [] if manifest is None else [s.id for s in manifest.surfaces]
        if surface_id is None and surfaces:
            surface_id = surfaces[0]
        if surface_id not in surfaces:
            code = ErrorCode.SURFACE_UNAVAILABLE
    changed = [envelope.id]
    replaced = txn.execute(
        "SELECT open_envelope_id, app_id, app_version FROM ui_surfaces"
        " WHERE conversation_id = ? AND instance_id = ? AND status = 'open'",
        (conversation_id, p.instance_id),
    ).fetchall()
    for open_id, old_app, old_version in replaced:
        txn.execute(
            "UPDATE ui_surfaces SET status = 'replaced', reason = ?, updated_at = ?"
            " WHERE conversation_id = ? AND open_envelope_id = ?",
            (_replaced_by(old_app, old_version, app), now, conversation_id, open_id),
        )
    changed.extend(str(r[0]) for r in replaced)
    txn.execute(
        "INSERT OR IGNORE INTO ui_surfaces (conversation_id, open_envelope_id, instance_id,"
        " app_id, app_version, surface_id, state, status, reason, html, css, js, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation_id,
            envelope.id,
            p.instance_id,
            app.id,
            app.version,
            surface_id,
            msgspec.json.encode(p.state),
            "open" if code is None else "unavailable",
            None if code is None else code.value,
            parts[0] if inline and code is None else None,
            parts[1] if inline and code is None else None,
            parts[2] if inline and code is None else None,
            now,
        ),
    )
    subject = f"{conversation_id}/{p.instance_id}"
    audit(txn, now, "agent", "ui.open", subject, "refused" if code else "opened", code)
    if code is None:
        return UiOutcome(tuple(changed))
    return UiOutcome(tuple(changed), (_error(txn, conversation_id, envelope.id, code, now),))


def _replaced_by(old_app: str, old_version: str, app: payloads.SurfaceApp) -> str:
    """The ``reason`` of a surface a new ``ui.open`` replaced: by the same app at a
    newer, the same or an older version, or by another app."""
    if app.id != old_app:
        return REPLACED_BY_OTHER_APP
    order = compare_semver(app.version, old_version)
    return REPLACED_BY_NEWER if order > 0 else REPLACED_BY_OLDER if order < 0 else REPLACED


def _patch(txn: RuntimeTxn, envelope: UiPatchEnvelope, now: str) -> UiOutcome:
    p = envelope.payload
    record = record_of(txn, envelope.conversation_id, p.instance_id)
    if record is None:
        code = ErrorCode.APP_INSTANCE_NOT_FOUND
        error = _error(txn, envelope.conversation_id, envelope.id, code, now)
        return UiOutcome((), (error,))
    txn.execute(
        "UPDATE ui_surfaces SET state = ?, updated_at = ? WHERE conversation_id = ?"
        " AND open_envelope_id = ?",
        (msgspec.json.encode(p.state), now, record.conversation_id, record.open_envelope_id),
    )
    return UiOutcome((record.open_envelope_id,))


def _end(conn: Sql, record: SurfaceRecord, reason: str, now: str) -> None:
    conn.execute(
        "UPDATE ui_surfaces SET status = 'closed', reason = ?, updated_at = ?"
        " WHERE conversation_id = ? AND open_envelope_id = ?",
        (reason, now, record.conversation_id, record.open_envelope_id),
    )


def close_for_version(
    txn: RuntimeTxn, app_id: str, version: str, now: str
) -> list[tuple[str, str, OutboxItem]]:
    """Inside someone else's transaction: end every open agent surface of ``app_id``
    at ``version`` (revoked or removed) and tell each agent with a ``close`` event.
    Returns (conversation id, ``ui.open`` envelope id, the event queued) for each."""
    rows = txn.execute(
        "SELECT conversation_id, instance_id, open_envelope_id FROM ui_surfaces"
        " WHERE app_id = ? AND app_version = ? AND status = 'open'",
        (app_id, version),
    ).fetchall()
    txn.execute(
        "UPDATE ui_surfaces SET status = 'closed', reason = 'app_revoked', updated_at = ?"
        " WHERE app_id = ? AND app_version = ? AND status = 'open'",
        (now, app_id, version),
    )
    ended = []
    for c, i, o in rows:
        item = _queue_event(txn, str(c), str(i), "close", {"reason": "app_revoked"}, now)
        show(txn, str(c), str(o))
        ended.append((str(c), str(o), item))
    return ended


def _close(txn: RuntimeTxn, envelope: UiCloseEnvelope, now: str) -> UiOutcome:
    p = envelope.payload
    record = record_of(txn, envelope.conversation_id, p.instance_id)
    if record is None:
        code = ErrorCode.APP_INSTANCE_NOT_FOUND
        error = _error(txn, envelope.conversation_id, envelope.id, code, now)
        return UiOutcome((), (error,))
    _end(txn, record, p.reason or "closed", now)
    audit(txn, now, "agent", "ui.close", f"{record.conversation_id}/{p.instance_id}", "closed")
    return UiOutcome((record.open_envelope_id,))


def reloading(txn: RuntimeTxn, conversation_id: str, instance_id: str, now: str) -> UiOutcome:
    """The client stopped showing the open surface ``instance_id``: its document kept
    reloading or navigating itself. The first time for this ``ui.open`` the agent gets
    one ``lineup.v1.error`` ``surface_reloading`` naming it; after that, nothing (other
    tabs, a "Reopen" that loops again). The surface stays open. Raises
    ``UiEventRefused`` (``app_instance_not_found``) when it is not open."""
    record = record_of(txn, conversation_id, instance_id)
    if record is None:
        raise UiEventRefused(ErrorCode.APP_INSTANCE_NOT_FOUND.value)
    if record.reason == RELOADING:
        return UiOutcome()
    txn.execute(
        "UPDATE ui_surfaces SET reason = ?, updated_at = ? WHERE conversation_id = ?"
        " AND open_envelope_id = ?",
        (RELOADING, now, conversation_id, record.open_envelope_id),
    )
    audit(txn, now, "host", "ui.reloading", f"{conversation_id}/{instance_id}", "stopped")
    code = ErrorCode.SURFACE_RELOADING
    error = _error(txn, conversation_id, record.open_envelope_id, code, now)
    return UiOutcome((), (error,))


class UiEventRefused(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _queue_event(
    txn: RuntimeTxn,
    conversation_id: str,
    instance_id: str,
    name: str,
    data: dict[str, object],
    now: str,
) -> OutboxItem:
    """Queue one ``lineup.v1.ui.event`` to the agent (data the protocol refuses:
    ``UiEventRefused(malformed_envelope)``) and audit it, without its data."""
    try:
        payload = payloads.UiEvent(instance_id=instance_id, event=name, data=data)
        item = queue_from_runtime(
            txn, UiEventEnvelope, f"uie_{uuid.uuid4().hex}", conversation_id, payload, now
        )
    except (ValueError, msgspec.ValidationError) as exc:
        raise UiEventRefused(ErrorCode.MALFORMED_ENVELOPE.value) from exc
    audit(txn, now, "user", "ui.event", f"{conversation_id}/{instance_id}", "sent")
    return item


def app_event(
    txn: RuntimeTxn,
    conversation_id: str,
    instance_id: str,
    app_scope: str,
    name: str,
    data: dict[str, object],
    now: str,
) -> UiOutcome:
    """The person's event from a MiniApp instance's own surface (its first): sent to
    the agent as ``lineup.v1.ui.event`` with the instance's id when the manifest
    declares it for that surface. Raises ``UiEventRefused`` (``event_not_declared``,
    ``malformed_envelope``)."""
    row = txn.execute("SELECT app_id FROM apps WHERE app_scope = ?", (app_scope,)).fetchone()
    manifest = None if row is None else registry.manifest_of(txn, row[0])
    surfaces = [] if manifest is None else manifest.surfaces
    if not surfaces or name not in surfaces[0].events:
        raise UiEventRefused(ErrorCode.EVENT_NOT_DECLARED)
    item = _queue_event(txn, conversation_id, instance_id, name, data, now)
    return UiOutcome((), (item,))


def event(
    txn: RuntimeTxn,
    conversation_id: str,
    instance_id: str,
    name: str,
    data: dict[str, object],
    now: str,
    dev: DevSurfaces | None = None,
) -> UiOutcome:
    """The person's event from an open surface: checked, then queued to the agent as
    ``lineup.v1.ui.event``; ``close`` also ends the surface. Raises
    ``UiEventRefused`` (``app_instance_not_found``, ``event_not_declared``, or the
    decoder's code for data the protocol refuses). An inline surface may send any
    event, except a dev surface (``dev``): the events its manifest declares now."""
    record = record_of(txn, conversation_id, instance_id)
    if record is None:
        raise UiEventRefused(ErrorCode.APP_INSTANCE_NOT_FOUND.value)
    if name != "close":
        declared: list[str] | None
        if record.inline:
            found = None
            if dev is not None:
                found = dev.find(record.app_id, record.app_version, record.surface_id)
            declared = list(found.events) if isinstance(found, DevSurface) else None
        else:
            manifest = registry.manifest_of(txn, record.app_id, record.app_version)
            surfaces = manifest.surfaces if manifest else []
            declared = next((s.events for s in surfaces if s.id == record.surface_id), [])
        if declared is not None and name not in declared:
            raise UiEventRefused(ErrorCode.EVENT_NOT_DECLARED)
    item = _queue_event(txn, conversation_id, instance_id, name, data, now)
    changed: tuple[str, ...] = ()
    if name == "close":
        _end(txn, record, "user", now)
        changed = (record.open_envelope_id,)
        show(txn, conversation_id, record.open_envelope_id)
    return UiOutcome(changed, (item,))
