"""Delivered apps in the store (spec 002 §9): trusted keys, verified releases,
revocation with rollback, removal, and the catalog as last fetched.

Transaction functions take the connection and run on the store's writer. Rules:

* Only a ``delivery.verify.Verified`` release is recorded (``record_verified``): its
  files go in with the registry row and its signed release beside them, in one
  transaction committed after the artifact is in the verified cache.
* A release older than the version in use is ``version_downgrade``; a revoked version
  is ``version_revoked``; a key revoked is ``key_revoked``. Going back happens only
  through a rollback.
* Revoking the version in use (or the key that signed it) rolls the app back, in the
  same transaction, to the newest older version that still verifies *now*: its
  release is not revoked, its key is trusted and not revoked, and the cached artifact
  still has its SHA-256 and signature. Without one the app becomes unavailable
  (disabled, with the reason). Either way its live instances close and its open
  agent surfaces end: revoked code stops running.
* Audit rows hold app ids, versions, key ids and codes only: never artifact bytes,
  URLs, tokens or paths.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lineup.delivery.cache import VerifiedCache
from lineup.delivery.catalog import CatalogDocument
from lineup.delivery.errors import DeliveryError, DeliveryErrorCode
from lineup.delivery.keys import PublicKey
from lineup.delivery.release import Release, decode_release, encode_release
from lineup.delivery.verify import Verified, verify
from lineup.formats.semver import compare_semver
from lineup.protocol import ErrorCode

from .. import ui_surfaces
from ..records import OutboxItem
from ..tables import audit
from ..txn import RuntimeTxn, Sql
from . import instance_store, registry

__all__ = [
    "CentreApp",
    "Fallback",
    "Offer",
    "Trust",
    "app_centre",
    "record_verified",
    "referenced_digests",
    "remove_app",
    "revoke_key",
    "revoke_version",
    "store_catalog",
    "trust",
    "trust_key",
]

Ended = tuple[str, str, OutboxItem]
"""An agent surface ended: conversation id, its ``ui.open`` id, the event queued."""


def _compare_rows(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    return compare_semver(a[0], b[0])


_by_precedence = functools.cmp_to_key(_compare_rows)


@dataclass(frozen=True, slots=True)
class Trust:
    """The keys this Runtime trusts now, and every revoked key id."""

    keys: dict[str, PublicKey]
    revoked: frozenset[str]


@dataclass(frozen=True, slots=True)
class Fallback:
    """What a revocation did to one app: ``rolled_back`` to ``to_version``, or
    ``unavailable``; ``reason`` is the code (``version_revoked``, ``key_revoked``)."""

    app_id: str
    outcome: str
    from_version: str
    to_version: str | None
    reason: str
    name: str = ""
    """The app's display name (for telling the person)."""


@dataclass(frozen=True, slots=True)
class Offer:
    """A release the catalog offers that is newer than what is installed (or an app
    not installed at all)."""

    app_id: str
    version: str
    key_id: str
    permissions: tuple[str, ...]
    name: str = ""
    """The display name its release signs (empty for a release that names none)."""


@dataclass(frozen=True, slots=True)
class CentreApp:
    """One row of the app centre: what is installed and what can be done with it."""

    app_id: str
    name: str
    kind: str
    version: str
    enabled: bool
    unavailable: str | None
    key_id: str | None
    key_name: str | None
    permissions: tuple[str, ...]
    versions: tuple[str, ...]
    update: str | None
    app_scope: str = ""


# --- trust ------------------------------------------------------------------------------------


def trust_key(conn: Sql, key: PublicKey, now: str) -> bool:
    """Trust ``key`` for releases (idempotent). A revoked key id cannot be trusted
    again: ``key_revoked``."""
    if conn.execute("SELECT 1 FROM revoked_keys WHERE key_id = ?", (key.key_id,)).fetchone():
        raise DeliveryError(DeliveryErrorCode.KEY_REVOKED, "this key was revoked")
    added = conn.execute(
        "INSERT OR IGNORE INTO trusted_keys (key_id, public_key, name, added_at)"
        " VALUES (?, ?, ?, ?)",
        (key.key_id, key.raw, key.name, now),
    ).rowcount
    if added:
        audit(conn, now, "user", "key.trust", key.key_id, "trusted")
    return bool(added)


def trust(conn: Sql) -> Trust:
    keys = {
        r[0]: PublicKey(r[0], bytes(r[1]), r[2])
        for r in conn.execute("SELECT key_id, public_key, name FROM trusted_keys")
    }
    revoked = frozenset(r[0] for r in conn.execute("SELECT key_id FROM revoked_keys"))
    return Trust(keys, revoked)


# --- install ----------------------------------------------------------------------------------


def _revoked_version(conn: Sql, app_id: str, version: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM revoked_versions WHERE app_id = ? AND version = ?", (app_id, version)
        ).fetchone()
        is not None
    )


def check_installable(conn: Sql, release: Release) -> None:
    """Refuse, before anything is fetched, a release that cannot be installed here:
    ``version_revoked``, ``key_revoked``, ``app_version_conflict`` (this version is
    installed with other bytes), ``version_downgrade``."""
    _stored_sha256(conn, release)
    if _revoked_version(conn, release.app_id, release.version):
        raise DeliveryError(DeliveryErrorCode.VERSION_REVOKED, "this version was revoked")
    if conn.execute("SELECT 1 FROM revoked_keys WHERE key_id = ?", (release.key_id,)).fetchone():
        raise DeliveryError(DeliveryErrorCode.KEY_REVOKED, "the signing key was revoked")
    entry = registry.entries_by_id(conn, release.app_id)
    if entry is None or entry.unavailable is not None:
        return
    if compare_semver(release.version, entry.version) < 0:
        raise DeliveryError(
            DeliveryErrorCode.VERSION_DOWNGRADE,
            f"{entry.version} is in use; only a rollback goes back",
        )


def _stored_sha256(conn: Sql, release: Release) -> str | None:
    row = conn.execute(
        "SELECT sha256 FROM app_releases WHERE app_id = ? AND version = ?",
        (release.app_id, release.version),
    ).fetchone()
    if row is not None and row[0] != release.sha256:
        raise DeliveryError(
            DeliveryErrorCode.VERSION_CONFLICT, "this version is installed with other bytes"
        )
    return None if row is None else str(row[0])


def record_verified(
    txn: RuntimeTxn,
    verified: Verified,
    now: str,
    cache: VerifiedCache,
    *,
    enable: bool,
) -> registry.Installed:
    """Make a verified release (its artifact already in ``cache``) the version in
    use. Raises ``DeliveryError`` or ``registry.RegistryError``; a refusal changes
    nothing."""
    release = verified.release
    check_installable(txn, release)
    if release.key_id not in trust(txn).keys:  # trust changed while it downloaded
        raise DeliveryError(DeliveryErrorCode.KEY_UNKNOWN, "the signing key is not trusted")
    if cache.read(release.sha256) is None:  # the row must never name a missing file
        raise DeliveryError(DeliveryErrorCode.CACHE_UNAVAILABLE, "the verified file is missing")
    stored = _stored_sha256(txn, release)
    try:
        installed = registry.install(
            txn,
            verified.bundle.manifest,
            now,
            enable=enable,
            files=verified.bundle.files,
            verified=True,
        )
    except registry.RegistryError as exc:
        if exc.code == ErrorCode.APP_VERSION_CONFLICT:
            raise DeliveryError(DeliveryErrorCode.VERSION_CONFLICT, exc.message) from None
        raise
    if stored is None:
        txn.execute(
            "INSERT INTO app_releases (app_id, version, artifact_id, sha256, length, key_id,"
            " release, verified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                release.app_id,
                release.version,
                release.artifact_id,
                release.sha256,
                release.length,
                release.key_id,
                encode_release(release),
                now,
            ),
        )
    cleared = txn.execute(
        "UPDATE apps SET unavailable = NULL WHERE app_id = ? AND unavailable IS NOT NULL",
        (release.app_id,),
    ).rowcount
    subject = f"{release.app_id}@{release.version}"
    audit(txn, now, "user", "app.release", subject, "verified", release.key_id)
    if not cleared:  # registry.install already refreshed the inventory
        return installed
    if enable:
        registry.set_enabled(txn, release.app_id, True, now)
    entry = registry.entries_by_id(txn, release.app_id)
    assert entry is not None
    inventory, changed = registry.refresh_inventory(txn, now)
    return registry.Installed(entry, installed.installed, inventory, changed)


# --- revocation and rollback ------------------------------------------------------------------


def revoke_version(
    txn: RuntimeTxn,
    app_id: str,
    version: str,
    source: str,
    now: str,
    cache: VerifiedCache,
) -> tuple[list[Fallback], list[Ended]]:
    """Revoke ``app_id`` at ``version`` (idempotent) and fall back if it is in use."""
    added = txn.execute(
        "INSERT OR IGNORE INTO revoked_versions (app_id, version, source, revoked_at)"
        " VALUES (?, ?, ?, ?)",
        (app_id, version, source, now),
    ).rowcount
    if added:
        audit(txn, now, source, "app.revoke", f"{app_id}@{version}", "revoked")
    entry = registry.entries_by_id(txn, app_id)
    if entry is None or entry.kind != "installed" or entry.unavailable is not None:
        return [], []
    if entry.version != version:
        return [], []
    return _fall_back(txn, [entry], DeliveryErrorCode.VERSION_REVOKED, now, cache)


def revoke_key(
    txn: RuntimeTxn,
    key_id: str,
    source: str,
    now: str,
    cache: VerifiedCache,
) -> tuple[list[Fallback], list[Ended]]:
    """Revoke a key (idempotent): every app whose version in use it signed falls back."""
    added = txn.execute(
        "INSERT OR IGNORE INTO revoked_keys (key_id, source, revoked_at) VALUES (?, ?, ?)",
        (key_id, source, now),
    ).rowcount
    if added:
        audit(txn, now, source, "key.revoke", key_id, "revoked")
    rows = txn.execute(
        "SELECT a.app_id FROM apps a JOIN app_releases r"
        " ON r.app_id = a.app_id AND r.version = a.version"
        " WHERE r.key_id = ? AND a.unavailable IS NULL ORDER BY a.app_id",
        (key_id,),
    ).fetchall()
    found = [registry.entries_by_id(txn, r[0]) for r in rows]
    affected = [e for e in found if e is not None]
    return _fall_back(txn, affected, DeliveryErrorCode.KEY_REVOKED, now, cache)


def _fall_back(
    txn: RuntimeTxn,
    affected: list[registry.AppEntry],
    reason: str,
    now: str,
    cache: VerifiedCache,
) -> tuple[list[Fallback], list[Ended]]:
    fallbacks: list[Fallback] = []
    events: list[Ended] = []
    current = trust(txn)
    for entry in affected:
        manifest = registry.manifest_of(txn, entry.app_id, entry.version)
        name = manifest.name if manifest else entry.app_id
        target = _predecessor(txn, entry, current, cache)
        subject = f"{entry.app_id}@{entry.version}"
        if target is not None:
            txn.execute(
                "UPDATE apps SET version = ?, updated_at = ? WHERE app_id = ?",
                (target, now, entry.app_id),
            )
            audit(txn, now, "runtime", "app.rollback", subject, "rolled_back", reason)
            fallbacks.append(
                Fallback(entry.app_id, "rolled_back", entry.version, target, reason, name)
            )
        else:
            txn.execute(
                "UPDATE apps SET enabled = 0, unavailable = ?, updated_at = ? WHERE app_id = ?",
                (reason, now, entry.app_id),
            )
            audit(txn, now, "runtime", "app.rollback", subject, "unavailable", reason)
            fallbacks.append(
                Fallback(entry.app_id, "unavailable", entry.version, None, reason, name)
            )
        instance_store.close_scope(txn, entry.app_scope, now, reason="app_revoked")
        events.extend(ui_surfaces.close_for_version(txn, entry.app_id, entry.version, now))
    return fallbacks, events


def _predecessor(
    conn: Sql, entry: registry.AppEntry, current: Trust, cache: VerifiedCache
) -> str | None:
    """The newest version older than the one in use that verifies now, from the
    verified cache."""
    rows = conn.execute(
        "SELECT version, release, sha256 FROM app_releases WHERE app_id = ?", (entry.app_id,)
    ).fetchall()
    older = [r for r in rows if compare_semver(r[0], entry.version) < 0]
    for version, body, sha256 in sorted(older, key=_by_precedence, reverse=True):
        if _revoked_version(conn, entry.app_id, version):
            continue
        artifact = cache.read(sha256)
        if artifact is None:
            continue
        try:
            verify(decode_release(bytes(body)), artifact, current.keys, current.revoked)
        except DeliveryError:
            continue
        return str(version)
    return None


# --- removal ------------------------------------------------------------------------------------


def remove_app(txn: RuntimeTxn, app_id: str, now: str) -> list[Ended]:
    """Remove a delivered app: close its live instances and open surfaces, then delete
    its versions, files, releases and grants. Built-in apps are not removable
    (``app_not_removable``; disable them instead)."""
    entry = registry.entries_by_id(txn, app_id)
    if entry is None:
        raise registry.RegistryError(ErrorCode.APP_NOT_FOUND, "no such app")
    if entry.kind != "installed":
        raise registry.RegistryError(
            ErrorCode.APP_NOT_REMOVABLE, "a built-in app can only be disabled"
        )
    instance_store.close_scope(txn, entry.app_scope, now)
    events: list[Ended] = []
    for version in entry.versions:
        events.extend(ui_surfaces.close_for_version(txn, app_id, version, now))
    for table in ("apps", "app_files", "app_releases", "app_versions", "capability_grants"):
        txn.execute(f"DELETE FROM {table} WHERE app_id = ?", (app_id,))  # noqa: S608
    audit(txn, now, "user", "app.remove", app_id, "removed")
    return events


def referenced_digests(conn: Sql) -> set[str]:
    """Every artifact the store still names (what the verified cache must keep)."""
    return {r[0] for r in conn.execute("SELECT sha256 FROM app_releases")}


# --- the catalog ------------------------------------------------------------------------------


def store_catalog(conn: Sql, document: CatalogDocument, now: str) -> bool:
    """Keep the fetched catalog's releases (for "update available"). Returns whether
    the revision changed."""
    row = conn.execute("SELECT revision FROM catalog_state WHERE id = 1").fetchone()
    production = int(document.security == "production")
    conn.execute(
        "INSERT INTO catalog_state (id, revision, production, fetched_at) VALUES (1, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,"
        " production = excluded.production, fetched_at = excluded.fetched_at",
        (document.revision, production, now),
    )
    if row is not None and row[0] == document.revision:
        return False
    conn.execute("DELETE FROM catalog_releases")
    conn.executemany(
        "INSERT OR IGNORE INTO catalog_releases (app_id, version, release) VALUES (?, ?, ?)",
        [
            (release.app_id, release.version, encode_release(release))
            for releases in document.releases.values()
            for release in releases
        ],
    )
    audit(conn, now, "runtime", "catalog", document.revision, "fetched")
    return True


def catalog_release(conn: Sql, app_id: str, version: str) -> Release | None:
    row = conn.execute(
        "SELECT release FROM catalog_releases WHERE app_id = ? AND version = ?", (app_id, version)
    ).fetchone()
    return None if row is None else decode_release(bytes(row[0]))


def _offers(conn: Sql) -> dict[str, Offer]:
    """The newest installable release the catalog offers, per app."""
    current = trust(conn)
    best: dict[str, Offer] = {}
    for (body,) in conn.execute("SELECT release FROM catalog_releases").fetchall():
        release = decode_release(bytes(body))
        app_id, version = release.app_id, release.version
        if release.key_id in current.revoked or _revoked_version(conn, app_id, version):
            continue
        held = best.get(app_id)
        if held is None or compare_semver(version, held.version) > 0:
            best[app_id] = Offer(
                app_id, version, release.key_id, tuple(release.permissions), release.name
            )
    return best


def app_centre(conn: Sql) -> tuple[list[CentreApp], list[Offer], dict[str, object]]:
    """Every installed app with what can be done with it, the catalog's apps that are
    not installed, and the catalog's state."""
    offers = _offers(conn)
    current = trust(conn)
    apps: list[CentreApp] = []
    for entry in registry.entries(conn):
        manifest = registry.manifest_of(conn, entry.app_id, entry.version)
        release = conn.execute(
            "SELECT key_id FROM app_releases WHERE app_id = ? AND version = ?",
            (entry.app_id, entry.version),
        ).fetchone()
        key_id = None if release is None else str(release[0])
        key = None if key_id is None else current.keys.get(key_id)
        offer = offers.pop(entry.app_id, None)
        update = (
            offer.version
            if offer is not None
            and entry.kind == "installed"
            and compare_semver(offer.version, entry.version) > 0
            else None
        )
        apps.append(
            CentreApp(
                app_id=entry.app_id,
                name=manifest.name if manifest else entry.app_id,
                kind=entry.kind,
                version=entry.version,
                enabled=entry.enabled,
                unavailable=entry.unavailable,
                key_id=key_id,
                key_name=None if key is None else key.name,
                permissions=tuple(manifest.permissions) if manifest else (),
                versions=entry.versions,
                update=update,
                app_scope=entry.app_scope,
            )
        )
    row = conn.execute(
        "SELECT revision, production, fetched_at FROM catalog_state WHERE id = 1"
    ).fetchone()
    state: dict[str, object] = (
        {"revision": None, "production": False, "fetched_at": None}
        if row is None
        else {"revision": row[0], "production": bool(row[1]), "fetched_at": row[2]}
    )
    return apps, sorted(offers.values(), key=lambda o: o.app_id), state
