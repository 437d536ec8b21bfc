"""What ``lineup desktop`` and ``lineup demo --desktop`` run: the jobs of ``lineup
client`` and ``lineup demo``, shown in the desktop window (``app.run_desktop``)."""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lineup.delivery.keys import PublicKey
from lineup.extras import MissingExtra

if TYPE_CHECKING:
    from .providers import Dialogs

__all__ = ["MissingDesktopExtra", "desktop_client", "desktop_demo", "free_port"]


class MissingDesktopExtra(MissingExtra):
    """PySide6 with QtWebEngine is not installed."""


def _check_qt() -> None:
    try:
        import PySide6.QtWebEngineWidgets  # noqa: F401
    except ImportError:
        raise MissingDesktopExtra(
            "PySide6.QtWebEngineWidgets", "desktop", "the desktop host"
        ) from None


def free_port() -> int:
    """A loopback port free right now (the window's Web Host needs no fixed one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def desktop_client(
    data_dir: Path,
    *,
    server_url: str,
    port: int | None,
    surface_port: int | None,
    agent_id: str | None,
    trusted_keys: Sequence[PublicKey],
    dialogs_factory: Callable[[], Dialogs] | None = None,
    remote_debugging: str | None = None,
) -> int:
    """``lineup desktop``. ``dialogs_factory`` and ``remote_debugging``: see
    ``app.run_desktop`` (tests)."""
    _check_qt()
    from lineup.host.serve import run_standalone

    from .app import run_desktop

    job = functools.partial(
        run_standalone,
        data_dir,
        server_url=server_url,
        host="127.0.0.1",
        port=port or free_port(),
        surface_port=surface_port or free_port(),
        agent_id=agent_id,
        trusted_keys=trusted_keys,
    )
    return run_desktop(
        data_dir, job, dialogs_factory=dialogs_factory, remote_debugging=remote_debugging
    )


def desktop_demo(
    data_dir: Path, *, host: str, port: int, web_port: int, surface_port: int | None
) -> int:
    """``lineup demo --desktop``."""
    _check_qt()
    from lineup.demo import run_demo

    from .app import run_desktop

    job = functools.partial(
        run_demo, data_dir, host=host, port=port, web_port=web_port, surface_port=surface_port
    )
    return run_desktop(data_dir, job)
