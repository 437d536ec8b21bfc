"""The App centre on the host channel (spec 002 §9): the installed apps, the catalog's
offers and its state as a display-only frame, and the person's actions on them.

The frame is made from ``runtime.delivery.centre()`` and carries what a person
decides with (names, versions, who signed, permissions, why an app cannot run),
never a URL, a digest, a signature or artifact bytes. Actions go to the Runtime,
which decides: ``runtime.delivery`` (install, update, remove, refresh) and
``runtime.registry`` (enable, disable). A refusal comes back with its stable code and
words for the person.

A tab that opened the App centre once (``apps``) is sent a fresh frame after every
change: ``AppCentreChanged`` from the Runtime (apps, versions, trust, the catalog),
the enable/disable this host ran (the registry does not tell the centre), and an
instance opening or ending (each app's row says how many run: turning an app off
closes them, and the shell asks first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

import msgspec

from lineup.delivery.errors import DeliveryError, DeliveryErrorCode
from lineup.protocol import ErrorCode
from lineup.runtime import Runtime
from lineup.runtime.apps.installer import AppCentreChanged
from lineup.runtime.apps.registry import RegistryError
from lineup.runtime.apps.releases import CentreApp, Offer

from . import channel, mcp

__all__ = ["AppCentreHost", "AppCentreTab", "centre_frame", "short_key_id"]

log = logging.getLogger("lineup.host.app_centre")

_encode = msgspec.json.encode

KEY_ID_SHOWN = 8
"""Hex digits of a key id shown (the full id stays in the Runtime)."""

WORDS: dict[str, str] = {
    DeliveryErrorCode.KEY_UNKNOWN: "This publisher is not trusted on this device.",
    DeliveryErrorCode.KEY_REVOKED: "The publisher's key was revoked.",
    DeliveryErrorCode.SIGNATURE_INVALID: "The release's signature does not verify.",
    DeliveryErrorCode.VERSION_REVOKED: "This version was revoked by the publisher.",
    DeliveryErrorCode.VERSION_DOWNGRADE: "A newer version is already in use.",
    DeliveryErrorCode.VERSION_CONFLICT: "This version is already installed with other contents.",
    DeliveryErrorCode.NOT_IN_CATALOG: "The catalog no longer offers this version.",
    DeliveryErrorCode.CATALOG_UNAVAILABLE: "The catalog cannot be reached. Try again in a moment.",
    DeliveryErrorCode.CATALOG_INSECURE: "The catalog is not served securely.",
    DeliveryErrorCode.CACHE_UNAVAILABLE: "The app could not be stored on this device.",
    DeliveryErrorCode.ARTIFACT_TOO_LARGE: "The app is too large.",
    DeliveryErrorCode.LENGTH_MISMATCH: "The download did not match its release.",
    DeliveryErrorCode.DIGEST_MISMATCH: "The download did not match its release.",
    DeliveryErrorCode.ARCHIVE_INVALID: "The download is not a LineUp app.",
    DeliveryErrorCode.RELEASE_MISMATCH: "The app does not match its release.",
    DeliveryErrorCode.RELEASE_INVALID: "The release is not valid.",
    DeliveryErrorCode.HOST_TOO_OLD: "This app needs a newer LineUp.",
    ErrorCode.APP_NOT_FOUND: "This app is not installed.",
    ErrorCode.APP_NOT_REMOVABLE: "A built-in app cannot be removed; turn it off instead.",
    ErrorCode.APP_UNAVAILABLE: "This app has no version it may run.",
    ErrorCode.APP_SCOPE_CONFLICT: "Another app already uses this app's name.",
    ErrorCode.INTERNAL_ERROR: "Something went wrong. Try again.",
}


def words_for(code: str) -> str:
    return WORDS.get(code, f"That did not work ({code}).")


def short_key_id(key_id: str) -> str:
    """``ed25519:0123456789abcdef...`` as ``ed25519:01234567``."""
    algorithm, _, digest = key_id.partition(":")
    return f"{algorithm}:{digest[:KEY_ID_SHOWN]}" if digest else key_id[: KEY_ID_SHOWN + 8]


def _publisher(key_id: str, names: dict[str, str]) -> channel.PublisherView:
    return channel.PublisherView(
        key_id=short_key_id(key_id), name=names.get(key_id, ""), trusted=key_id in names
    )


def _app_view(app: CentreApp, names: dict[str, str], running: int) -> channel.CentreAppView:
    installed = app.kind == "installed"
    publisher = None if app.key_id is None else _publisher(app.key_id, names)
    return channel.CentreAppView(
        app_id=app.app_id,
        name=app.name,
        kind="installed" if installed else "built-in",
        version=app.version,
        enabled=app.enabled,
        publisher=publisher,
        permissions=sorted(app.permissions),
        versions=list(app.versions),
        update=app.update,
        unavailable=app.unavailable,
        running=running,
    )


def _offer_view(offer: Offer, names: dict[str, str]) -> channel.OfferView:
    return channel.OfferView(
        app_id=offer.app_id,
        version=offer.version,
        publisher=_publisher(offer.key_id, names),
        permissions=sorted(offer.permissions),
        name=offer.name,
    )


async def centre_frame(runtime: Runtime) -> channel.AppCentre:
    """The App centre as the shell shows it."""
    apps, offers, state = await runtime.delivery.centre()
    trust = await runtime.delivery.trust()
    names = {key_id: key.name for key_id, key in trust.keys.items()}
    live = Counter(r.app_scope for r in runtime.apps.instances().live())
    fetched = state.get("fetched_at")
    return channel.AppCentre(
        apps=[_app_view(a, names, live[a.app_scope]) for a in apps],
        offers=[_offer_view(o, names) for o in offers],
        catalog=channel.CatalogStateView(
            production=bool(state.get("production")),
            fetched_at=fetched if isinstance(fetched, str) else None,
        ),
        mcp_servers=mcp.server_views(runtime, await runtime.mcp.servers()),
    )


class AppCentreHost:
    """The App centre of one Web Host: the tabs that show it, the actions."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._tabs: set[AppCentreTab] = set()

    def tab(self, outbox: asyncio.Queue[bytes]) -> AppCentreTab:
        return AppCentreTab(self, outbox)

    def attach(self, tab: AppCentreTab) -> None:
        self._tabs.add(tab)

    def detach(self, tab: AppCentreTab) -> None:
        self._tabs.discard(tab)

    def changed(self) -> None:
        """Every tab showing the centre reads it again."""
        for tab in self._tabs:
            tab.mark()

    async def act(self, frame: channel.AppsAction) -> channel.AppsReceipt:
        """Run the person's action; the receipt says ``ok`` or why not."""
        try:
            await self._run(frame)
        except (DeliveryError, RegistryError) as refused:
            code = refused.code
            log.info(
                "app centre action refused",
                extra={"action": frame.action, "app_id": frame.app_id, "code": code},
            )
        except Exception as exc:  # a bug answers this action; the tab's channel stays
            # The type only: a message could carry a URL, a path or a manifest's text.
            error = type(exc).__name__
            log.error("app centre action failed", extra={"action": frame.action, "error": error})
            code = ErrorCode.INTERNAL_ERROR
        else:
            return channel.AppsReceipt(
                action=frame.action, app_id=frame.app_id, version=frame.version, outcome="ok"
            )
        return channel.AppsReceipt(
            action=frame.action,
            app_id=frame.app_id,
            version=frame.version,
            outcome=code,
            message=words_for(code),
        )

    async def _run(self, frame: channel.AppsAction) -> None:
        delivery = self.runtime.delivery
        if frame.action == "refresh":
            await delivery.refresh_catalog()
            self.changed()  # the fetch time moved even when nothing else did
            return
        assert frame.app_id is not None  # AppsAction checked the combination
        if frame.action in ("install", "update"):
            assert frame.version is not None
            if frame.action == "install":
                await delivery.install(frame.app_id, frame.version)
            else:
                await delivery.update(frame.app_id, frame.version)
        elif frame.action == "remove":
            await delivery.remove(frame.app_id)
        elif frame.action == "enable":
            await self.runtime.registry.enable(frame.app_id)
            self.changed()
        else:
            await self.runtime.registry.disable(frame.app_id)
            self.changed()


class AppCentreTab:
    """One tab's side: after it asked once, a fresh frame on every change (read
    after the change; changes while reading mark it again, so the last frame sent is
    never stale)."""

    def __init__(self, host: AppCentreHost, outbox: asyncio.Queue[bytes]) -> None:
        self.host = host
        self.outbox = outbox
        self.showing = False
        self._marked = asyncio.Event()

    def mark(self) -> None:
        if self.showing:
            self._marked.set()

    def on_event(self, event: Any) -> bool:
        """Whether ``event`` was the App centre's (handled here). A rollback or an app
        made unavailable is told to every tab, open centre or not."""
        if not isinstance(event, AppCentreChanged):
            return False
        for fallback in event.fallbacks:
            notice = channel.AppFallback(
                app_id=fallback.app_id,
                name=fallback.name or fallback.app_id,
                outcome=fallback.outcome,  # type: ignore[arg-type]
                from_version=fallback.from_version,
                to_version=fallback.to_version,
                reason=fallback.reason,
            )
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(_encode(notice))
        self.mark()
        return True

    async def opened(self) -> bytes:
        """The tab asked (``apps``): the centre now, and later on every change."""
        self.showing = True
        self._marked.clear()
        return _encode(await centre_frame(self.host.runtime))

    async def run(self) -> None:
        """While the tab is connected: send the centre again after each change."""
        self.host.attach(self)
        try:
            while True:
                await self._marked.wait()
                self._marked.clear()
                frame = await centre_frame(self.host.runtime)
                with contextlib.suppress(asyncio.QueueFull):
                    self.outbox.put_nowait(_encode(frame))
        finally:
            self.host.detach(self)
