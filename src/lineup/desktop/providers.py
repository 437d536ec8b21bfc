"""The desktop host's native providers (``lineup.host.native``): a native file dialog
for ``device.pick_file``, the system clipboard for ``clipboard.write``, the system
browser for ``app.open_url`` and the system tray's notifications for
``notification.show`` (declined where there is no tray: the shell shows its own
notice then).

They run only for calls the Runtime approved and a tab claimed, with the call's stored
arguments. Qt's widgets live on the GUI thread, so ``GuiThread`` carries each piece of
work there and its result back to the Web Host's event loop. ``Dialogs`` is the edge
of the world (the OS's dialogs and services); the desktop tests replace only it.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from PySide6.QtCore import QObject, QStandardPaths, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QSystemTrayIcon, QWidget

from lineup.host.native import NativeOutcome, PickedFile
from lineup.protocol import ErrorCode
from lineup.runtime.capabilities.catalog import MAX_ARTIFACT_BYTES

from .language import text

__all__ = ["NATIVE", "Dialogs", "GuiThread", "QtProviders"]

log = logging.getLogger("lineup.desktop")
T = TypeVar("T")

NATIVE = frozenset({"device.pick_file", "clipboard.write", "app.open_url", "notification.show"})
"""What the desktop host runs natively (``artifact.save`` runs in the Runtime)."""


class GuiThread(QObject):
    """Runs callables on the thread this object was made on (Qt's GUI thread) and
    hands their results to the awaiting event loop."""

    _job = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self._job.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def _run(self, job: Callable[[], None]) -> None:
        job()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():
                return  # the awaiting side gave up (the host is stopping)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def job() -> None:
            try:
                value = fn(*args)
            except Exception as exc:
                loop.call_soon_threadsafe(settle, None, exc)
            else:
                loop.call_soon_threadsafe(settle, value, None)

        self._job.emit(job)
        return await future


class Dialogs:
    """The operating system's dialogs and services (file dialogs, the browser, the
    clipboard, the tray), called on the GUI thread."""

    def __init__(self, window: QWidget | None = None, tray: QSystemTrayIcon | None = None):
        self.window = window
        self.tray = tray
        self.locale = "en"  # the window's language (ShellWindow.follow_choice sets it)

    def pick_file(self, accept: Sequence[str]) -> str | None:
        path, _ = QFileDialog.getOpenFileName(
            self.window,
            text(self.locale, "desktop.pick_file"),
            "",
            file_filter(accept, self.locale),
        )
        return path or None

    def save_file(self, name: str) -> str | None:
        folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DownloadLocation)
        title = text(self.locale, "desktop.save_file")
        path, _ = QFileDialog.getSaveFileName(self.window, title, str(Path(folder) / name))
        return path or None

    def open_url(self, url: str) -> bool:
        return bool(QDesktopServices.openUrl(QUrl(url)))

    def write_clipboard(self, text: str) -> None:
        QGuiApplication.clipboard().setText(text)

    def notify(self, title: str, body: str) -> bool:
        tray = self.tray
        if tray is None or not tray.isVisible() or not QSystemTrayIcon.supportsMessages():
            return False
        tray.showMessage(title, body)
        return True


def file_filter(accept: Sequence[str], locale: str = "en") -> str:
    """A Qt name filter for the ``accept`` list of ``device.pick_file`` (extensions and
    media types, as an HTML file input takes them); all files when nothing narrows.
    Its names are in ``locale``."""
    patterns: list[str] = []
    for item in accept:
        if item.startswith(".") and item[1:].isalnum():
            patterns.append(f"*{item.lower()}")
        elif "/" in item and not item.endswith("/*"):
            patterns.extend(f"*{ext}" for ext in mimetypes.guess_all_extensions(item))
    every = text(locale, "desktop.filter_all")
    if not patterns:
        return every
    accepted = text(locale, "desktop.filter_accepted", patterns=" ".join(sorted(set(patterns))))
    return f"{accepted};;{every}"


def read_picked(path: Path) -> NativeOutcome:
    """The picked file as the artifact it becomes, if it is not too large."""
    try:
        if path.stat().st_size > MAX_ARTIFACT_BYTES:
            return NativeOutcome(code=ErrorCode.ARTIFACT_TOO_LARGE)
        body = path.read_bytes()
    except OSError:
        return NativeOutcome(code=ErrorCode.PROVIDER_FAILED)
    if len(body) > MAX_ARTIFACT_BYTES:  # it grew after the check
        return NativeOutcome(code=ErrorCode.ARTIFACT_TOO_LARGE)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return NativeOutcome(file=PickedFile(path.name, media_type, body))


class QtProviders:
    """``lineup.host.native.NativeHost`` on Qt."""

    def __init__(self, gui: GuiThread, dialogs: Dialogs) -> None:
        self.gui = gui
        self.dialogs = dialogs

    def handles(self, capability: str) -> bool:
        return capability in NATIVE

    async def run(self, capability: str, arguments: dict[str, Any]) -> NativeOutcome | None:
        if capability == "clipboard.write":
            await self.gui.run(self.dialogs.write_clipboard, str(arguments.get("text", "")))
            return NativeOutcome(result={"written": True})
        if capability == "app.open_url":
            url = str(arguments.get("url", ""))
            if urlsplit(url).scheme not in ("http", "https"):
                return NativeOutcome(code=ErrorCode.CAPABILITY_INPUT_INVALID)
            if not await self.gui.run(self.dialogs.open_url, url):
                return NativeOutcome(code=ErrorCode.PROVIDER_FAILED)
            return NativeOutcome(result={"opened": True})
        if capability == "notification.show":
            title, body = str(arguments.get("title", "")), str(arguments.get("body", ""))
            if not await self.gui.run(self.dialogs.notify, title, body):
                return None  # no tray here: the shell's own notice shows it
            return NativeOutcome(result={"shown": True})
        if capability == "device.pick_file":
            raw = arguments.get("accept", [])
            accept = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
            path = await self.gui.run(self.dialogs.pick_file, accept)
            if path is None:
                return NativeOutcome(code=ErrorCode.CANCELLED_BY_USER)
            return await asyncio.to_thread(read_picked, Path(path))
        return None
