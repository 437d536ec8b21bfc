"""The response headers of the surface origin, and the shell's matching ``frame-src``.

Every response of the surface origin (documents, 404, 405, 410) carries the same
headers, so a surface can never reach a page of this origin that is less locked down
than its own. The sandbox alone does not stop a frame from sending data out; these
headers do (see "Known browser facts" in the architecture notes):

- the CSP allows inline script and style only (the origin inlines everything), no
  connections, no subresources but ``data:``/``blob:`` images, no forms, no ``<base>``,
  and only the shell may frame the document. ``sandbox allow-scripts`` repeats the
  iframe's sandbox, so the document gets an opaque origin even if something frames
  it without the attribute.
- ``Connection-Allowlist: ()`` (Chromium 152+) closes what CSP leaves open: WebRTC
  (UDP and TURN over TCP) and the DNS and pre-connect work Chromium does even for
  navigations the CSP blocks.
- ``Permissions-Policy`` denies every powerful feature Chromium 156 recognises. Names
  it does not recognise are left out on purpose: each one costs a console warning on
  every surface load (measured: ``ambient-light-sensor``, ``attribution-reporting``,
  ``bluetooth``, ``direct-sockets``, ``document-domain``, ``join-ad-interest-group``,
  ``private-aggregation``, ``run-ad-auction``, ``shared-storage``,
  ``shared-storage-select-url``, ``smart-card``, ``web-share``, ``battery``,
  ``vertical-scroll``, ``autofill``, ``popins``; ``writer``, ``rewriter`` and
  ``focus-without-user-activation`` are origin-trial gated).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["PERMISSIONS_POLICY", "frame_source", "surface_csp", "surface_headers"]

_DENIED_FEATURES = (
    "accelerometer",
    "autoplay",
    "browsing-topics",
    "camera",
    "captured-surface-control",
    "clipboard-read",
    "clipboard-write",
    "compute-pressure",
    "deferred-fetch",
    "deferred-fetch-minimal",
    "digital-credentials-create",
    "digital-credentials-get",
    "display-capture",
    "encrypted-media",
    "fullscreen",
    "gamepad",
    "geolocation",
    "gyroscope",
    "hid",
    "identity-credentials-get",
    "idle-detection",
    "keyboard-map",
    "language-detector",
    "language-model",
    "local-fonts",
    "local-network",
    "local-network-access",
    "loopback-network",
    "magnetometer",
    "microphone",
    "midi",
    "on-device-speech-recognition",
    "otp-credentials",
    "payment",
    "picture-in-picture",
    "private-state-token-issuance",
    "private-state-token-redemption",
    "publickey-credentials-create",
    "publickey-credentials-get",
    "screen-wake-lock",
    "serial",
    "speaker-selection",
    "storage-access",
    "summarizer",
    "sync-xhr",
    "translator",
    "unload",
    "usb",
    "window-management",
    "xr-spatial-tracking",
)

PERMISSIONS_POLICY = ", ".join(f"{feature}=()" for feature in _DENIED_FEATURES)
"""Every powerful feature Chromium 156 knows, allowed to nobody."""

# An origin as the shell is reached: scheme, host, optional port; nothing that could
# end a CSP directive or add a source expression.
_ORIGIN = re.compile(
    r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?\Z|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?\Z"
)


def _checked_origins(shell_origins: Iterable[str]) -> tuple[str, ...]:
    origins = tuple(dict.fromkeys(shell_origins))
    if not origins:
        raise ValueError("at least one shell origin must be allowed to frame surfaces")
    for origin in origins:
        if not _ORIGIN.match(origin):
            raise ValueError(f"not an origin: {origin!r}")
    return origins


def surface_csp(shell_origins: Iterable[str]) -> str:
    """The CSP of every surface-origin response; only ``shell_origins`` may frame it."""
    ancestors = " ".join(_checked_origins(shell_origins))
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'unsafe-inline'",
            "style-src 'unsafe-inline'",
            "img-src data: blob:",
            "font-src 'none'",
            "connect-src 'none'",
            "media-src 'none'",
            "object-src 'none'",
            "worker-src 'none'",
            "manifest-src 'none'",
            "frame-src 'none'",
            "child-src 'none'",
            "form-action 'none'",
            "base-uri 'none'",
            "sandbox allow-scripts",
            f"frame-ancestors {ancestors}",
        ]
    )


def surface_headers(shell_origins: Iterable[str]) -> dict[str, str]:
    """The headers every surface-origin response carries, whatever its status."""
    return {
        "Content-Security-Policy": surface_csp(shell_origins),
        "Connection-Allowlist": "()",
        "Permissions-Policy": PERMISSIONS_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cache-Control": "no-store",
        "Content-Type": "text/html; charset=utf-8",
    }


def frame_source(port: int) -> str:
    """The shell's ``frame-src`` source for the surface origin on ``port``: every
    per-mount host name, and nothing else (a frame navigating itself elsewhere is
    blocked by the shell's CSP)."""
    if not 0 < port < 65536:
        raise ValueError(f"not a port: {port}")
    return f"http://*.localhost:{port}"
