"""The surface origin: a second loopback listener that serves each mounted surface
document once, from its own random host name, with the headers in ``headers.py``.

Why a host name per mount: Chromium puts sandboxed frames of one site in one renderer
process, and ``*.localhost`` names resolve to loopback without DNS, so
``m-<random>.localhost`` gives every surface its own site (and process) for free.
Why single use: a frame can reload or navigate itself, and the shell cannot tell the
new document from the old one by ``event.source``. Serving a mount's document only
once (a second request gets ``410 Gone`` and an empty body) means a reloaded frame
holds nothing that can speak; the shell also treats a second ``load`` as untrusted
and mounts afresh.

Routing is a pure function of (method, Host, path, query) over the in-memory mounts
(``respond``); the ASGI callable around it is a few lines. Logs carry ids, codes and
sizes only: never a document's text, and never a mount's host name, which is its
capability.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from .document import SurfaceDocument, SurfaceRejected, compose
from .headers import surface_headers
from .mcp_document import mcp_view_document

__all__ = ["Mount", "SurfaceOrigin", "SurfaceReply"]

log = logging.getLogger("lineup.host.surface")

_HOST_SUFFIX = ".localhost"
_LABEL_PREFIX = "m-"
_ALLOWED_METHODS = "GET, HEAD"
_ASGIMessage = MutableMapping[str, Any]


@dataclass(frozen=True, slots=True)
class Mount:
    """One mounted surface document. ``url`` is what the shell puts in the iframe's
    ``src``; ``host_name`` (``m-<32 hex>.localhost``) is unguessable and is the only
    way to reach the document."""

    mount_id: str
    instance_id: str
    host_name: str
    url: str


@dataclass(frozen=True, slots=True)
class SurfaceReply:
    """What the origin answers one request with (headers are the same for all)."""

    status: int
    body: bytes = b""
    allow: str | None = None


@dataclass(slots=True)
class _Entry:
    mount: Mount
    page: bytes | None  # None once served


class SurfaceOrigin:
    """Holds the mounted surfaces in memory and serves them as an ASGI app.

    ``shell_origins`` are the only origins allowed to frame a surface
    (``frame-ancestors``). The port is usually known only once the listener is bound
    (tests bind port 0), so it may be given later with ``bind_port``; mounting needs it.
    """

    def __init__(self, shell_origins: Iterable[str], *, port: int | None = None) -> None:
        self._shell_origins = tuple(shell_origins)
        self._headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in surface_headers(self._shell_origins).items()
        ]
        self._port: int | None = None
        self._by_host: dict[str, _Entry] = {}
        self._by_id: dict[str, _Entry] = {}
        if port is not None:
            self.bind_port(port)

    # --- configuration ------------------------------------------------------------------

    @property
    def port(self) -> int | None:
        return self._port

    def bind_port(self, port: int) -> None:
        """Record the port the listener is bound to; it is part of every mount's URL
        and of the ``Host`` a request must carry. It cannot change once set."""
        if not 0 < port < 65536:
            raise ValueError(f"not a port: {port}")
        if self._port is not None and self._port != port:
            raise RuntimeError(f"the surface origin is already bound to port {self._port}")
        self._port = port

    # --- mounts -------------------------------------------------------------------------

    def mount(
        self,
        instance_id: str,
        document: SurfaceDocument,
        *,
        app: bool = False,
        lang: str | None = None,
    ) -> Mount:
        """Build the document's page and make it reachable, once, at a fresh URL
        (``app``: with the MiniApp SDK; ``lang``: the person's language on ``<html
        lang>``; see ``document.compose``).

        Raises ``SurfaceRejected`` (``surface_too_large``, ``surface_invalid``) for a
        document the origin will not serve."""
        if self._port is None:
            raise RuntimeError("bind_port before mounting: the URL needs the port")
        mount_id = secrets.token_hex(12)
        try:
            page = compose(document, instance_id=instance_id, mount_id=mount_id, app=app, lang=lang)
        except SurfaceRejected as rejected:
            log.warning(
                "surface refused",
                extra={
                    "code": str(rejected.code),
                    "instance_id": instance_id,
                    "app_id": document.app_id,
                    "app_version": document.app_version,
                    "surface_id": document.surface_id,
                },
            )
            raise
        mount = self._add(mount_id, instance_id, page)
        log.info(
            "surface mounted",
            extra={
                "mount_id": mount_id,
                "instance_id": instance_id,
                "app_id": document.app_id,
                "app_version": document.app_version,
                "surface_id": document.surface_id,
                "page_bytes": len(page),
            },
        )
        return mount

    def mount_mcp_view(
        self,
        instance_id: str,
        view_html: str,
        ui_meta: Mapping[str, Any] | None,
        *,
        name: str,
        lang: str | None = None,
        theme: Literal["light", "dark"] = "light",
        tool: Mapping[str, Any] | None = None,
        call_id: str | None = None,
    ) -> Mount:
        """Mount an MCP App view (a server's ``ui://`` HTML, read and pinned by the
        Runtime) inside the MCP bridge's document (``mcp_document.mcp_view_document``,
        whose headers are this origin's own). Raises ``SurfaceRejected`` like ``mount``."""
        if self._port is None:
            raise RuntimeError("bind_port before mounting: the URL needs the port")
        mount_id = secrets.token_hex(12)
        try:
            page, _ = mcp_view_document(
                view_html,
                ui_meta,
                instance_id=instance_id,
                mount_id=mount_id,
                shell_origins=self._shell_origins,
                name=name,
                lang=lang,
                theme=theme,
                tool=tool,
                call_id=call_id,
            )
        except SurfaceRejected as rejected:
            log.warning(
                "mcp view refused", extra={"code": str(rejected.code), "instance_id": instance_id}
            )
            raise
        mount = self._add(mount_id, instance_id, page)
        log.info(
            "mcp view mounted",
            extra={"mount_id": mount_id, "instance_id": instance_id, "page_bytes": len(page)},
        )
        return mount

    def _add(self, mount_id: str, instance_id: str, page: bytes) -> Mount:
        host_name = f"{_LABEL_PREFIX}{secrets.token_hex(16)}{_HOST_SUFFIX}"
        mount = Mount(
            mount_id=mount_id,
            instance_id=instance_id,
            host_name=host_name,
            url=f"http://{host_name}:{self._port}/",
        )
        entry = _Entry(mount, page)
        self._by_host[f"{host_name}:{self._port}"] = entry
        self._by_id[mount_id] = entry
        return mount

    def unmount(self, mount_id: str) -> bool:
        """Forget a mount: its URL answers 404 from now on. False if it was unknown."""
        entry = self._by_id.pop(mount_id, None)
        if entry is None:
            return False
        del self._by_host[f"{entry.mount.host_name}:{self._port}"]
        log.info("surface unmounted", extra={"mount_id": mount_id})
        return True

    def mounts(self) -> list[Mount]:
        return [entry.mount for entry in self._by_id.values()]

    # --- requests -----------------------------------------------------------------------

    def respond(self, method: str, host: str | None, path: str, query: bytes) -> SurfaceReply:
        """The answer to one request. ``GET`` of a mount's ``/`` serves its page and
        spends it; ``HEAD`` looks without spending."""
        entry = self._by_host.get(host) if host is not None else None
        if entry is None or path != "/" or query:
            return SurfaceReply(404)
        if method not in ("GET", "HEAD"):
            return SurfaceReply(405, allow=_ALLOWED_METHODS)
        mount_id = entry.mount.mount_id
        page = entry.page
        if page is None:
            log.warning("surface document requested again", extra={"mount_id": mount_id})
            return SurfaceReply(410)
        if method == "HEAD":
            return SurfaceReply(200, page)  # the ASGI layer sends no body for HEAD
        entry.page = None
        log.info("surface served", extra={"mount_id": mount_id, "page_bytes": len(page)})
        return SurfaceReply(200, page)

    def asgi(self) -> _SurfaceApp:
        return _SurfaceApp(self)

    def response_headers(self, reply: SurfaceReply, length: int) -> list[tuple[bytes, bytes]]:
        headers = [*self._headers, (b"content-length", str(length).encode())]
        if reply.allow is not None:
            headers.append((b"allow", reply.allow.encode()))
        return headers


class _SurfaceApp:
    """The ASGI face of a ``SurfaceOrigin``: HTTP only (WebSockets are refused) and a
    lifespan that has nothing to do."""

    def __init__(self, origin: SurfaceOrigin) -> None:
        self.origin = origin

    async def __call__(self, scope: _ASGIMessage, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        elif kind == "http":
            await self._http(scope, send)

    async def _http(self, scope: _ASGIMessage, send: Any) -> None:
        method = scope["method"]
        host = _header(scope, b"host")
        reply = self.origin.respond(method, host, scope["path"], scope.get("query_string", b""))
        body = b"" if method == "HEAD" else reply.body
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": self.origin.response_headers(reply, len(reply.body)),
            }
        )
        await send({"type": "http.response.body", "body": body})


def _header(scope: _ASGIMessage, name: bytes) -> str | None:
    values = [value for key, value in scope["headers"] if key == name]
    if len(values) != 1:  # none, or an ambiguous repeat: no mount answers it
        return None
    try:
        return str(values[0].decode("ascii"))
    except UnicodeDecodeError:
        return None


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
