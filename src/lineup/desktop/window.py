"""The desktop window: the Web Host's shell in a QtWebEngine view, locked down.

- The main frame stays on the Web Host's origin. A link the person clicks to anywhere
  else (http or https) opens in the system browser; nothing else navigates.
- No second webview: ``window.open`` and ``target=_blank`` go to the system browser
  (http and https only).
- Every permission request (camera, microphone, location, notifications, screen
  capture, ...) is denied: capabilities go through the Runtime instead.
- An off-the-record profile: no cookies, cache or storage on disk (the Runtime keeps
  what must survive, and each start logs the window in with a one-time link).
- No context menu (no "Inspect", no "View source"), no devtools, no plugins, no
  navigating to a dropped file, no local content reaching remote URLs, no WebRTC.
- Downloads (an artifact's "Download") ask where to save in a native dialog.
- Size, position and maximised state are kept in the data dir.
- The title and, where the platform has one, the dock or taskbar badge count what
  waits for the person (questions, consent dialogs).
- The window's own words (title, tray, file dialogs) are in the person's language:
  the one chosen in the shell, else the desktop's (``language``); the engine asks the
  Web Host for pages in the same one (``Accept-Language``).
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QColor,
    QFont,
    QGuiApplication,
    QIcon,
    QMoveEvent,
    QPainter,
    QPixmap,
    QResizeEvent,
)
from PySide6.QtWebEngineCore import (
    QWebEngineDownloadRequest,
    QWebEnginePage,
    QWebEnginePermission,
    QWebEngineProfile,
    QWebEngineScript,
    QWebEngineSettings,
)
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QSystemTrayIcon, QWidget

from .language import accept_language, desktop_locale, system_languages, text
from .providers import Dialogs

__all__ = ["GEOMETRY_FILE", "TITLE", "Opener", "ShellPage", "ShellWindow", "harden"]

log = logging.getLogger("lineup.desktop")

TITLE = "LineUp"
GEOMETRY_FILE = "desktop-window.json"
DEFAULT_SIZE = (1100, 760)
WEB = QWebEngineSettings.WebAttribute
LOCKED = {
    WEB.LocalContentCanAccessRemoteUrls: False,
    WEB.LocalContentCanAccessFileUrls: False,
    WEB.PluginsEnabled: False,
    WEB.FullScreenSupportEnabled: False,
    WEB.ScreenCaptureEnabled: False,
    WEB.WebRTCPublicInterfacesOnly: True,
    WEB.NavigateOnDropEnabled: False,
    WEB.DnsPrefetchEnabled: False,
    WEB.PdfViewerEnabled: False,
}


NO_WEBRTC = """for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection",
  "RTCDataChannel", "RTCIceCandidate", "RTCSessionDescription", "RTCRtpSender",
  "RTCRtpReceiver", "RTCRtpTransceiver"]) { try { delete window[name]; } catch (e) {} }"""
"""Run in every frame before its own scripts: no WebRTC at all (see ``harden``)."""


def harden(profile: QWebEngineProfile) -> None:
    """The engine's settings for the shell and its surfaces (the window and the desktop
    tests use this one function). WebRTC: this engine has neither ``Connection-Allowlist``
    nor a switch that stops WebRTC's UDP (``WebRTCPublicInterfacesOnly`` hides the
    candidates but the packets still go), so its constructors are deleted in every frame
    as it is created; a surface cannot get them back from a fresh child frame because
    its CSP allows no frames (docs/security.md)."""
    for attribute, value in LOCKED.items():
        profile.settings().setAttribute(attribute, value)
    script = QWebEngineScript()
    script.setName("lineup-no-webrtc")
    script.setInjectionPoint(QWebEngineScript.InjectionPoint.DocumentCreation)
    script.setWorldId(QWebEngineScript.ScriptWorldId.MainWorld)
    script.setRunsOnSubFrames(True)
    script.setSourceCode(NO_WEBRTC)
    profile.scripts().insert(script)


def _external(url: QUrl) -> bool:
    return url.scheme() in ("http", "https") and bool(url.host())


class _Outbound(QWebEnginePage):
    """The page a ``window.open`` would get: it only hands its first URL to the
    system browser, then goes away."""

    def __init__(self, profile: QWebEngineProfile, dialogs: Dialogs, parent: QWidget) -> None:
        super().__init__(profile, parent)
        self._dialogs = dialogs

    def acceptNavigationRequest(
        self, url: QUrl | str, nav_type: QWebEnginePage.NavigationType, is_main_frame: bool
    ) -> bool:
        url = QUrl(url)
        if _external(url):
            self._dialogs.open_url(url.toString())
            log.info("link opened in the system browser")
        self.deleteLater()
        return False


class ShellPage(QWebEnginePage):
    def __init__(
        self, profile: QWebEngineProfile, origin: QUrl, dialogs: Dialogs, parent: QWidget
    ) -> None:
        super().__init__(profile, parent)
        self.origin = origin
        self.dialogs = dialogs
        self.permissionRequested.connect(self._deny)

    def _same_origin(self, url: QUrl) -> bool:
        return (url.scheme(), url.host(), url.port()) == (
            self.origin.scheme(),
            self.origin.host(),
            self.origin.port(),
        )

    def acceptNavigationRequest(
        self, url: QUrl | str, nav_type: QWebEnginePage.NavigationType, is_main_frame: bool
    ) -> bool:
        url = QUrl(url)
        if not is_main_frame or self._same_origin(url):
            return True  # frames: the shell's CSP (frame-src) and sandbox decide
        if nav_type == QWebEnginePage.NavigationType.NavigationTypeLinkClicked and _external(url):
            self.dialogs.open_url(url.toString())
            log.info("link opened in the system browser")
        else:
            log.warning("navigation away from the shell refused")
        return False

    def createWindow(self, _type: QWebEnginePage.WebWindowType) -> QWebEnginePage:
        parent = self.parent()
        assert isinstance(parent, QWidget)
        return _Outbound(self.profile(), self.dialogs, parent)

    def javaScriptConsoleMessage(
        self,
        level: QWebEnginePage.JavaScriptConsoleMessageLevel,
        message: str,
        line: int,
        source: str,
    ) -> None:
        """Dropped: a page's console (a surface's above all) can hold anything, message
        bodies included, and must not reach the desktop's output or logs (the engine's
        default prints it to stderr)."""

    def _deny(self, permission: QWebEnginePermission) -> None:
        log.info("permission denied", extra={"permission": permission.permissionType().name})
        permission.deny()


def app_icon() -> QIcon:
    """LineUp's mark, drawn (no image file to ship): a blue disc with an L."""
    pixmap = QPixmap(64, 64)
    pixmap.fill(QColor(0, 0, 0, 0))
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor("#2f5bd3"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(2, 2, 60, 60)
    painter.setPen(QColor("white"))
    font = QFont()
    font.setBold(True)
    font.setPixelSize(38)
    painter.setFont(font)
    painter.drawText(pixmap.rect(), Qt.AlignmentFlag.AlignCenter, "L")
    painter.end()
    return QIcon(pixmap)


def tray_for(window: ShellWindow) -> QSystemTrayIcon | None:
    """A tray icon where the platform has a tray (notifications, the waiting count in
    its tooltip, a menu to show the window or quit; a click brings the window
    forward); ``None`` elsewhere."""
    if not QSystemTrayIcon.isSystemTrayAvailable():
        return None
    tray = QSystemTrayIcon(window.windowIcon(), window)
    menu = QMenu(window)
    show = menu.addAction("")
    show.setObjectName("show")
    show.triggered.connect(window.focus)
    leave = menu.addAction("")
    leave.setObjectName("quit")
    leave.triggered.connect(QApplication.quit)
    tray.setContextMenu(menu)
    tray.activated.connect(lambda _reason: window.focus())
    window.dialogs.tray = tray
    window.retranslate()
    tray.show()
    return tray


class Opener(QObject):
    """Carries the page to open from the host thread to the window (a queued signal)."""

    url = Signal(str)


class ShellWindow(QMainWindow):
    def __init__(self, data_dir: Path, profile: QWebEngineProfile, dialogs: Dialogs) -> None:
        super().__init__()
        self.data_dir = data_dir
        self.dialogs = dialogs
        self.dialogs.window = self
        self.profile = profile
        harden(profile)
        profile.downloadRequested.connect(self._download)
        self.view = QWebEngineView(self)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.NoContextMenu)
        self.page: ShellPage | None = None
        self.setCentralWidget(self.view)
        self.preferred = system_languages()
        self.language = desktop_locale(None, self.preferred)
        self.waiting = 0
        self.follow_choice(None)
        self.setWindowIcon(app_icon())
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(500)
        self._save_timer.timeout.connect(self.save_geometry)
        self.restore_geometry()

    def open(self, url: str) -> None:
        """Show the shell at ``url`` (the Web Host's login link or login page)."""
        target = QUrl(url)
        origin = QUrl(f"{target.scheme()}://{target.host()}:{target.port()}")
        self.page = ShellPage(self.profile, origin, self.dialogs, self.view)
        self.page.loadFinished.connect(self._loaded)
        self.view.setPage(self.page)
        self.view.load(target)

    def _loaded(self, ok: bool) -> None:
        log.info("desktop window loaded", extra={"ok": ok})

    def focus(self) -> None:
        """Bring the window to the front (a second launch asks for this)."""
        self.setWindowState(self.windowState() & ~Qt.WindowState.WindowMinimized)
        self.show()
        self.raise_()
        self.activateWindow()

    def set_waiting(self, count: int) -> None:
        """``count`` things wait for the person: in the title and the app's badge."""
        log.info("waiting for the person", extra={"count": count})
        self.waiting = count
        self.retranslate()
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.setBadgeNumber(count)

    def follow_choice(self, choice: str | None) -> None:
        """The person's language setting (``None``: as the desktop says): the window's
        words and the engine's ``Accept-Language`` follow it."""
        self.language = desktop_locale(choice, self.preferred)
        self.profile.setHttpAcceptLanguage(accept_language(choice, self.preferred))
        self.dialogs.locale = self.language
        log.info("desktop language", extra={"locale": self.language})
        self.retranslate()

    def retranslate(self) -> None:
        """The window's own words again, in ``self.language``."""
        title = (
            text(self.language, "desktop.title_waiting", count=self.waiting)
            if self.waiting
            else text(self.language, "desktop.title")
        )
        self.setWindowTitle(title)
        tray = self.dialogs.tray
        if tray is None:
            return
        tray.setToolTip(title)
        menu = tray.contextMenu()
        for action in menu.actions() if menu is not None else []:
            if action.objectName() in ("show", "quit"):
                action.setText(text(self.language, f"desktop.tray.{action.objectName()}"))

    # --- downloads ---------------------------------------------------------------------------

    def _download(self, request: QWebEngineDownloadRequest) -> None:
        log.info("download requested")
        path = self.dialogs.save_file(request.suggestedFileName())
        if path is None:
            request.cancel()
            return
        target = Path(path)
        request.setDownloadDirectory(str(target.parent))
        request.setDownloadFileName(target.name)
        request.isFinishedChanged.connect(
            lambda: log.info(
                "download finished",
                extra={"state": request.state().name, "bytes": request.receivedBytes()},
            )
        )
        request.accept()

    # --- geometry ----------------------------------------------------------------------------

    def restore_geometry(self) -> None:
        self.resize(*DEFAULT_SIZE)
        try:
            saved = json.loads((self.data_dir / GEOMETRY_FILE).read_text("utf-8"))
            geometry = QByteArray(base64.b64decode(saved["geometry"]))
        except (OSError, ValueError, KeyError, TypeError):
            return
        self.restoreGeometry(geometry)

    def save_geometry(self) -> None:
        data = bytes(self.saveGeometry().data())
        try:
            (self.data_dir / GEOMETRY_FILE).write_text(
                json.dumps({"geometry": base64.b64encode(data).decode("ascii")}), "utf-8"
            )
        except OSError:
            log.warning("window geometry not saved")

    def moveEvent(self, event: QMoveEvent) -> None:
        super().moveEvent(event)
        self._save_timer.start()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._save_timer.start()

    def closeEvent(self, event: QCloseEvent) -> None:
        self._save_timer.stop()
        self.save_geometry()
        super().closeEvent(event)
