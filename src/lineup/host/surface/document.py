"""A surface's verified parts and the one HTML page the surface origin builds from them.

The page is ``<!doctype html>``, ``<meta charset>``, the bridge script, the app's CSS,
then the app's HTML, then the app's JS. The bridge comes first so that it has captured
what it relies on before any app code runs; app HTML comes after it in the parse and
cannot move anything before it.

App CSS and JS are placed inside ``<style>`` and ``<script>`` raw-text elements. Text
that would end those elements early (``</style``, ``</script``) or put the HTML
tokenizer into the "script data escaped" states (``<!--``, ``<script``) is refused,
not rewritten: silently mangling code changes what it does, and the author can write
``<\\/script>`` or ``"\\x3c!--"`` instead. An unbalanced app HTML (an unclosed
``<textarea>``, say) can only swallow the app's own JS, never the bridge: that is the
app's bug, not a boundary, so the HTML is not parsed here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources

from lineup.protocol.fields import ID_PATTERN, MAX_BUNDLE_BYTES

__all__ = [
    "SurfaceDocument",
    "SurfaceRejected",
    "SurfaceRejectionCode",
    "bundle_bytes",
    "compose",
]

_ID = re.compile(ID_PATTERN)
_STYLE_END = re.compile(r"</style", re.IGNORECASE)
_SCRIPT_BREAKERS = re.compile(r"</script|<script|<!--", re.IGNORECASE)
_BOOT_PLACEHOLDER = "__LINEUP_SURFACE_BOOT__"
_APP_BOOT_PLACEHOLDER = "__LINEUP_APP_BOOT__"
_LANG = re.compile(r"^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*\Z")


class SurfaceRejectionCode(StrEnum):
    """Why a surface document was refused at mount time (stable, like ``ErrorCode``)."""

    SURFACE_INVALID = "surface_invalid"
    SURFACE_TOO_LARGE = "surface_too_large"


class SurfaceRejected(Exception):
    """A document that cannot be mounted. ``detail`` names the part and the rule, never
    any of the document's text (it ends up in logs)."""

    def __init__(self, code: SurfaceRejectionCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class SurfaceDocument:
    """The verified parts of one surface. The app, version and surface ids are for logs;
    the contents are kept out of ``repr`` so that a stray log line cannot carry them."""

    app_id: str
    app_version: str
    surface_id: str
    html: str = field(repr=False)
    css: str = field(repr=False)
    js: str = field(repr=False)


def bundle_bytes(document: SurfaceDocument) -> int:
    """html + css + js as UTF-8 bytes, the measure of the bundle limit. Text that has
    no UTF-8 form (a lone surrogate) is refused."""
    try:
        return sum(len(part.encode("utf-8")) for part in (document.html, document.css, document.js))
    except UnicodeEncodeError:
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_INVALID, "the surface is not valid Unicode text"
        ) from None


def _check(document: SurfaceDocument) -> int:
    size = bundle_bytes(document)
    if size > MAX_BUNDLE_BYTES:
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_TOO_LARGE,
            f"html + css + js is {size} bytes, more than {MAX_BUNDLE_BYTES}",
        )
    if _STYLE_END.search(document.css):
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_INVALID,
            "the CSS contains '</style', which would end its <style> element early",
        )
    if _SCRIPT_BREAKERS.search(document.js):
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_INVALID,
            "the JS contains '</script', '<script' or '<!--', which change how its"
            " <script> element is parsed; write '<\\/script' or '\\x3c' instead",
        )
    return size


def _script_json(value: object) -> str:
    """JSON that is also safe inside an inline ``<script>``: nothing in it can end the
    element or the JS string it sits in."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script_source(name: str, placeholder: str) -> str:
    source = resources.files(__package__).joinpath(name).read_text("utf-8")
    if source.count(placeholder) != 1 or _SCRIPT_BREAKERS.search(source):
        raise RuntimeError(f"{name} must hold its boot placeholder once and no '</script'")
    return source


_BRIDGE = _script_source("bridge.js", _BOOT_PLACEHOLDER)
_APP_SDK = _script_source("app_sdk.js", _APP_BOOT_PLACEHOLDER)


def compose(
    document: SurfaceDocument,
    *,
    instance_id: str,
    mount_id: str,
    app: bool = False,
    lang: str | None = None,
) -> bytes:
    """The page the surface origin serves for one mount, as UTF-8. ``app``: a MiniApp
    instance's own surface, which also gets the MiniApp SDK (``LineUpApp``, inlined
    after the bridge); a surface an agent opened gets the bridge only. ``lang``: the
    person's language (a BCP 47 tag), put on ``<html lang>`` so that the surface knows
    it before its first paint (an app's ``context().locale`` says the same).

    Raises ``SurfaceRejected`` for a document that is too large or whose CSS or JS
    would break out of its element; ``ValueError`` for ids that are not protocol ids
    (the caller's bug, not the document's)."""
    for name, value in (("instance_id", instance_id), ("mount_id", mount_id)):
        if not _ID.match(value):
            raise ValueError(f"{name} is not a protocol id")
    if lang is not None and not _LANG.match(lang):
        raise ValueError("lang is not a language tag")
    _check(document)
    boot = _script_json({"instance_id": instance_id, "mount_id": mount_id})
    bridge = _BRIDGE.replace(_BOOT_PLACEHOLDER, boot)
    if app:
        bridge += "\n" + _APP_SDK.replace(_APP_BOOT_PLACEHOLDER, boot)
    html_open = "<html>" if lang is None else f'<html lang="{lang}">'
    page = (
        "<!doctype html>\n"
        f'{html_open}<head><meta charset="utf-8">\n'
        f"<script>{bridge}</script>\n"
        f"<style>{document.css}</style>\n"
        f"</head><body>\n{document.html}\n"
        f"<script>{document.js}</script>\n"
        "</body></html>\n"
    )
    return page.encode("utf-8")
