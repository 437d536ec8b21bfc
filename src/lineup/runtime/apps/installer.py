"""Installing, updating, revoking and removing delivered MiniApps: the async face of
``releases`` (spec 002 §9.2).

An install runs: the release is looked up (in the catalog, or given), refused early
if it cannot be installed here (revoked, downgrade, untrusted key, bad signature, too
large, host too old), its artifact is downloaded into memory (never more than its
stated length), checked (length, SHA-256, archive, bundle, release match), written to
the verified cache (temp file, fsync, rename) and only then recorded, in one
transaction, as the version in use. A failure at any step writes nothing the
registry names and leaves the active version as it was; it is audited with its code.

One install, revocation or removal runs at a time (a lock), so the cache sweep at
start-up is the only place a cached file is deleted while nothing is in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lineup.delivery.cache import VerifiedCache
from lineup.delivery.catalog import CatalogClient, CatalogDocument
from lineup.delivery.errors import DeliveryError, DeliveryErrorCode
from lineup.delivery.keys import PublicKey
from lineup.delivery.release import Release, decode_release
from lineup.delivery.verify import Verified, check_artifact, check_release
from lineup.protocol import ErrorCode

from ..tables import audit
from ..txn import RuntimeTxn
from . import registry, releases

if TYPE_CHECKING:
    from ..store import RuntimeStore

__all__ = ["AppCentreChanged", "AppDelivery", "CatalogRefresh"]

log = logging.getLogger("lineup.runtime.delivery")

CATALOG_INTERVAL = 15 * 60.0
"""Seconds between catalog fetches while the Runtime runs (and one at start)."""


@dataclass(frozen=True, slots=True)
class AppCentreChanged:
    """Installed apps, their versions, the catalog or the trusted keys changed: hosts
    show the app centre again. ``fallbacks`` are the rollbacks a revocation caused."""

    fallbacks: tuple[releases.Fallback, ...] = ()


@dataclass(frozen=True, slots=True)
class CatalogRefresh:
    """What a catalog fetch did."""

    revision: str
    changed: bool
    production: bool
    fallbacks: tuple[releases.Fallback, ...]


class AppDelivery:
    """Signed delivery for one Runtime. ``catalog_client`` makes a client for the
    catalog in use (``None`` while logged out). What a change closes, queues and
    shows follows its commit (the unit of work)."""

    def __init__(
        self,
        store: RuntimeStore,
        cache: VerifiedCache,
        *,
        clock: Callable[[], datetime],
        catalog_client: Callable[[], CatalogClient | None],
    ) -> None:
        self._store = store
        self.cache = cache
        self._clock = clock
        self._client = catalog_client
        self._lock = asyncio.Lock()

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    async def open(self) -> int:
        """At start: remove what a crash left in the cache (temporary files, artifacts
        no row names). Returns how many files went."""
        return await self._sweep()

    async def _sweep(self) -> int:
        keep = await self._store.db.read(releases.referenced_digests)
        return await asyncio.to_thread(self.cache.sweep, keep)

    # --- trust ----------------------------------------------------------------------------

    async def trust_key(self, key: PublicKey) -> bool:
        added: bool = await self._store.db.write(_trust_txn, key, self._now())
        return added

    async def trust(self) -> releases.Trust:
        return await self._store.db.read(releases.trust)

    # --- install ----------------------------------------------------------------------------

    async def install(
        self, app_id: str, version: str, *, enable: bool = True
    ) -> registry.Installed:
        """Install ``app_id`` at exactly ``version`` from the catalog (fetched now if
        the stored one does not list it). Raises ``DeliveryError`` / ``RegistryError``."""
        release = await self._store.db.read(releases.catalog_release, app_id, version)
        if release is None:
            await self.refresh_catalog()
            release = await self._store.db.read(releases.catalog_release, app_id, version)
        if release is None:
            await self._refused(f"{app_id}@{version}", DeliveryErrorCode.NOT_IN_CATALOG)
            raise DeliveryError(DeliveryErrorCode.NOT_IN_CATALOG, "the catalog has no such release")
        client = self._client()
        if client is None:
            raise DeliveryError(DeliveryErrorCode.CATALOG_UNAVAILABLE, "not logged in")
        return await self._install(release, client.download, enable)

    async def update(self, app_id: str, version: str) -> registry.Installed:
        """Move an installed app to ``version`` (newer than the one in use; nothing
        moves forward on its own). Keeps whether it is enabled."""
        entry = await self._store.db.read(registry.entries_by_id, app_id)
        if entry is None or entry.kind != "installed":
            raise registry.RegistryError(ErrorCode.APP_NOT_FOUND, "no such delivered app")
        return await self.install(app_id, version, enable=entry.enabled)

    async def install_release(
        self, release_bytes: bytes, artifact: bytes, *, enable: bool = True
    ) -> registry.Installed:
        """Install from a release document and its artifact already at hand (a file,
        a test); the same checks as a download."""
        release = decode_release(release_bytes)

        async def given(_: Release) -> bytes:
            return artifact

        return await self._install(release, given, enable)

    async def _install(
        self, release: Release, fetch: Callable[[Release], Awaitable[bytes]], enable: bool
    ) -> registry.Installed:
        subject = f"{release.app_id}@{release.version}"
        async with self._lock:
            try:
                await self._store.db.read(releases.check_installable, release)
                trust = await self.trust()
                key = check_release(release, trust.keys, trust.revoked)
                artifact = await fetch(release)
                verified = await asyncio.to_thread(self._verify_and_cache, release, key, artifact)
                result: registry.Installed = await self._store.db.write(
                    _record_txn, verified, self._now(), self.cache, enable
                )
            except (DeliveryError, registry.RegistryError) as exc:
                await self._refused(subject, exc.code)
                await self._sweep()  # a file written for a refused install goes now
                raise
        log.info(
            "app release installed",
            extra={"app_id": release.app_id, "version": release.version, "bytes": release.length},
        )
        return result

    def _verify_and_cache(self, release: Release, key: PublicKey, artifact: bytes) -> Verified:
        bundle = check_artifact(release, artifact)
        try:
            self.cache.write(release.sha256, artifact)
        except OSError:
            raise DeliveryError(
                DeliveryErrorCode.CACHE_UNAVAILABLE, "the verified cache cannot be written"
            ) from None
        return Verified(release, key, artifact, bundle)

    async def _refused(self, subject: str, code: str) -> None:
        log.warning("app release refused", extra={"subject": subject, "code": code})
        await self._store.db.write(_audit_refusal, subject, code, self._now())

    # --- revoke, remove ---------------------------------------------------------------------

    async def revoke_version(
        self, app_id: str, version: str, *, source: str = "user"
    ) -> list[releases.Fallback]:
        """Revoke one version; if it is in use, roll back or make the app unavailable."""
        now = self._now()
        return await self._fall_back(
            now, releases.revoke_version, app_id, version, source, now, self.cache
        )

    async def revoke_key(self, key_id: str, *, source: str = "user") -> list[releases.Fallback]:
        """Revoke a publisher key; every app whose version in use it signed falls back."""
        now = self._now()
        return await self._fall_back(now, releases.revoke_key, key_id, source, now, self.cache)

    async def _fall_back(
        self, now: str, txn: Callable[..., Any], *args: Any
    ) -> list[releases.Fallback]:
        async with self._lock:
            fallbacks: list[releases.Fallback] = await self._store.db.write(
                _with_inventory, now, txn, *args
            )
        return fallbacks

    async def remove(self, app_id: str) -> None:
        """Remove a delivered app (see ``releases.remove_app``)."""
        async with self._lock:
            await self._store.db.write(_remove_txn, app_id, self._now())
            await self._sweep()

    # --- the catalog ------------------------------------------------------------------------

    async def refresh_catalog(self) -> CatalogRefresh:
        """Fetch the catalog, keep its releases and apply its revocations."""
        client = self._client()
        if client is None:
            raise DeliveryError(DeliveryErrorCode.CATALOG_UNAVAILABLE, "not logged in")
        document = await client.fetch()
        async with self._lock:
            changed, fallbacks = await self._store.db.write(
                _catalog_txn, document, self._now(), self.cache
            )
        return CatalogRefresh(
            document.revision, changed, document.security == "production", tuple(fallbacks)
        )

    async def catalog_loop(self, interval: float = CATALOG_INTERVAL) -> None:
        """While the Runtime runs: fetch the catalog now and every ``interval``."""
        while True:
            try:
                await self.refresh_catalog()
            except DeliveryError as exc:
                log.warning("catalog not fetched", extra={"code": exc.code})
            except Exception:  # a bug here must not stop the Runtime's sync loop
                log.exception("catalog refresh failed")
            await asyncio.sleep(interval)

    async def centre(
        self,
    ) -> tuple[list[releases.CentreApp], list[releases.Offer], dict[str, object]]:
        return await self._store.db.read(releases.app_centre)


def _trust_txn(txn: RuntimeTxn, key: PublicKey, now: str) -> bool:
    added = releases.trust_key(txn, key, now)
    txn.emit(AppCentreChanged())
    return added


def _record_txn(
    txn: RuntimeTxn, verified: Verified, now: str, cache: VerifiedCache, enable: bool
) -> registry.Installed:
    installed = releases.record_verified(txn, verified, now, cache, enable=enable)
    txn.emit(AppCentreChanged())
    return installed


def _audit_refusal(conn: Any, subject: str, code: str, now: str) -> None:
    audit(conn, now, "runtime", "app.release", subject, "refused", code)


def _with_inventory(
    txn: RuntimeTxn, now: str, fall_back: Callable[..., Any], *args: Any
) -> list[releases.Fallback]:
    fallbacks, _ = fall_back(txn, *args)
    registry.refresh_inventory(txn, now)
    txn.emit(AppCentreChanged(tuple(fallbacks)))
    return list(fallbacks)


def _remove_txn(txn: RuntimeTxn, app_id: str, now: str) -> None:
    releases.remove_app(txn, app_id, now)
    registry.refresh_inventory(txn, now)
    txn.emit(AppCentreChanged(()))


def _catalog_txn(
    txn: RuntimeTxn, document: CatalogDocument, now: str, cache: VerifiedCache
) -> tuple[bool, list[releases.Fallback]]:
    changed = releases.store_catalog(txn, document, now)
    fallbacks: list[releases.Fallback] = []
    for key_id in sorted(document.revoked_keys):
        fallbacks += releases.revoke_key(txn, key_id, "catalog", now, cache)[0]
    for app_id, version in sorted(document.revoked_versions):
        fallbacks += releases.revoke_version(txn, app_id, version, "catalog", now, cache)[0]
    registry.refresh_inventory(txn, now)
    if changed or fallbacks:
        txn.emit(AppCentreChanged(tuple(fallbacks)))
    return changed, fallbacks
