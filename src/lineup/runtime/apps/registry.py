"""The app registry and the advertised inventory (spec 002 §5, §8), persisted.

The registry holds every installed app version (its canonical manifest bytes,
validated by ``manifest.load_manifest``), which version of each app is in use, its
kind (``system`` / ``bundled`` / ``installed``) and whether it is enabled. Installing
the same ``id`` + ``version`` again is idempotent; a different version replaces the
one in use and the old one stays stored (for a later rollback).

The inventory (``client.inventory``) is the four interactive tools plus every enabled
app: its ``ApplicationRef`` and its tool descriptors; the tools of every enabled MCP
server (``mcp.servers``); and the person's language. Its
revision is **monotonic**: ``inventory_state`` keeps a counter and the digest of the
advertised content, and every transaction that can change the content (install,
enable, disable, a language chosen or seen, the Runtime opening with new software)
recomputes the digest and bumps the counter when it
differs. So the revision is ``inv-<n>`` and never goes back, even when the content
does. The Runtime republishes the inventory to every conversation when it changes.

**Capability policy.** A manifest's ``permissions`` only say what an app *may*
request. The Runtime keeps a persisted allowlist (``capability_grants``): a
capability is granted to one app (``grant_capability``) or not at all; everything
not granted is denied (``revoke_capability`` removes a grant). The inventory's
``capabilities`` are the union, over enabled apps, of the capabilities each app
declares *and* was granted (one descriptor per name, by name; when two grants of a
name differ, the most restrictive risk wins, then the highest version). A tool is
advertised only when its app is enabled and every one of its ``permissions`` is
granted to that app; ``advertised_tool`` is that rule, and the Tool Router uses it.
``app.list`` is the capability-only projection: ``publish_app_list`` queues it to a
conversation when the projection differs from the one last queued there.

Transaction functions take the connection and run on the store's writer; the
``AppRegistry`` class is the async face the Runtime and hosts call.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from lineup.formats.bundle import (
    AppBundle,
    SurfaceSource,
    files_digest,
    load_bundle_dir,
    surface_source,
)
from lineup.formats.manifest import (
    AppManifest,
    encode_manifest,
    load_manifest,
    to_inventory_application,
    tool_descriptors,
)
from lineup.formats.schemas import CompiledTool, compile_tool
from lineup.protocol import AppListEnvelope, ErrorCode
from lineup.protocol import interactions as ix
from lineup.protocol.fields import CAPABILITY_NAME_PATTERN, CAPABILITY_VERSION_PATTERN
from lineup.protocol.payloads import AppList, CapabilityDescriptor, ClientInventory, ToolDescriptor

from .. import interaction_store, preferences
from ..capabilities.declared import declared as host_declared
from ..events import InventoryChanged, RuntimeEvent
from ..mcp import servers as mcp_servers
from ..records import OutboxItem
from ..tables import audit, has_session, queue_from_runtime
from ..txn import RuntimeTxn, Sql
from . import instance_store

if TYPE_CHECKING:
    from ..store import RuntimeStore

__all__ = [
    "INITIAL_REVISION",
    "RISKS",
    "AppEntry",
    "AppRegistry",
    "Installed",
    "RegistryError",
    "ToolTarget",
    "advertised_tool",
    "app_list",
    "build_inventory",
    "entries",
    "entries_by_id",
    "find_tool",
    "grant_capability",
    "granted",
    "icon_of",
    "install",
    "manifest_of",
    "publish_app_list",
    "refresh_inventory",
    "revision",
    "revoke_capability",
    "runnable_release",
    "set_enabled",
    "surface_of",
    "surface_of_version",
]

INITIAL_REVISION = "inv-1"
"""The revision of a fresh store's inventory (no app enabled yet)."""

RISKS = ("display_only", "user_confirmation", "system_permission", "restricted")
"""Capability risks, least restrictive first."""

_CAPABILITY = re.compile(CAPABILITY_NAME_PATTERN)
_VERSION = re.compile(CAPABILITY_VERSION_PATTERN)


class _ManifestCache:
    """Loaded manifests by the digest of their canonical bytes (a store only ever holds
    valid bytes, so they are loaded and compiled once per process). Content-addressed,
    so sharing it between stores is safe; locked, because the writer thread and the
    reader threads all load manifests."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, AppManifest] = OrderedDict()

    def load(self, body: bytes, digest: str) -> AppManifest:
        with self._lock:
            cached = self._entries.get(digest)
            if cached is not None:
                self._entries.move_to_end(digest)
                return cached
        manifest = load_manifest(body)  # outside the lock: compiling takes a while
        self.put(digest, manifest)
        return manifest

    def put(self, digest: str, manifest: AppManifest) -> None:
        with self._lock:
            self._entries[digest] = manifest
            self._entries.move_to_end(digest)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


_manifests = _ManifestCache()


class RegistryError(Exception):
    """A registry request was refused: ``code`` says why (``app_not_found``,
    ``app_version_conflict``: the same id and version with other content,
    ``app_scope_conflict``: another app already uses the scope). A manifest that
    does not load raises ``manifest.ManifestError`` instead. The transaction is rolled
    back: a refusal changes nothing."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class AppEntry:
    """One registered app: the version in use, every version stored (oldest first)."""

    app_id: str
    app_scope: str
    kind: str
    version: str
    enabled: bool
    versions: tuple[str, ...]
    unavailable: str | None = None
    """Why the app has no version it may run (``version_revoked``, ``key_revoked``), or
    None."""


@dataclass(frozen=True, slots=True)
class Installed:
    """What ``install`` did. ``installed``: false for an idempotent repeat."""

    entry: AppEntry
    installed: bool
    inventory: ClientInventory
    inventory_changed: bool


@dataclass(frozen=True, slots=True)
class ToolTarget:
    """A tool of a registered app, as the Tool Router needs it."""

    entry: AppEntry
    manifest: AppManifest
    descriptor: ToolDescriptor
    compiled: CompiledTool


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _manifest(body: bytes, digest: str) -> AppManifest:
    return _manifests.load(body, digest)


# --- transaction and query functions ----------------------------------------------------------


def _entry(conn: Sql, app_id: str) -> AppEntry | None:
    row = conn.execute(
        "SELECT app_id, app_scope, kind, version, enabled, unavailable FROM apps WHERE app_id = ?",
        (app_id,),
    ).fetchone()
    if row is None:
        return None
    versions = tuple(
        r[0]
        for r in conn.execute(
            "SELECT version FROM app_versions WHERE app_id = ? ORDER BY installed_at, rowid",
            (app_id,),
        )
    )
    return AppEntry(row[0], row[1], row[2], row[3], bool(row[4]), versions, row[5])


def entries_by_id(conn: Sql, app_id: str) -> AppEntry | None:
    """The registered app ``app_id``, or ``None``."""
    return _entry(conn, app_id)


def entries(conn: Sql, *, enabled_only: bool = False) -> list[AppEntry]:
    """Every registered app (or only the enabled ones), by app id."""
    where = " WHERE enabled = 1" if enabled_only else ""
    ids = [r[0] for r in conn.execute(f"SELECT app_id FROM apps{where} ORDER BY app_id")]  # noqa: S608
    found = [_entry(conn, app_id) for app_id in ids]
    return [e for e in found if e is not None]


def manifest_of(conn: Sql, app_id: str, version: str | None = None) -> AppManifest | None:
    """The manifest of ``app_id`` at ``version`` (the version in use by default)."""
    if version is None:
        entry = _entry(conn, app_id)
        if entry is None:
            return None
        version = entry.version
    row = conn.execute(
        "SELECT manifest, digest FROM app_versions WHERE app_id = ? AND version = ?",
        (app_id, version),
    ).fetchone()
    return None if row is None else _manifest(bytes(row[0]), row[1])


def install(
    txn: RuntimeTxn,
    manifest: AppManifest,
    now: str,
    *,
    enable: bool = False,
    files: Mapping[str, bytes] | None = None,
    verified: bool = False,
) -> Installed:
    """Store ``manifest`` (already loaded) with its bundle ``files`` (already checked by
    ``bundle.load_bundle``; none for a manifest-only app) and make it the version in
    use. The same id and version again must bring the same manifest and files.

    An app of kind ``installed`` comes only through signed delivery
    (``releases.record_verified`` passes ``verified``); otherwise ``app_unsigned``."""
    if manifest.kind == "installed" and not verified:
        raise RegistryError(
            ErrorCode.APP_UNSIGNED, "an installed app comes only as a verified signed release"
        )
    body = encode_manifest(manifest)
    digest = _digest(body)
    bundle_digest = files_digest(files or {})
    stored = txn.execute(
        "SELECT digest, COALESCE(files_digest, ?) FROM app_versions"
        " WHERE app_id = ? AND version = ?",
        (files_digest({}), manifest.id, manifest.version),
    ).fetchone()
    if stored is not None and (stored[0] != digest or stored[1] != bundle_digest):
        raise RegistryError(
            ErrorCode.APP_VERSION_CONFLICT, "this app version is installed with other content"
        )
    held = txn.execute("SELECT kind FROM apps WHERE app_id = ?", (manifest.id,)).fetchone()
    if held is not None and (held[0] == "installed") != (manifest.kind == "installed"):
        raise RegistryError(
            ErrorCode.APP_KIND_CONFLICT,
            "a delivered app cannot replace a built-in one, or the reverse",
        )
    holder = txn.execute(
        "SELECT app_id FROM apps WHERE app_scope = ? AND app_id != ?",
        (manifest.app_scope, manifest.id),
    ).fetchone()
    if holder is not None:
        raise RegistryError(ErrorCode.APP_SCOPE_CONFLICT, "another app already uses this app scope")
    current = _entry(txn, manifest.id)
    if stored is not None and current is not None and current.version == manifest.version:
        if enable and not current.enabled:
            return _installed(txn, set_enabled(txn, manifest.id, True, now), False, now)
        inventory, changed = refresh_inventory(txn, now)
        return Installed(current, False, inventory, changed)
    if stored is None:
        txn.execute(
            "INSERT INTO app_versions (app_id, version, kind, app_scope, manifest, digest,"
            " installed_at, files_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                manifest.id,
                manifest.version,
                manifest.kind,
                manifest.app_scope,
                body,
                digest,
                now,
                bundle_digest,
            ),
        )
        txn.executemany(
            "INSERT INTO app_files (app_id, version, path, body) VALUES (?, ?, ?, ?)",
            [(manifest.id, manifest.version, path, data) for path, data in (files or {}).items()],
        )
        _manifests.put(digest, manifest)
    enabled = enable or (current is not None and current.enabled)
    txn.execute(
        "INSERT INTO apps (app_id, app_scope, kind, version, enabled, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app_id) DO UPDATE SET"
        " app_scope = excluded.app_scope, kind = excluded.kind, version = excluded.version,"
        " enabled = excluded.enabled, updated_at = excluded.updated_at",
        (manifest.id, manifest.app_scope, manifest.kind, manifest.version, int(enabled), now),
    )
    audit(txn, now, "user", "app.install", f"{manifest.id}@{manifest.version}", "installed")
    entry = _entry(txn, manifest.id)
    assert entry is not None
    return _installed(txn, entry, True, now)


def _installed(txn: RuntimeTxn, entry: AppEntry, new: bool, now: str) -> Installed:
    inventory, changed = refresh_inventory(txn, now)
    return Installed(entry, new, inventory, changed)


def set_enabled(conn: Sql, app_id: str, enabled: bool, now: str) -> AppEntry:
    """Enable or disable ``app_id`` (idempotent). Raises ``RegistryError``
    (``app_not_found``; ``app_unavailable`` to enable an app with no version it may
    run)."""
    if enabled:
        row = conn.execute("SELECT unavailable FROM apps WHERE app_id = ?", (app_id,)).fetchone()
        if row is not None and row[0] is not None:
            raise RegistryError(ErrorCode.APP_UNAVAILABLE, "the app has no version it may run")
    changed = conn.execute(
        "UPDATE apps SET enabled = ?, updated_at = ? WHERE app_id = ? AND enabled != ?",
        (int(enabled), now, app_id, int(enabled)),
    ).rowcount
    entry = _entry(conn, app_id)
    if entry is None:
        raise RegistryError(ErrorCode.APP_NOT_FOUND, "no such app")
    if changed:
        audit(conn, now, "user", "app.enable", app_id, "enabled" if enabled else "disabled")
    return entry


def surface_of(conn: Sql, app_scope: str, surface_id: str | None = None) -> SurfaceSource | None:
    """The surface ``surface_id`` (by default the first) of the version in use of the
    app with ``app_scope``, from its stored files; ``None`` without one."""
    row = conn.execute("SELECT app_id, version FROM apps WHERE app_scope = ?", (app_scope,))
    found = row.fetchone()
    if found is None:
        return None
    return surface_of_version(conn, found[0], found[1], surface_id)


def surface_of_version(
    conn: Sql, app_id: str, version: str, surface_id: str | None = None
) -> SurfaceSource | None:
    """The surface ``surface_id`` (by default the first) of ``app_id`` at exactly
    ``version``, from its stored files; ``None`` without one. An installed app's
    surface exists only while its version is a verified, unrevoked release."""
    manifest = manifest_of(conn, app_id, version)
    if manifest is None:
        return None
    if manifest.kind == "installed" and not runnable_release(conn, app_id, version):
        return None
    files = dict(
        conn.execute(
            "SELECT path, body FROM app_files WHERE app_id = ? AND version = ?",
            (app_id, version),
        ).fetchall()
    )
    return surface_source(manifest, {k: bytes(v) for k, v in files.items()}, surface_id)


ICON_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".webp": "image/webp"}
"""The media type of an icon, by the suffix its manifest path must have."""


def icon_of(conn: Sql, app_scope: str) -> tuple[bytes, str] | None:
    """The icon of the version in use of the app with ``app_scope`` and its media
    type, from its stored files; ``None`` without one (or, for an installed app, while
    its version is not a verified, unrevoked release, as for its surfaces)."""
    row = conn.execute(
        "SELECT app_id, version FROM apps WHERE app_scope = ?", (app_scope,)
    ).fetchone()
    if row is None:
        return None
    app_id, version = row[0], row[1]
    manifest = manifest_of(conn, app_id, version)
    if manifest is None or manifest.icon is None:
        return None
    if manifest.kind == "installed" and not runnable_release(conn, app_id, version):
        return None
    found = conn.execute(
        "SELECT body FROM app_files WHERE app_id = ? AND version = ? AND path = ?",
        (app_id, version, manifest.icon),
    ).fetchone()
    if found is None:
        return None
    return bytes(found[0]), ICON_TYPES[manifest.icon[manifest.icon.rindex(".") :]]


def runnable_release(conn: Sql, app_id: str, version: str) -> bool:
    """Whether ``app_id`` at ``version`` was installed from a verified release that
    is not revoked, by a key that is not revoked."""
    row = conn.execute(
        "SELECT 1 FROM app_releases r WHERE r.app_id = ? AND r.version = ?"
        " AND NOT EXISTS (SELECT 1 FROM revoked_versions v"
        "  WHERE v.app_id = r.app_id AND v.version = r.version)"
        " AND NOT EXISTS (SELECT 1 FROM revoked_keys k WHERE k.key_id = r.key_id)",
        (app_id, version),
    ).fetchone()
    return row is not None


def find_tool(conn: Sql, tool_id: str) -> ToolTarget | None:
    """The registered app (enabled or not) whose version in use declares ``tool_id``."""
    scope = tool_id.split(".", 1)[0]
    row = conn.execute("SELECT app_id FROM apps WHERE app_scope = ?", (scope,)).fetchone()
    if row is None:
        return None
    entry = _entry(conn, row[0])
    manifest = manifest_of(conn, row[0])
    if entry is None or manifest is None:
        return None
    for descriptor in manifest.tools:
        if descriptor.id == tool_id:
            return ToolTarget(entry, manifest, descriptor, compile_tool(descriptor))
    return None


def granted(conn: Sql, app_id: str) -> dict[str, CapabilityDescriptor]:
    """The capabilities granted to ``app_id`` by the policy, by name."""
    rows = conn.execute(
        "SELECT name, version, risk FROM capability_grants WHERE app_id = ? ORDER BY name",
        (app_id,),
    ).fetchall()
    return {r[0]: CapabilityDescriptor(name=r[0], version=r[1], risk=r[2]) for r in rows}


def _allowed(descriptor: ToolDescriptor, grants: Mapping[str, CapabilityDescriptor]) -> bool:
    return all(name in grants for name in descriptor.permissions or ())


def _version_key(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in value.split("."))


def _union(found: list[CapabilityDescriptor]) -> list[CapabilityDescriptor]:
    """One descriptor per name, by name: the most restrictive risk, then the highest
    version."""
    best: dict[str, CapabilityDescriptor] = {}
    for c in found:
        held = best.get(c.name)
        key = (RISKS.index(c.risk), _version_key(c.version))
        if held is None or key > (RISKS.index(held.risk), _version_key(held.version)):
            best[c.name] = c
    return [best[name] for name in sorted(best)]


def build_inventory(conn: Sql, revision: str | None = None) -> ClientInventory:
    """The content to advertise now (under ``revision``; a digest when ``None``): the
    enabled apps, their tools whose permissions are all granted, the granted
    capabilities they declare, and the person's language (``person_locale``)."""
    applications = []
    tools: list[ToolDescriptor] = []
    capabilities: list[CapabilityDescriptor] = []
    for entry in entries(conn, enabled_only=True):
        manifest = manifest_of(conn, entry.app_id)
        if manifest is None:  # pragma: no cover - the foreign key keeps it
            continue
        grants = granted(conn, entry.app_id)
        applications.append(to_inventory_application(manifest))
        tools.extend(t for t in tool_descriptors(manifest) if _allowed(t, grants))
        capabilities.extend(grants[n] for n in manifest.permissions if n in grants)
    tools.extend(mcp_servers.descriptors(conn))  # each enabled MCP server's tools
    capabilities.extend(c.descriptor for c in host_declared(conn).values())
    locale = preferences.known_locale(conn)
    made = ix.inventory(tools, applications=applications, revision=revision, locale=locale)
    if not capabilities:
        return made
    content = msgspec.structs.replace(made, capabilities=_union(capabilities))
    if revision is None:  # the digest must cover the capabilities too
        return _with_revision(content, "inv-" + ix.content_digest(content)[:20])
    return content


def advertised_tool(conn: Sql, tool_id: str) -> ToolTarget | None:
    """``tool_id`` if the inventory advertises it now: a registered, enabled app
    declares it and every one of its permissions is granted to that app."""
    found = find_tool(conn, tool_id)
    if found is None or not found.entry.enabled:
        return None
    if not _allowed(found.descriptor, granted(conn, found.entry.app_id)):
        return None
    return found


def grant_capability(
    conn: Sql,
    app_id: str,
    name: str,
    now: str,
    *,
    version: str = "1.0",
    risk: str = "user_confirmation",
) -> bool:
    """Grant ``name`` to ``app_id`` (idempotent; a new version or risk replaces the
    grant). Returns whether the policy changed. Raises ``RegistryError``
    (``app_not_found``) or ``ValueError`` for a bad name, version or risk."""
    if not _CAPABILITY.match(name) or len(name) > 255:
        raise ValueError(f"not a capability name: {name!r}")
    if not _VERSION.match(version):
        raise ValueError(f"not a capability version: {version!r}")
    if risk not in RISKS:
        raise ValueError(f"not a risk: {risk!r}")
    if _entry(conn, app_id) is None:
        raise RegistryError(ErrorCode.APP_NOT_FOUND, "no such app")
    held = conn.execute(
        "SELECT version, risk FROM capability_grants WHERE app_id = ? AND name = ?",
        (app_id, name),
    ).fetchone()
    if held is not None and tuple(held) == (version, risk):
        return False
    conn.execute(
        "INSERT INTO capability_grants (app_id, name, version, risk, granted_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_id, name) DO UPDATE SET"
        " version = excluded.version, risk = excluded.risk, granted_at = excluded.granted_at",
        (app_id, name, version, risk, now),
    )
    audit(conn, now, "user", "capability.grant", f"{app_id}/{name}", "granted")
    return True


def revoke_capability(conn: Sql, app_id: str, name: str, now: str) -> bool:
    """Remove the grant of ``name`` to ``app_id`` (idempotent). Returns whether the
    policy changed."""
    removed = conn.execute(
        "DELETE FROM capability_grants WHERE app_id = ? AND name = ?", (app_id, name)
    ).rowcount
    if removed:
        audit(conn, now, "user", "capability.revoke", f"{app_id}/{name}", "revoked")
    return bool(removed)


def app_list(inventory: ClientInventory) -> AppList:
    """The capability-only projection of ``inventory`` (``lineup.v1.app.list``)."""
    return AppList(capabilities=list(inventory.capabilities))


def publish_app_list(
    txn: RuntimeTxn, conversation_id: str, inventory: ClientInventory, now: str
) -> OutboxItem | None:
    """Queue the ``app.list`` of ``inventory`` to a conversation unless that same
    projection was the last one queued there. A conversation that never had one gets
    it only when the projection is not empty."""
    projection = app_list(inventory)
    digest = _digest(msgspec.json.encode(projection, order="deterministic"))
    row = txn.execute(
        "SELECT digest FROM app_list_published WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    if (row is not None and row[0] == digest) or (row is None and not projection.capabilities):
        return None
    txn.execute(
        "INSERT INTO app_list_published (conversation_id, digest, at) VALUES (?, ?, ?)"
        " ON CONFLICT (conversation_id) DO UPDATE SET digest = excluded.digest, at = excluded.at",
        (conversation_id, digest, now),
    )
    return queue_from_runtime(
        txn, AppListEnvelope, f"apl_{uuid.uuid4().hex}", conversation_id, projection, now
    )


def published_elsewhere(revision: str, current: str) -> bool:
    """Whether a call's ``revision`` is newer than ``current``, the newest this Runtime
    published (``inv-<n>``, monotonic): then another Runtime of the person published it
    (each keeps its own counter), and a call naming it is that one's to answer, not a
    stale call to refuse."""
    mine, theirs = _number(current), _number(revision)
    return mine is not None and theirs is not None and theirs > mine


def _number(revision: str) -> int | None:
    prefix, _, number = revision.partition("-")
    return int(number) if prefix == "inv" and number.isdigit() and len(number) < 19 else None


def revision(conn: Sql) -> str:
    """The inventory revision advertised now (``inv-<n>``)."""
    row = conn.execute("SELECT counter FROM inventory_state WHERE id = 1").fetchone()
    return INITIAL_REVISION if row is None else f"inv-{row[0]}"


def refresh_inventory(txn: RuntimeTxn, now: str) -> tuple[ClientInventory, bool]:
    """The inventory to advertise, its counter bumped when the content changed since
    it was last stored. Returns it and whether it changed."""
    content = build_inventory(txn)
    digest = ix.content_digest(content)
    row = txn.execute("SELECT counter, digest FROM inventory_state WHERE id = 1").fetchone()
    if row is None:  # revision 1 is the content of a store without apps nor language
        changed = digest != ix.content_digest(ix.inventory())
        counter = 2 if changed else 1
        txn.execute(
            "INSERT INTO inventory_state (id, counter, digest, updated_at) VALUES (1, ?, ?, ?)",
            (counter, digest, now),
        )
    elif row[1] != digest:
        counter, changed = row[0] + 1, True
        txn.execute(
            "UPDATE inventory_state SET counter = ?, digest = ?, updated_at = ? WHERE id = 1",
            (counter, digest, now),
        )
        audit(txn, now, "runtime", "inventory", f"inv-{counter}", "changed")
    else:
        counter, changed = row[0], False
    inventory = _with_revision(content, f"inv-{counter}")
    publish_everywhere(txn, inventory, now)
    txn.emit(InventoryChanged(inventory))
    return inventory, changed


def publish_everywhere(txn: RuntimeTxn, inventory: ClientInventory, now: str) -> None:
    """Queue ``inventory`` (and its ``app.list``) to every conversation that does not
    have that revision yet, in the transaction that made it. Nothing before a login:
    there is nobody to publish as."""
    if not has_session(txn):
        return
    for (conversation_id,) in txn.execute(
        "SELECT id FROM conversations ORDER BY created_at, id"
    ).fetchall():
        publish_to(txn, conversation_id, inventory, now)


def publish_to(txn: RuntimeTxn, conversation_id: str, inventory: ClientInventory, now: str) -> None:
    """``client.inventory`` then ``app.list`` (runtime-sent, docs/protocol.md), each
    only when it differs from the one last queued to the conversation."""
    interaction_store.publish_inventory(txn, conversation_id, inventory, now)
    publish_app_list(txn, conversation_id, inventory, now)


def _with_revision(content: ClientInventory, value: str) -> ClientInventory:
    return msgspec.structs.replace(content, revision=value)


# --- the async face ------------------------------------------------------------------------


class AppRegistry:
    """Install, enable and disable apps; serve the current inventory. Every
    transaction that changes what the inventory holds recomputes it, publishes it and
    emits ``InventoryChanged``, which this registry adopts after the commit."""

    def __init__(
        self,
        store: RuntimeStore,
        *,
        clock: Callable[[], datetime] | None = None,
        initial: ClientInventory | None = None,
    ) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self.inventory: ClientInventory = initial or ix.inventory(revision=INITIAL_REVISION)
        """The inventory advertised now (the last one committed)."""
        store.listen(emit=self._adopt)

    def _adopt(self, event: RuntimeEvent) -> None:
        if isinstance(event, InventoryChanged):
            self.inventory = event.inventory

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    async def load(self) -> ClientInventory:
        """After the store opened: the stored inventory, bumped if this software
        advertises something else for the same apps."""
        inventory, _ = await self._store.db.write(refresh_inventory, self._now())
        return inventory

    async def install(
        self, data: bytes | str | Mapping[str, Any], *, enable: bool = False
    ) -> Installed:
        """Validate ``data`` with ``load_manifest`` and install it (see ``install``).
        Raises ``ManifestError`` or ``RegistryError``."""
        return await self._install(load_manifest(data), None, enable)

    async def install_bundle(self, bundle: AppBundle | Path, *, enable: bool = False) -> Installed:
        """Install a checked bundle, or the bundle directory at a path (see
        ``bundle.load_bundle_dir``). Raises ``BundleError``, ``ManifestError`` or
        ``RegistryError``."""
        if isinstance(bundle, Path):
            bundle = load_bundle_dir(bundle)
        return await self._install(bundle.manifest, bundle.files, enable)

    async def _install(
        self, manifest: AppManifest, files: Mapping[str, bytes] | None, enable: bool
    ) -> Installed:
        result: Installed = await self._store.db.write(
            _install_txn, manifest, files, enable, self._now()
        )
        return result

    async def surface(self, app_scope: str, surface_id: str | None = None) -> SurfaceSource | None:
        return await self._store.db.read(surface_of, app_scope, surface_id)

    async def surface_version(
        self, app_id: str, version: str, surface_id: str | None
    ) -> SurfaceSource | None:
        return await self._store.db.read(surface_of_version, app_id, version, surface_id)

    async def icon(self, app_scope: str) -> tuple[bytes, str] | None:
        """The icon of the app with ``app_scope`` and its media type (``icon_of``)."""
        return await self._store.db.read(icon_of, app_scope)

    async def enable(self, app_id: str) -> AppEntry:
        return await self._set(app_id, True)

    async def disable(self, app_id: str) -> AppEntry:
        return await self._set(app_id, False)

    async def _set(self, app_id: str, enabled: bool) -> AppEntry:
        """Enabling or disabling is one transaction. Disabling also closes every live
        instance of the app in it (tools ``cancelled(app_closed)``, surfaces closed,
        sub-sessions ended ``app_disabled``): a disabled app runs nowhere."""
        entry: AppEntry = await self._store.db.write(_set_txn, app_id, enabled, self._now())
        return entry

    async def grant_capability(
        self, app_id: str, name: str, *, version: str = "1.0", risk: str = "user_confirmation"
    ) -> ClientInventory:
        """Grant ``name`` to ``app_id`` (see ``grant_capability``); the inventory after."""
        return await self._policy(_grant_txn, app_id, name, version, risk)

    async def revoke_capability(self, app_id: str, name: str) -> ClientInventory:
        """Remove the grant (see ``revoke_capability``); the inventory after."""
        return await self._policy(_revoke_txn, app_id, name)

    async def granted(self, app_id: str) -> dict[str, CapabilityDescriptor]:
        return await self._store.db.read(granted, app_id)

    async def _policy(self, txn: Callable[..., Any], *args: Any) -> ClientInventory:
        inventory, _ = await self._store.db.write(txn, *args, self._now())
        return inventory  # type: ignore[no-any-return]

    async def apps(self) -> list[AppEntry]:
        return await self._store.db.read(entries)

    async def list_enabled(self) -> list[AppEntry]:
        return await self._store.db.read(_enabled)

    async def manifest(self, app_id: str, version: str | None = None) -> AppManifest | None:
        return await self._store.db.read(manifest_of, app_id, version)

    async def refresh(self) -> ClientInventory:
        """Recompute the inventory after something else changed what it holds (a
        host attached its capabilities, the person revoked one)."""
        inventory, _ = await self._store.db.write(refresh_inventory, self._now())
        return inventory


def _enabled(conn: Sql) -> list[AppEntry]:
    return entries(conn, enabled_only=True)


def _install_txn(
    txn: RuntimeTxn,
    manifest: AppManifest,
    files: Mapping[str, bytes] | None,
    enable: bool,
    now: str,
) -> Installed:
    return install(txn, manifest, now, enable=enable, files=files)


def _set_txn(txn: RuntimeTxn, app_id: str, enabled: bool, now: str) -> AppEntry:
    entry = set_enabled(txn, app_id, enabled, now)
    if not enabled:
        instance_store.close_scope(txn, entry.app_scope, now)
    refresh_inventory(txn, now)
    return entry


def _grant_txn(
    txn: RuntimeTxn, app_id: str, name: str, version: str, risk: str, now: str
) -> tuple[ClientInventory, bool]:
    grant_capability(txn, app_id, name, now, version=version, risk=risk)
    return refresh_inventory(txn, now)


def _revoke_txn(txn: RuntimeTxn, app_id: str, name: str, now: str) -> tuple[ClientInventory, bool]:
    revoke_capability(txn, app_id, name, now)
    return refresh_inventory(txn, now)
