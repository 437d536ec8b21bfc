"""Surfaces in the Web Host: mounting a MiniApp instance's surface (and a surface an
agent opened with ``ui.open``) on the surface origin, relaying the MiniApp SDK's
requests (and the person's ``ui.event``) to the Runtime, and taking surfaces down when
the Runtime closes them.

The shell asks to mount (``mount``) when it is about to show an instance; the Web Host
reads the surface from the registry (the app version in use), mounts it with the SDK
and answers with a single-use URL. Every SDK request arrives as an ``AppCall`` naming
the mount it came through; the request counts as the mount's instance's only if the
mount is one of ours and still mounted, so a tab cannot speak for an instance it was
not given. The Runtime then checks the rest (``AppApi``).

Closing follows spec 002 §7.2: when the Runtime's accepted close emits
``CloseSurfaces``, this takes the instance's mounts down (their URLs answer 404 from
then on) and reports the stop finished (``closed``); the shell removes the frames as
the instance leaves the ``apps`` frame. Logs carry ids and codes only.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from lineup.protocol import ErrorCode
from lineup.runtime import Runtime, TimelineChanged, TimelineItem
from lineup.runtime.apps.app_api import AppApiError
from lineup.runtime.apps.focus import CloseSurfaces
from lineup.runtime.apps.lifecycle import MOUNTABLE
from lineup.runtime.apps.lifecycle import State as AppState
from lineup.runtime.events import AppsChanged
from lineup.runtime.ui_surfaces import UiEventRefused

from . import channel
from .jobs import HostJobs
from .surface import SurfaceDocument, SurfaceOrigin, SurfaceRejected

__all__ = ["AppSurfaces"]

log = logging.getLogger("lineup.host.surface")


class AppSurfaces:
    def __init__(self, runtime: Runtime, origin: SurfaceOrigin, jobs: HostJobs) -> None:
        self.runtime = runtime
        self.origin = origin
        self.jobs = jobs
        """Where a close runs: the Runtime's listener cannot wait for it."""
        self._instance_of: dict[str, str] = {}  # mount id -> instance id
        self._ui: dict[str, tuple[str, str, str]] = {}  # mount id -> (conv, instance, open id)
        runtime.subscribe(self._on_event)

    def mounts_of(self, instance_id: str) -> list[str]:
        return [m for m, i in self._instance_of.items() if i == instance_id]

    async def mount(self, frame: channel.MountRequest) -> channel.Mounted:
        instance_id = frame.instance_id
        record = self.runtime.apps.record(instance_id)
        if record is None or record.state not in MOUNTABLE:
            return channel.Mounted(
                instance_id=instance_id, outcome=ErrorCode.APP_INSTANCE_NOT_FOUND
            )
        source = await self.runtime.registry.surface(record.app_scope)
        if source is None:
            return channel.Mounted(instance_id=instance_id, outcome=ErrorCode.SURFACE_UNAVAILABLE)
        document = SurfaceDocument(
            app_id=source.app_id,
            app_version=source.app_version,
            surface_id=source.surface_id,
            html=source.html,
            css=source.css,
            js=source.js,
        )
        try:
            mount = self.origin.mount(
                instance_id, document, app=True, lang=await self.runtime.person_locale()
            )
        except SurfaceRejected as rejected:
            return channel.Mounted(instance_id=instance_id, outcome=str(rejected.code))
        self._instance_of[mount.mount_id] = instance_id
        return channel.Mounted(
            instance_id=instance_id, outcome="accepted", mount_id=mount.mount_id, url=mount.url
        )

    def unmount(self, mount_id: str) -> None:
        if self._instance_of.pop(mount_id, None) is not None:
            self.origin.unmount(mount_id)
        if self._ui.pop(mount_id, None) is not None:
            self.origin.unmount(mount_id)

    # --- surfaces an agent opened ----------------------------------------------------------

    async def mount_ui(self, frame: channel.MountUi) -> channel.UiMounted:
        """Mount a surface the agent opened (the bridge only: no MiniApp SDK)."""
        conversation_id, instance_id = frame.conversation_id, frame.instance_id

        def answer(
            outcome: str, mount_id: str = "", url: str = "", name: str = ""
        ) -> channel.UiMounted:
            return channel.UiMounted(
                conversation_id=conversation_id,
                instance_id=instance_id,
                outcome=outcome,
                mount_id=mount_id,
                url=url,
                name=name,
            )

        record = await self.runtime.ui_surface(conversation_id, instance_id)
        if record is None:
            return answer(ErrorCode.APP_INSTANCE_NOT_FOUND)
        inline = await self.runtime.ui_surface_parts(record)  # a dev surface: read afresh
        if isinstance(inline, ErrorCode):
            return answer(inline)
        name = ""
        if inline is not None:
            html, css, js, name = inline
        else:
            source = await self.runtime.registry.surface_version(
                record.app_id, record.app_version, record.surface_id
            )
            if source is None:
                return answer(ErrorCode.SURFACE_UNAVAILABLE)
            html, css, js = source.html, source.css, source.js
        document = SurfaceDocument(
            app_id=record.app_id,
            app_version=record.app_version,
            surface_id=record.surface_id or "inline",
            html=html,
            css=css,
            js=js,
        )
        try:
            mount = self.origin.mount(
                instance_id, document, lang=await self.runtime.person_locale()
            )
        except SurfaceRejected as rejected:
            return answer(str(rejected.code))
        self._ui[mount.mount_id] = (conversation_id, instance_id, record.open_envelope_id)
        if not name:
            manifest = await self.runtime.registry.manifest(record.app_id, record.app_version)
            name = "" if manifest is None else manifest.name
        return answer("accepted", mount.mount_id, mount.url, name)

    async def ui_event(self, frame: channel.UiEventFrame) -> channel.UiEventReceipt:
        found = self._ui.get(frame.mount_id)
        outcome = "accepted"
        if found is None:
            outcome = ErrorCode.MOUNT_NOT_FOUND
        else:
            conversation_id, instance_id, _ = found
            try:
                await self.runtime.ui_event(conversation_id, instance_id, frame.event, frame.data)
            except UiEventRefused as refused:
                outcome = refused.code
        return channel.UiEventReceipt(mount_id=frame.mount_id, event=frame.event, outcome=outcome)

    async def app_event(self, frame: channel.AppEventFrame) -> channel.UiEventReceipt:
        instance_id = self._instance_of.get(frame.mount_id)
        outcome = "accepted"
        if instance_id is None:
            outcome = ErrorCode.MOUNT_NOT_FOUND
        else:
            try:
                await self.runtime.app_event(instance_id, frame.event, frame.data)
            except UiEventRefused as refused:
                outcome = refused.code
        return channel.UiEventReceipt(mount_id=frame.mount_id, event=frame.event, outcome=outcome)

    async def reloading(self, mount_id: str) -> None:
        """The shell stopped a frame that kept reloading itself: a surface the agent
        opened tells the agent once (the Runtime keeps count); a MiniApp instance keeps
        running, its frame waits for the person's "Reopen"."""
        found = self._ui.get(mount_id)
        instance_id = self._instance_of.get(mount_id)
        log.warning(
            "surface keeps reloading", extra={"mount_id": mount_id, "agent": found is not None}
        )
        if found is not None:
            conversation_id, surface_instance_id, _ = found
            with contextlib.suppress(UiEventRefused):  # closed meanwhile: nobody to tell
                await self.runtime.ui_reloading(conversation_id, surface_instance_id)
        elif instance_id is None:
            return

    def ui_changed(self, item: TimelineItem) -> None:
        """A surface the agent opened changed: once it is no longer open, its mounts go."""
        surface = item.surface
        if surface is None or surface.status == "open":
            return
        for mount_id, (conv, _, open_id) in list(self._ui.items()):
            if conv == surface.conversation_id and open_id == surface.open_envelope_id:
                self.unmount(mount_id)

    async def call(self, frame: channel.AppCall) -> channel.AppReply:
        instance_id = self._instance_of.get(frame.mount_id)
        if instance_id is None:
            return _refused(frame, ErrorCode.MOUNT_NOT_FOUND, "no such mount")
        try:
            result = await self.runtime.app_api.call(instance_id, frame.method, frame.params)
        except AppApiError as refused:
            log.info(
                "app request refused",
                extra={"instance_id": instance_id, "method": frame.method, "code": refused.code},
            )
            return _refused(frame, refused.code, refused.message)
        except Exception as exc:  # a bug answers this request; it never drops the channel
            # By type: the message of an error in a request can quote the request.
            log.error(
                "app request failed", extra={"method": frame.method, "error": type(exc).__name__}
            )
            return _refused(frame, ErrorCode.INTERNAL_ERROR, "the request failed")
        return channel.AppReply(mount_id=frame.mount_id, id=frame.id, ok=True, result=result)

    # --- closing -----------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if isinstance(event, TimelineChanged):
            self.ui_changed(event.item)
            return
        if not isinstance(event, AppsChanged):
            return
        for effect in event.effects:
            if isinstance(effect, CloseSurfaces):
                self.jobs.start(self._close(effect.instance_id), "close_surfaces")

    async def _close(self, instance_id: str) -> None:
        """Take the instance's surfaces down, then tell the kernel the stop finished."""
        for mount_id in self.mounts_of(instance_id):
            self.unmount(mount_id)
        record = self.runtime.apps.record(instance_id)
        if record is not None and record.state is AppState.STOPPING:
            await self.runtime.apps.closed(instance_id)


def _refused(frame: channel.AppCall, code: str, message: str) -> channel.AppReply:
    return channel.AppReply(
        mount_id=frame.mount_id, id=frame.id, ok=False, error={"code": code, "message": message}
    )
