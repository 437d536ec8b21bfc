"""One desktop window per data dir: the first launch listens on a local socket in the
data dir; a second launch connects, asks it to come to the front and exits. (The
Runtime's own lock on the data dir would refuse the second launch anyway; this makes
it useful.)"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtNetwork import QLocalServer, QLocalSocket

__all__ = ["SingleInstance"]

log = logging.getLogger("lineup.desktop")
FOCUS = b"focus\n"


class SingleInstance:
    def __init__(self, name: str) -> None:
        self.name = name
        self._server: QLocalServer | None = None

    def hand_over(self) -> bool:
        """``True`` when another window serves this data dir and was asked to focus."""
        probe = QLocalSocket()
        probe.connectToServer(self.name)
        if not probe.waitForConnected(500):
            return False
        probe.write(FOCUS)
        probe.flush()
        probe.waitForBytesWritten(1000)
        probe.disconnectFromServer()
        return True

    def listen(self, focus: Callable[[], None]) -> None:
        QLocalServer.removeServer(self.name)  # a socket file a crash left behind
        server = QLocalServer()
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            log.warning("single-instance socket not available")
            return

        def connected() -> None:
            while server.hasPendingConnections():
                socket = server.nextPendingConnection()

                def read(socket: QLocalSocket = socket) -> None:
                    if bytes(socket.readAll().data()).startswith(FOCUS.strip()):
                        log.info("another launch asked for the window")
                        focus()
                    socket.disconnectFromServer()

                socket.readyRead.connect(read)

        server.newConnection.connect(connected)
        self._server = server

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
