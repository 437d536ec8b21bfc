"""Running the desktop host: Qt on the main thread (it must own it), the Runtime and
the Web Host (and, for the demo, the AppServer and the demo agent) on an event loop in
a second thread, exactly the code ``lineup client`` and ``lineup demo`` run.

Start: a second launch on the same data dir finds the first through a local socket in
the data dir, asks it to come to the front and exits (status 0). Otherwise the window
opens once the Web Host serves, at its one-time login link.

Stop (the window closes, Ctrl-C or SIGTERM): the Qt loop ends, the host thread drains
the outbox (a few seconds at most, while in sync), stops the sync loop and the
listeners and closes the store; then Qt's page and profile are deleted in that order
(the engine crashes at exit otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from lineup.host.native import NativeHost, NativeOutcome
from lineup.runtime import Runtime
from lineup.runtime.capabilities.calls import State as CallState
from lineup.runtime.events import LocaleChosen

from .engine import prepare_environment
from .providers import Dialogs, GuiThread, QtProviders

__all__ = ["HostJob", "run_desktop"]

log = logging.getLogger("lineup.desktop")

HostJob = Callable[..., Awaitable[None]]
"""What runs on the host thread: ``run_demo`` or ``run_standalone`` with everything
but their ``stop``, ``on_ready`` and ``native`` keywords, which the thread passes."""

INSTANCE_SOCKET = "desktop.sock"
STOP_WITHIN = 20.0


def run_desktop(
    data_dir: Path,
    job: HostJob,
    *,
    dialogs_factory: Callable[[], Dialogs] | None = None,
    remote_debugging: str | None = None,
) -> int:
    """Show the desktop window until it closes; the exit status. ``dialogs_factory``
    replaces the OS's dialogs (tests); ``remote_debugging`` opens the DevTools protocol
    on ``host:port`` (tests)."""
    prepare_environment(remote_debugging=remote_debugging)
    from PySide6.QtWidgets import QApplication

    from .instance import SingleInstance
    from .window import Opener, ShellWindow, tray_for

    data_dir.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("LineUp")
    instance = SingleInstance(str(data_dir / INSTANCE_SOCKET))
    if instance.hand_over():
        print("LineUp is already open: its window was brought to the front.", flush=True)
        return 0

    from PySide6.QtWebEngineCore import QWebEngineProfile

    profile = QWebEngineProfile(app)  # off the record: nothing of the page on disk
    dialogs = dialogs_factory() if dialogs_factory is not None else Dialogs()
    window = ShellWindow(data_dir, profile, dialogs)
    if dialogs.tray is None:
        dialogs.tray = tray_for(window)
    gui = GuiThread()
    native = DesktopHost(gui, dialogs, window.set_waiting, window.follow_choice)
    instance.listen(window.focus)

    opened = Opener()
    opened.url.connect(window.open)
    thread = HostThread(job, native, opened.url.emit, app.quit)
    _quit_on_signals(app)
    window.show()
    thread.start()
    status = app.exec()
    thread.stop()
    thread.join(STOP_WITHIN)
    instance.close()
    import shiboken6

    if window.page is not None:
        shiboken6.delete(window.page)  # the page before its profile, or the engine crashes
    shiboken6.delete(window)
    shiboken6.delete(profile)
    if thread.is_alive():
        log.error("the host did not stop in time")
        return 1
    return 1 if thread.failed else status


def _quit_on_signals(app: Any) -> None:
    """Ctrl-C and SIGTERM end the Qt loop (a timer lets Python run its handlers)."""
    from PySide6.QtCore import QTimer

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: app.quit())
    tick = QTimer(app)
    tick.timeout.connect(lambda: None)
    tick.start(200)


class DesktopHost:
    """The ``NativeHost`` the Web Host gets: the Qt providers, the count of what waits
    for the person (questions, consent dialogs) for the window's badge, and the
    language the person chose in the shell for the window's own words."""

    def __init__(
        self,
        gui: GuiThread,
        dialogs: Dialogs,
        waiting: Callable[[int], None],
        language: Callable[[str | None], None] = lambda _choice: None,
    ) -> None:
        self.providers = QtProviders(gui, dialogs)
        self.gui = gui
        self._waiting = waiting
        self._language = language
        self._changed = asyncio.Event()
        self._locale_changed = asyncio.Event()

    def handles(self, capability: str) -> bool:
        return self.providers.handles(capability)

    async def run(self, capability: str, arguments: dict[str, Any]) -> NativeOutcome | None:
        return await self.providers.run(capability, arguments)

    def attach(self, runtime: Runtime) -> Coroutine[Any, Any, None]:
        """Follow the Runtime: the badge and the language, as one of the Web Host's
        jobs."""
        runtime.subscribe(self._on_event)
        self._changed.set()
        self._locale_changed.set()
        return self._follow(runtime)

    def _on_event(self, event: object) -> None:
        self._changed.set()
        if isinstance(event, LocaleChosen):
            self._locale_changed.set()

    async def _follow(self, runtime: Runtime) -> None:
        await asyncio.gather(self._badge(runtime), self._locale(runtime))

    async def _locale(self, runtime: Runtime) -> None:
        shown: object = ...  # nothing shown yet: even "as the desktop says" is news
        while True:
            await self._locale_changed.wait()
            self._locale_changed.clear()
            choice = await runtime.locale_choice()
            if choice != shown:
                shown = choice
                await self.gui.run(self._language, choice)

    async def _badge(self, runtime: Runtime) -> None:
        shown = -1
        while True:
            await self._changed.wait()
            self._changed.clear()
            questions = await runtime.pending_interactions()
            calls = await runtime.capabilities.open_calls()
            count = len(questions) + sum(c.state is CallState.AWAITING_CONSENT for c in calls)
            if count != shown:
                shown = count
                await self.gui.run(self._waiting, count)


class HostThread(threading.Thread):
    """The event loop of the Runtime and the Web Host."""

    def __init__(
        self,
        job: HostJob,
        native: NativeHost,
        on_ready: Callable[[str], None],
        on_exit: Callable[[], None],
    ) -> None:
        super().__init__(name="lineup-host", daemon=True)
        self._job = job
        self._native = native
        self._on_ready = on_ready
        self._on_exit = on_exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._loop_ready = threading.Event()
        self.failed = False

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # by type: a message could carry content
            self.failed = True
            log.error("the desktop host's Runtime stopped", extra={"error": type(exc).__name__})
        finally:
            self._on_exit()  # the window goes too

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._loop_ready.set()
        await self._job(stop=self._stop_event, on_ready=self._on_ready, native=self._native)

    def stop(self) -> None:
        self._loop_ready.wait(STOP_WITHIN)
        if self._loop is not None and self._stop_event is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # it ended on its own
                self._loop.call_soon_threadsafe(self._stop_event.set)
