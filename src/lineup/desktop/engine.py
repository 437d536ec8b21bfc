"""QtWebEngine's process-wide switches, set before Qt starts (it reads them once).

- Devtools stay off: ``QTWEBENGINE_REMOTE_DEBUGGING`` is removed from the environment
  unless the caller asks for remote debugging explicitly (the desktop tests do, to
  drive the window's page with Playwright over the DevTools protocol).
- Only loopback is reachable: every connection to anywhere else is sent to a proxy
  on a closed loopback port, so it fails (``--proxy-server``; loopback and
  ``*.localhost``, where the Web Host and the surface origin listen, always go
  direct). The window needs nothing else: links open in the system browser. This
  stands in for the ``Connection-Allowlist`` header the surfaces rely on in a
  browser, which this engine (Chromium 140) lacks: without it, a surface's
  ``<link rel=preconnect>`` reached an attacker's host (measured). Host names are
  not even resolved: the proxy would resolve them.
- Each site gets its own renderer process (``--site-per-process``): a surface's busy
  loop cannot stall the shell.
- (WebRTC, which the proxy does not carry, is taken away per frame by
  ``window.harden``: no switch of this engine stops its UDP, measured.)
- No background traffic of the engine's own (component updates, sync, first-run).
- Chromium refuses to start as root with its sandbox; as root only (a container, a
  CI machine) the sandbox is turned off, with a warning in the log.
"""

from __future__ import annotations

import logging
import os

__all__ = ["CHROMIUM_FLAGS", "prepare_environment"]

log = logging.getLogger("lineup.desktop")

BLACKHOLE_PROXY = "http://127.0.0.1:1"
"""Nothing listens there (binding port 1 takes root): every non-loopback connection fails."""

CHROMIUM_FLAGS = (
    f"--proxy-server={BLACKHOLE_PROXY}",
    "--site-per-process",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def prepare_environment(*, remote_debugging: str | None = None) -> None:
    """Set QtWebEngine's switches in ``os.environ``; call before importing Qt's
    WebEngine modules. Flags already in ``QTWEBENGINE_CHROMIUM_FLAGS`` (``--disable-gpu``
    on a machine without a GPU, say) are kept. ``remote_debugging``: ``host:port`` for
    the DevTools protocol; tests only."""
    os.environ.pop("QTWEBENGINE_REMOTE_DEBUGGING", None)
    if remote_debugging is not None:
        os.environ["QTWEBENGINE_REMOTE_DEBUGGING"] = remote_debugging
    own = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "").split()
    os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = " ".join(
        [*own, *(f for f in CHROMIUM_FLAGS if f not in own)]
    )
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.environ["QTWEBENGINE_DISABLE_SANDBOX"] = "1"
        log.warning("running as root: the web engine's own sandbox is off")
