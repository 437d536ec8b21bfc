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

from ..records import OutboxItem
from ..tables import audit
from . import registry, releases

if TYPE_CHECKING:
    from ..store import RuntimeStore
    from .kernel import AppKernel

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
    catalog in use (``None`` while logged out); ``emit``/``send``/``timeline`` are the
    Runtime's."""

    def __init__(
        self,
        store: RuntimeStore,
        registry_: registry.AppRegistry,
        kernel: AppKernel,
        cache: VerifiedCache,
        *,
        clock: Callable[[], datetime],
        emit: Callable[[Any], None],
        send: Callable[[OutboxItem], None],
        ended: Callable[[list[releases.Ended]], Awaitable[None]],
        catalog_client: Callable[[], CatalogClient | None],
    ) -> None:
        self._store = store
        self._registry = registry_
        self._kernel = kernel
        self.cache = cache
        self._clock = clock
        self._emit = emit
        self._send = send
        self._ended = ended
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
        added: bool = await self._store.db.write(releases.trust_key, key, self._now())
        self._emit(AppCentreChanged())
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
        await self._registry.committed(result.inventory, result.inventory_changed)
        self._emit(AppCentreChanged())
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
            now, releases.revoke_version, app_id, version, source, now, self.cache, self._kernel
        )

    async def revoke_key(self, key_id: str, *, source: str = "user") -> list[releases.Fallback]:
        """Revoke a publisher key; every app whose version in use it signed falls back."""
        now = self._now()
        return await self._fall_back(
            now, releases.revoke_key, key_id, source, now, self.cache, self._kernel
        )

    async def _fall_back(
        self, now: str, txn: Callable[..., Any], *args: Any
    ) -> list[releases.Fallback]:
        async with self._lock:
            fallbacks, closes, ended, inventory, changed = await self._store.db.write(
                _with_inventory, now, txn, *args
            )
        await self._settle(closes, ended, inventory, changed, tuple(fallbacks))
        return list(fallbacks)

    async def remove(self, app_id: str) -> None:
        """Remove a delivered app (see ``releases.remove_app``)."""
        async with self._lock:
            closes, ended, inventory, changed = await self._store.db.write(
                _remove_txn, app_id, self._now(), self._kernel
            )
            await self._sweep()
        await self._settle(closes, ended, inventory, changed, ())

    async def _settle(
        self,
        closes: releases.Closes,
        ended: list[releases.Ended],
        inventory: Any,
        changed: bool,
        fallbacks: tuple[releases.Fallback, ...],
    ) -> None:
        self._kernel.settle(closes)
        for _, _, item in ended:
            self._send(item)
        await self._ended(ended)
        await self._registry.committed(inventory, changed)
        self._emit(AppCentreChanged(fallbacks))

    # --- the catalog ------------------------------------------------------------------------

    async def refresh_catalog(self) -> CatalogRefresh:
        """Fetch the catalog, keep its releases and apply its revocations."""
        client = self._client()
        if client is None:
            raise DeliveryError(DeliveryErrorCode.CATALOG_UNAVAILABLE, "not logged in")
        document = await client.fetch()
        async with self._lock:
            changed, fallbacks, closes, ended, inventory, inv_changed = await self._store.db.write(
                _catalog_txn, document, self._now(), self.cache, self._kernel
            )
        if changed or fallbacks:
            await self._settle(closes, ended, inventory, inv_changed, tuple(fallbacks))
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


def _record_txn(
    conn: Any, verified: Verified, now: str, cache: VerifiedCache, enable: bool
) -> registry.Installed:
    return releases.record_verified(conn, verified, now, cache, enable=enable)


def _audit_refusal(conn: Any, subject: str, code: str, now: str) -> None:
    audit(conn, now, "runtime", "app.release", subject, "refused", code)


def _with_inventory(conn: Any, now: str, txn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    fallbacks, closes, ended = txn(conn, *args)
    inventory, changed = registry.refresh_inventory(conn, now)
    return fallbacks, closes, ended, inventory, changed


def _remove_txn(conn: Any, app_id: str, now: str, kernel: AppKernel) -> tuple[Any, ...]:
    closes, ended = releases.remove_app(conn, app_id, now, kernel)
    inventory, changed = registry.refresh_inventory(conn, now)
    return closes, ended, inventory, changed


def _catalog_txn(
    conn: Any, document: CatalogDocument, now: str, cache: VerifiedCache, kernel: AppKernel
) -> tuple[Any, ...]:
    changed = releases.store_catalog(conn, document, now)
    fallbacks: list[releases.Fallback] = []
    closes: releases.Closes = []
    ended: list[releases.Ended] = []
    for key_id in sorted(document.revoked_keys):
        f, c, e = releases.revoke_key(conn, key_id, "catalog", now, cache, kernel)
        fallbacks += f
        closes += c
        ended += e
    for app_id, version in sorted(document.revoked_versions):
        f, c, e = releases.revoke_version(conn, app_id, version, "catalog", now, cache, kernel)
        fallbacks += f
        closes += c
        ended += e
    inventory, inv_changed = registry.refresh_inventory(conn, now)
    return changed, fallbacks, closes, ended, inventory, inv_changed
