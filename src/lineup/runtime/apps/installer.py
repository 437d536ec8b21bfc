"""Installing, updating, revoking and removing delivered MiniApps: the async face of
``releases`` (spec 002 §9.2).

An install is the pure machine in ``bundle_install``: the installer does the one step each
state names (look the release up in the catalog, or take the one given; check it is
installable here and signed by a trusted key; download the artifact into memory,
never more than its stated length; check it: length, SHA-256, archive, bundle,
release match; write it to the verified cache: temp file, fsync, rename; record it,
in one transaction, as the version in use), reports how the step went and carries
out what the machine decides: the next step, or the code to stop with, whether to
audit and whether to sweep the cache. A stopped install writes nothing the registry
names and leaves the active version as it was.

One install, revocation or removal runs at a time (a lock, held from the check to the
record), so the cache sweep at start-up is the only place a cached file is deleted
while nothing is in flight.
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
from lineup.formats.bundle import AppBundle
from lineup.protocol import ErrorCode

from ..tables import audit
from ..txn import RuntimeTxn
from . import bundle_install, registry, releases

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


_MESSAGES: dict[str, str] = {DeliveryErrorCode.NOT_IN_CATALOG: "the catalog has no such release"}
"""The message of a refusal the machine decides itself (the others keep the step's)."""


@dataclass(slots=True)
class _Job:
    """One install as it goes: where it is (``state``) and what its steps found."""

    subject: str
    """``app_id@version``, for the audit and the log."""
    enable: bool
    app_id: str
    version: str
    state: bundle_install.State = bundle_install.State.REQUESTED
    release: Release | None = None
    fetch: Callable[[Release], Awaitable[bytes]] | None = None
    key: PublicKey | None = None
    artifact: bytes | None = None
    bundle: AppBundle | None = None
    installed: registry.Installed | None = None


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
        return await self._drive(_Job(f"{app_id}@{version}", enable, app_id, version))

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

        subject = f"{release.app_id}@{release.version}"
        job = _Job(subject, enable, release.app_id, release.version, bundle_install.State.FOUND)
        job.release, job.fetch = release, given
        return await self._drive(job)

    async def _drive(self, job: _Job) -> registry.Installed:
        """Run the install's steps (``bundle_install.STEP``) until it ends: the lookup first,
        then the rest under the lock (``bundle_install.LOCKED``)."""
        while job.state in bundle_install.OPEN - bundle_install.LOCKED:
            await self._advance(job)
        if job.state in bundle_install.LOCKED:
            async with self._lock:
                while job.state not in bundle_install.FINAL:
                    await self._advance(job)
        assert job.installed is not None  # a stopped install raised
        return job.installed

    async def _advance(self, job: _Job) -> None:
        """Do the step ``job`` is at, ask the machine what it means and carry it out;
        raises what stopped the install once its effects are done."""
        error: DeliveryError | registry.RegistryError | None = None
        try:
            event = await self._do(bundle_install.STEP[job.state], job)
        except (DeliveryError, registry.RegistryError) as exc:
            error = exc
            decision = bundle_install.decide(job.state, bundle_install.Event.ERROR, code=exc.code)
        else:
            decision = bundle_install.decide(job.state, event)
        if decision.to is None:  # pragma: no cover - every step reports a move of the table
            raise RuntimeError(f"install step out of order: {decision.refusal}")
        job.state = decision.to
        for effect in decision.effects:
            if isinstance(effect, bundle_install.AuditRefusal):
                assert decision.code is not None
                await self._refused(job.subject, decision.code)
            elif isinstance(effect, bundle_install.SweepCache):
                await self._sweep()  # a file written for a refused install goes now
            elif isinstance(effect, bundle_install.LogInstalled):
                assert job.release is not None
                release = job.release
                log.info(
                    "app release installed",
                    extra={
                        "app_id": release.app_id,
                        "version": release.version,
                        "bytes": release.length,
                    },
                )
        if job.state in (bundle_install.State.REFUSED, bundle_install.State.FAILED):
            assert decision.code is not None
            raise error or DeliveryError(decision.code, _MESSAGES[decision.code])

    async def _do(self, step: bundle_install.Step, job: _Job) -> bundle_install.Event:
        """The I/O of one step; raises ``DeliveryError`` / ``RegistryError`` when it
        stops."""
        if step is bundle_install.Step.LOOK_UP:
            return await self._look_up(job)
        if step is bundle_install.Step.REFRESH:
            await self.refresh_catalog()
            return await self._look_up(job)
        release = job.release
        assert release is not None
        if step is bundle_install.Step.CHECK:
            await self._store.db.read(releases.check_installable, release)
            trust = await self.trust()
            job.key = check_release(release, trust.keys, trust.revoked)
        elif step is bundle_install.Step.FETCH:
            assert job.fetch is not None
            job.artifact = await job.fetch(release)
        elif step is bundle_install.Step.VERIFY:
            assert job.artifact is not None
            job.bundle = await asyncio.to_thread(check_artifact, release, job.artifact)
        elif step is bundle_install.Step.CACHE:
            assert job.artifact is not None
            await asyncio.to_thread(self._cache, release, job.artifact)
        elif step is bundle_install.Step.RECORD:
            assert job.key is not None
            assert job.artifact is not None
            assert job.bundle is not None
            verified = Verified(release, job.key, job.artifact, job.bundle)
            job.installed = await self._store.db.write(
                _record_txn, verified, self._now(), self.cache, job.enable
            )
        return bundle_install.Event.OK

    async def _look_up(self, job: _Job) -> bundle_install.Event:
        found = await self._store.db.read(releases.catalog_release, job.app_id, job.version)
        if found is None:
            return bundle_install.Event.MISSING
        client = self._client()
        if client is None:
            raise DeliveryError(DeliveryErrorCode.CATALOG_UNAVAILABLE, "not logged in")
        job.release, job.fetch = found, client.download
        return bundle_install.Event.OK

    def _cache(self, release: Release, artifact: bytes) -> None:
        try:
            self.cache.write(release.sha256, artifact)
        except OSError:
            raise DeliveryError(
                DeliveryErrorCode.CACHE_UNAVAILABLE, "the verified cache cannot be written"
            ) from None

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
            except Exception as exc:  # a bug here must not stop the Runtime's sync loop
                log.error("catalog refresh failed", extra={"error": type(exc).__name__})
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
