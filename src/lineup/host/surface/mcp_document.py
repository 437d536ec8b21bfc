"""The surface document of an MCP App view: our bridge, and the view nested inside it.

An MCP server's ``ui://`` resource (``text/html;profile=mcp-app``, SEP-1865) is arbitrary
HTML that speaks MCP Apps JSON-RPC to its parent frame. It is mounted like any surface
(a single-use document on its own ``m-<random>.localhost`` host, framed by the shell
with ``sandbox="allow-scripts"``), but the document is ours: ``mcp_bridge.js``, then
the LineUp surface bridge (``bridge.js``, for ``ready`` and ``resize``; its ``ready``
comes once our listener is in place), then the notice, if any. The MCP bridge frames
the view in a nested ``<iframe sandbox="allow-scripts" srcdoc>``. Why srcdoc and not a
second URL: a srcdoc child inherits this document's CSP and ``Connection-Allowlist``
(measured in Chromium 156; ``frame-src 'none'`` does not block it), it gets an opaque
origin of its own, so it cannot reach into the bridge's realm, and it needs no second
single-use URL on the surface origin. The view can still ``top.postMessage``, but the
shell hears only ``event.source === frame.contentWindow`` (this document), so its only
way out is our bridge.

CSP: the surface origin's (``headers.surface_headers``), unchanged. That is the spec's
restrictive default and stricter ("Host MAY further restrict"): inline script and style,
``data:``/``blob:`` images, no connections, no subresources, no nested frames of the
view's own. Surfaces have no internet, so the domains a resource declares in
``_meta.ui.csp`` are never granted; the view still renders, the document shows the
person a notice naming them (``declared_domains``), and ``hostCapabilities.sandbox``
tells the view that nothing was granted.

Messages between this document and the shell (namespace ``lineup.mcp.v1``; every one a
plain JSON object with exactly these fields; ``<id>`` is ``v<n>``, the bridge's own):

surface -> shell
  ``{namespace, type: "request", instance_id, mount_id, id, method, params}``
      method one of ``RELAYED_METHODS``; params checked and reduced by the bridge:
      ``tools/call {name (1..128 chars), arguments: object}``,
      ``resources/read {uri (≤ 2048)}``, ``ui/open-link {url (≤ 2048, parses)}``,
      ``ui/message {role: "user", content: ContentBlock[] (1..64 objects with a type)}``,
      ``ui/update-model-context {content?: ContentBlock[], structuredContent?: object}``,
      ``ui/request-display-mode {mode: "inline"|"fullscreen"|"pip"}``.
      The whole view message was under 96 KiB; at most 8 requests wait at once.
  ``{namespace, type: "cancel", instance_id, mount_id, id}``
      the view cancelled (``notifications/cancelled``), reloaded, or was torn down:
      answer nothing more for ``id``.
  ``{namespace, type: "event", instance_id, mount_id, name, data}``, name one of
      ``view.initialized`` ``{app_name, app_version, protocol_version, app_tools: bool,
      display_modes: [...]}``; ``view.log`` ``{level, bytes}`` (never the log's data);
      ``view.teardown_requested`` ``{}``; ``view.torn_down`` ``{answered: bool}``;
      ``view.reloaded`` ``{}`` (the view is a new document: it gets nothing more).
  Plus, from ``bridge.js`` in ``lineup.surface.v1``: ``ready`` first, and ``resize``
  (notice + view height) whenever the view's size changes.

shell -> surface (to the frame's window, target ``"*"``; ``{namespace, type,
instance_id, ...}``):
  ``response``: ``{id, ok: true, result: object}`` -> the JSON-RPC result;
      ``{id, ok: false, error: {code, message, rpc_code?}}`` -> the JSON-RPC error
      ``{code: rpc_code or -32000, message, data: {code}}``; ``code`` is a stable LineUp
      code (``^[a-z][a-z0-9_]{0,63}$``).
  ``progress``: ``{id, progress, total?, message?}`` -> ``notifications/progress`` for
      that request, if the view gave a ``progressToken`` (keeps the App SDK's 60 s
      request timeout from firing while the person decides).
  ``tool_input``: ``{arguments: object}`` (once); ``tool_result``: ``{result:
      CallToolResult}``; ``tool_cancelled``: ``{reason?}`` (one of the two, once);
      ``host_context``: ``{context: partial hostContext}``; ``teardown``: ``{reason?}``.
  The bridge holds them until the view's ``ui/notifications/initialized`` and keeps
  the protocol's order (tool-input before tool-result) whatever the order they came in.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lineup.i18n import shell

from .document import (
    _APP_BOOT_PLACEHOLDER,
    _BOOT_PLACEHOLDER,
    _ID,
    _LANG,
    _SCRIPT_BREAKERS,
    SurfaceRejected,
    SurfaceRejectionCode,
    _script_json,
    _script_source,
)
from .headers import surface_headers

__all__ = [
    "HOST_CAPABILITIES",
    "MAX_VIEW_BYTES",
    "MCP_APP_MIME_TYPE",
    "RELAYED_METHODS",
    "STYLE_VARIABLES",
    "DeclaredDomains",
    "declared_domains",
    "mcp_view_document",
]

MCP_APP_MIME_TYPE = "text/html;profile=mcp-app"
MAX_VIEW_BYTES = 1024 * 1024
"""The largest view HTML mounted, as UTF-8. Larger than a MiniApp bundle's limit: MCP
views are single-file builds with their libraries inlined (the official examples are
218 to 437 kB)."""

RELAYED_METHODS = (
    "tools/call",
    "resources/read",
    "ui/open-link",
    "ui/message",
    "ui/update-model-context",
    "ui/request-display-mode",
)
"""The view requests the bridge hands to the shell for the Runtime to decide."""

HOST_CAPABILITIES: Mapping[str, Any] = {
    "openLinks": {},
    "serverTools": {},
    "serverResources": {},
    "logging": {},
    "message": {"text": {}},
    "updateModelContext": {"text": {}, "structuredContent": {}},
    "sandbox": {"permissions": {}, "csp": {}},
}
"""What the bridge tells a view by default (``ui/initialize``'s ``hostCapabilities``):
every relayed method, and a sandbox that grants no permission and no domain."""

STYLE_VARIABLES: Mapping[str, str] = {
    "--color-background-primary": "#ffffff",
    "--color-background-secondary": "#f4f5f7",
    "--color-background-info": "#eef2fd",
    "--color-text-primary": "#1d2330",
    "--color-text-secondary": "#5f6878",
    "--color-text-info": "#213c9c",
    "--color-text-danger": "#c0262d",
    "--color-text-success": "#17784a",
    "--color-text-warning": "#b54708",
    "--color-border-primary": "#e3e6eb",
    "--color-ring-primary": "#3358d4",
    "--font-sans": '"DejaVu Sans", system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
    "--font-mono": '"DejaVu Sans Mono", ui-monospace, monospace',
}
"""The shell's light palette (``static/style.css``) as MCP Apps' standard CSS variables
(``hostContext.styles.variables``), so that a view that applies them looks like LineUp.
Only for the light theme, the shell's only one: a dark view keeps its own colours."""

_MCP_BOOT_PLACEHOLDER = "__LINEUP_MCP_BOOT__"
_CSP_KEYS = (
    ("connectDomains", "connect"),
    ("resourceDomains", "resource"),
    ("frameDomains", "frame"),
    ("baseUriDomains", "base_uri"),
)
# A declared source as a CSP source expression may be written: no character that could
# end a directive, quote a keyword or add a second source (basic-host's rule), printable.
_SOURCE = re.compile(r"^[!#-&(-:<-~]{1,255}\Z")
_MAX_SOURCES = 64
_NOTICE_SHOWN = 5
_MCP_BRIDGE = _script_source("mcp_bridge.js", _MCP_BOOT_PLACEHOLDER)
_SURFACE_BRIDGE = _script_source("bridge.js", _BOOT_PLACEHOLDER)
assert _APP_BOOT_PLACEHOLDER not in _MCP_BRIDGE

_STYLE = (
    "html,body{margin:0;padding:0;background:transparent}"
    "#lineup-mcp-notice{margin:0;padding:6px 10px;font:13px/1.4 system-ui,sans-serif;"
    "color:#5a3b00;background:#fff4d6;border-bottom:1px solid #e6c67a}"
)


@dataclass(frozen=True, slots=True)
class DeclaredDomains:
    """The sources a view's ``_meta.ui.csp`` asks for, by directive, as declared
    (entries that are not a single CSP source expression are dropped). None of them is
    granted on a LineUp surface; this is what the person is told and the audit records."""

    connect: tuple[str, ...] = ()
    resource: tuple[str, ...] = ()
    frame: tuple[str, ...] = ()
    base_uri: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        """Every declared source once, in declaration order."""
        return tuple(dict.fromkeys((*self.connect, *self.resource, *self.frame, *self.base_uri)))


def declared_domains(ui_meta: Mapping[str, Any] | None) -> DeclaredDomains:
    """The domains a resource's ``_meta.ui`` declares in ``csp`` (SEP-1865
    ``McpUiResourceCsp``). Anything that is not a list of source strings counts as
    nothing declared: a malformed ``csp`` can only make the view get less."""
    csp = ui_meta.get("csp") if isinstance(ui_meta, Mapping) else None
    if not isinstance(csp, Mapping):
        return DeclaredDomains()
    found: dict[str, tuple[str, ...]] = {}
    for key, name in _CSP_KEYS:
        value = csp.get(key)
        entries = value if isinstance(value, list) else []
        sources = [e for e in entries if isinstance(e, str) and _SOURCE.match(e)]
        found[name] = tuple(dict.fromkeys(sources))[:_MAX_SOURCES]
    return DeclaredDomains(**found)


def _notice(declared: DeclaredDomains, locale: str) -> str:
    domains = declared.all
    if not domains:
        return ""
    shown = ", ".join(domains[:_NOTICE_SHOWN]) + (", …" if len(domains) > _NOTICE_SHOWN else "")
    text = shell().text(locale, "mcp_view.no_internet", domains=shown)
    return f'<p id="lineup-mcp-notice" role="status">{html.escape(text)}</p>\n'


def _view_text(view_html: str) -> str:
    try:
        size = len(view_html.encode("utf-8"))
    except UnicodeEncodeError:
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_INVALID, "the view is not valid Unicode text"
        ) from None
    if size > MAX_VIEW_BYTES:
        raise SurfaceRejected(
            SurfaceRejectionCode.SURFACE_TOO_LARGE,
            f"the view is {size} bytes, more than {MAX_VIEW_BYTES}",
        )
    return view_html


def mcp_view_document(
    view_html: str,
    ui_meta: Mapping[str, Any] | None,
    *,
    instance_id: str,
    mount_id: str,
    shell_origins: Iterable[str],
    name: str,
    lang: str | None = None,
    theme: Literal["light", "dark"] = "light",
    tool: Mapping[str, Any] | None = None,
    call_id: str | None = None,
    host_version: str = "1",
    host_capabilities: Mapping[str, Any] = HOST_CAPABILITIES,
) -> tuple[bytes, dict[str, str]]:
    """The page (UTF-8) and response headers the surface origin serves for one MCP
    view mount.

    ``view_html``: the resource's text, already read from the server and pinned;
    ``ui_meta``: its content item's ``_meta.ui`` (only ``csp`` is read: the notice);
    ``name``: the server's name, for the view frame's accessible name; ``lang``: the
    person's language (``<html lang>``, ``hostContext.locale``); ``theme``: the
    shell's; ``tool``: the MCP ``Tool`` whose call opened the view
    (``hostContext.toolInfo.tool``) and ``call_id`` that call's id (``toolInfo.id``);
    ``host_capabilities``: what ``ui/initialize``
    advertises (the Runtime may offer less than ``HOST_CAPABILITIES``).

    Raises ``SurfaceRejected`` (``surface_too_large`` over ``MAX_VIEW_BYTES``,
    ``surface_invalid`` for text with no UTF-8 form); ``ValueError`` for ids, a language
    or a theme that are not valid (the caller's bug)."""
    for label, value in (("instance_id", instance_id), ("mount_id", mount_id)):
        if not _ID.match(value):
            raise ValueError(f"{label} is not a protocol id")
    if lang is not None and not _LANG.match(lang):
        raise ValueError("lang is not a language tag")
    if theme not in ("light", "dark"):
        raise ValueError("theme is light or dark")
    text = _view_text(view_html)
    locale = lang or "en"
    host_context: dict[str, Any] = {
        "theme": theme,
        "locale": locale,
        "displayMode": "inline",
        "availableDisplayModes": ["inline"],
        "platform": "web",
    }
    if theme == "light":
        host_context["styles"] = {"variables": dict(STYLE_VARIABLES)}
    if tool is not None:
        info: dict[str, Any] = {"tool": dict(tool)}
        if call_id is not None:
            info["id"] = call_id
        host_context["toolInfo"] = info
    ids = {"instance_id": instance_id, "mount_id": mount_id}
    boot = {
        **ids,
        "view_html": text,
        "title": shell().text(locale, "mcp_view.frame_title", name=name),
        "host_info": {"name": "LineUp", "version": host_version},
        "host_capabilities": dict(host_capabilities),
        "host_context": host_context,
    }
    surface_bridge = _SURFACE_BRIDGE.replace(_BOOT_PLACEHOLDER, _script_json(ids))
    mcp_bridge = _MCP_BRIDGE.replace(_MCP_BOOT_PLACEHOLDER, _script_json(boot))
    if _SCRIPT_BREAKERS.search(mcp_bridge):  # _script_json escapes '<': cannot happen
        raise RuntimeError("the MCP bridge's boot object would break its <script>")
    html_open = "<html>" if lang is None else f'<html lang="{lang}">'
    page = (
        "<!doctype html>\n"
        f'{html_open}<head><meta charset="utf-8">\n'
        f"<script>{mcp_bridge}</script>\n"
        f"<script>{surface_bridge}</script>\n"
        f"<style>{_STYLE}</style>\n"
        "</head><body>\n"
        f"{_notice(declared_domains(ui_meta), locale)}"
        "</body></html>\n"
    )
    return page.encode("utf-8"), surface_headers(shell_origins)
