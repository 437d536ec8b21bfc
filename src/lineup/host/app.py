"""The Web Reference Host: login, the shell, the host channel. Served by the Runtime.

Everything here is on 127.0.0.1. The browser gets pages, static ES modules and one
WebSocket; it never gets the AppServer token. Every request carries a strict CSP.
The host channel refuses a foreign ``Origin`` (cross-site pages), a foreign ``Host``
(DNS rebinding) and a missing or invalid session cookie.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Iterable, MutableMapping
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from lineup.client import AuthenticationFailed, ClientError
from lineup.protocol import ErrorCode
from lineup.protocol.fields import APP_SCOPE_PATTERN
from lineup.runtime import (
    DEFAULT_SCOPE,
    ConnectionChanged,
    InteractionRefused,
    Runtime,
    RuntimeEvent,
    TimelineChanged,
    ToolCallsChanged,
)
from lineup.runtime.apps.focus import EndAppSession, InstanceOpened
from lineup.runtime.events import AppsChanged, LocaleChosen
from lineup.runtime.host_sessions import SESSION_TTL
from lineup.runtime.mcp.call_store import McpCallsChanged
from lineup.runtime.mcp.elicitor import ElicitationRefused
from lineup.runtime.mcp.gateway import McpServersChanged

from . import channel, mcp
from .app_centre import AppCentreHost, AppCentreTab
from .app_surfaces import AppSurfaces
from .capabilities import CapabilityTab, HostCapabilities
from .html import index_html, login_html, page_locale
from .jobs import HostJobs
from .native import NativeHost
from .pages import PAGE, page_view
from .surface import SurfaceOrigin
from .views import apps_view, conversation_view, group_of, group_view, in_group, item_view

log = logging.getLogger("lineup.host")

_frames = msgspec.json.Decoder(channel.ShellFrame)
_SCOPE = re.compile(APP_SCOPE_PATTERN)
_encode = msgspec.json.encode
COOKIE = "lineup_session"
"""The browser session's cookie (HttpOnly, SameSite=Strict); its secret's hash is kept
by the Runtime (``Runtime.host_sessions``)."""


def csp(frame_origins: Iterable[str] = ()) -> str:
    frames = " ".join(frame_origins) or "'none'"
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            f"frame-src {frames}",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types lineup-html",
        ]
    )


class SecurityHeaders:
    """Adds the CSP and friends to every HTTP response."""

    def __init__(self, app: ASGIApp, policy: str) -> None:
        self.app = app
        self.headers = [
            (b"content-security-policy", policy.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),  # no-referrer would turn Origin into "null"
            (b"cross-origin-opener-policy", b"same-origin"),
            (b"cross-origin-resource-policy", b"same-origin"),
            (b"x-frame-options", b"DENY"),
            (b"cache-control", b"no-store"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.headers
            await send(message)

        await self.app(scope, receive, with_headers)


class WebHost:
    def __init__(
        self,
        runtime: Runtime,
        *,
        server_url: str,
        allowed_hosts: Iterable[str],
        surface_port: int | None = None,
        native: NativeHost | None = None,
    ) -> None:
        """``native``: a desktop host's providers (``lineup.host.native``)."""
        self.runtime = runtime
        self.server_url = server_url
        self.allowed_hosts = frozenset(allowed_hosts)
        self.sessions = runtime.host_sessions
        """Browser sessions and one-time login links (the Runtime keeps them)."""
        self.jobs = HostJobs()
        """Background work of this host, in one task group while it serves."""
        self.surfaces = SurfaceOrigin(sorted(self.origins()), port=surface_port)
        """The surface origin: mounted surface documents, each served once."""
        self.app_surfaces = AppSurfaces(runtime, self.surfaces, self.jobs)
        """App instances' surfaces: mounts, SDK requests, taking them down on close."""
        self.capabilities = HostCapabilities(runtime, self.jobs, native)
        """Capability calls: the consent dialog's frames, providers, uploads, downloads."""
        self.app_centre = AppCentreHost(runtime)
        """The App centre: installed and offered apps, install/update/enable/remove."""

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """While the host serves: its background jobs run (cancelled and awaited on
        exit, before the Runtime closes), and the capabilities it provides are
        attached before the first request."""
        async with self.jobs.running():
            await self.capabilities.start()
            yield

    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.allowed_hosts)

    # --- pages ------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        if not await self.sessions.valid(request.cookies.get(COOKIE)):
            return RedirectResponse("/login", status_code=303)
        choice = await self.runtime.locale_choice()
        locale = self._locale(request, choice)
        return self._page(index_html(locale, choice or "auto"), locale)

    async def login_page(self, request: Request) -> Response:
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        locale = self._locale(request, await self.runtime.locale_choice())
        return self._page(login_html(locale, request.query_params.get("error")), locale)

    async def login(self, request: Request) -> Response:
        if not self._host_ok(request.headers.get("host")) or not self._origin_ok(
            request.headers.get("origin")
        ):
            return Response(ErrorCode.FORBIDDEN, status_code=403)
        form = await _small_form(request)
        if form is None:
            return Response("bad form", status_code=400)
        username = form.get("username", "")[:64]
        password = form.get("password", "")[:1024]
        locale = self._locale(request, await self.runtime.locale_choice())
        try:
            await self.runtime.login(self.server_url, username, password)
        except AuthenticationFailed:
            # The form again, right here: the username stays typed in (never in a URL,
            # never the password) and the password field takes the focus.
            return self._page(login_html(locale, "credentials", username), locale)
        except (ClientError, OSError):
            return self._page(login_html(locale, "unavailable", username), locale, status=503)
        return await self._start_session()

    async def one_time(self, request: Request) -> Response:
        """``/login/link?code=...``: the link ``lineup demo`` prints; works once."""
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        secret = await self.sessions.redeem_link(request.query_params.get("code"))
        if secret is None:
            return RedirectResponse("/login?error=link", status_code=303)
        return self._with_cookie(RedirectResponse("/", status_code=303), secret)

    async def logout(self, request: Request) -> Response:
        if not self._origin_ok(request.headers.get("origin")):
            return Response(ErrorCode.FORBIDDEN, status_code=403)
        await self.sessions.end(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def _start_session(self) -> Response:
        secret = await self.sessions.create("session")
        return self._with_cookie(RedirectResponse("/", status_code=303), secret)

    def _with_cookie(self, response: Response, secret: str) -> Response:
        response.set_cookie(
            COOKIE,
            secret,
            max_age=int(SESSION_TTL.total_seconds()),
            path="/",
            httponly=True,
            samesite="strict",
        )
        return response

    @staticmethod
    def _locale(request: Request, choice: str | None) -> str:
        return page_locale(choice, request.headers.get("accept-language"))

    @staticmethod
    def _page(page: str, locale: str, *, status: int = 200) -> HTMLResponse:
        """A page in ``locale``; it varies with the browser's languages."""
        headers = {"Content-Language": locale, "Vary": "Accept-Language"}
        return HTMLResponse(page, status_code=status, headers=headers)

    def _host_ok(self, host: str | None) -> bool:
        return host is not None and host in self.allowed_hosts

    def _origin_ok(self, origin: str | None) -> bool:
        return origin is not None and origin in self.origins()

    # --- the host channel ------------------------------------------------------------------

    async def host_channel(self, websocket: WebSocket) -> None:
        headers = websocket.headers
        if not (
            self._host_ok(headers.get("host"))
            and self._origin_ok(headers.get("origin"))
            and await self.sessions.valid(websocket.cookies.get(COOKIE))
        ):
            log.info("host channel refused", extra={"code": "forbidden"})
            await websocket.close(code=4403)
            return
        await websocket.accept()
        outbox: asyncio.Queue[bytes] = asyncio.Queue(maxsize=10_000)
        groups = _GroupChanges()
        capabilities = self.capabilities.tab(outbox)
        centre = self.app_centre.tab(outbox)

        def on_event(event: RuntimeEvent) -> None:
            if isinstance(event, TimelineChanged) and in_group(event.item):
                # Shown inside its sub-session's group: the group frame carries it.
                groups.session(group_of(event.item))
                return
            if isinstance(event, TimelineChanged):
                fresh = event.item.sender_kind == "agent" and event.item.state == "received"
                view = item_view(event.item, unread=fresh)
                if view is None:
                    return
                frame: Any = channel.ItemChanged(view)
            elif isinstance(event, ConnectionChanged):
                frame = channel.ConnectionState(str(event.state))
            elif isinstance(event, AppsChanged):
                apps = apps_view(event.instances)
                frame = channel.AppsChangedFrame(
                    records=apps.records, stack=apps.stack, focus=apps.focus
                )
                # A sub-session opened or closed with its instance: its group follows.
                groups.instances(i for e in event.effects if (i := getattr(e, "instance_id", None)))
                if any(isinstance(e, (InstanceOpened, EndAppSession)) for e in event.effects):
                    centre.mark()  # how many instances of an app run changed
            elif isinstance(event, LocaleChosen):
                frame = channel.LocaleFrame(choice=event.choice or "auto")
            elif isinstance(event, ToolCallsChanged):
                frame = channel.AppPush(instance_ids=sorted(event.instance_ids), topic=event.topic)
            elif centre.on_event(event):
                return
            elif isinstance(event, McpServersChanged):
                centre.mark()
                notice = mcp.notice_frame(self.runtime, event)
                if notice is not None:
                    with contextlib.suppress(asyncio.QueueFull):
                        outbox.put_nowait(notice)
                return
            elif isinstance(event, McpCallsChanged):
                with contextlib.suppress(asyncio.QueueFull):
                    outbox.put_nowait(mcp.calls_frame(self.runtime, event))
                return
            elif (encoded := capabilities.on_event(event)) is not None:
                with contextlib.suppress(asyncio.QueueFull):
                    outbox.put_nowait(encoded)
                return
            else:
                return
            # A tab this far behind is hopeless; it resyncs on reload.
            with contextlib.suppress(asyncio.QueueFull):
                outbox.put_nowait(_encode(frame))

        unsubscribe = self.runtime.subscribe(on_event)
        try:
            async with asyncio.TaskGroup() as tg:
                writer = tg.create_task(_pump(websocket, outbox))
                regrouper = tg.create_task(self._send_groups(groups, outbox))
                recentre = tg.create_task(centre.run())
                await self._read_frames(websocket, outbox, capabilities, centre)
                writer.cancel()
                regrouper.cancel()
                recentre.cancel()
        except* (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            unsubscribe()

    async def _send_groups(self, changes: _GroupChanges, outbox: asyncio.Queue[bytes]) -> None:
        """Each time sub-sessions changed: read them back and send their groups. A
        change during the read marks them again, so the last frame is never stale."""
        runtime = self.runtime
        while True:
            sessions, instances = await changes.take()
            found = await runtime.app_session_groups_by_id(sessions)
            found += await runtime.app_session_groups_of_instances(instances)
            unique = {g.id: g for g in found}
            if unique:
                frame = channel.AppSessionsChanged(
                    sessions=[group_view(g) for g in unique.values()]
                )
                with contextlib.suppress(asyncio.QueueFull):
                    outbox.put_nowait(_encode(frame))

    async def _read_frames(
        self,
        websocket: WebSocket,
        outbox: asyncio.Queue[bytes],
        capabilities: CapabilityTab,
        centre: AppCentreTab,
    ) -> None:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text") or ""
            if len(data) > channel.MAX_FRAME_BYTES:
                await outbox.put(
                    _encode(channel.ChannelError(ErrorCode.TOO_LARGE, "frame too large"))
                )
                continue
            try:
                frame = _frames.decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                message_text = str(exc).splitlines()[0][:200]
                await outbox.put(
                    _encode(channel.ChannelError(ErrorCode.INVALID_REQUEST, message_text))
                )
                continue
            except RecursionError:  # found by fuzzing: it used to close the tab's channel
                error = channel.ChannelError(ErrorCode.INVALID_REQUEST, "JSON nests too deeply")
                await outbox.put(_encode(error))
                continue
            if isinstance(frame, channel.CapabilityFrame):
                for answer in await capabilities.answer(frame):
                    await outbox.put(answer)
                continue
            if isinstance(frame, channel.AppsRequest):
                await outbox.put(await centre.opened())
                continue
            if isinstance(frame, channel.ChooseLocale):
                await self.runtime.choose_locale(frame.locale)  # every tab hears it
                continue
            if isinstance(frame, channel.McpAction):
                self.jobs.start(self._mcp_act(frame, outbox), "mcp_action")
                continue
            if isinstance(frame, channel.AppsAction):
                # A download or a catalog fetch may take seconds: the tab's other
                # frames go on meanwhile, and the receipt follows when it is done. The
                # host owns it, not the tab: an install goes on when its tab closes.
                self.jobs.start(self._act(frame, outbox), "apps_action")
                continue
            await outbox.put(await self._answer(frame))

    async def _mcp_act(self, frame: channel.McpAction, outbox: asyncio.Queue[bytes]) -> None:
        receipt = _encode(await mcp.mcp_action(self.runtime, frame))
        with contextlib.suppress(asyncio.QueueFull):
            outbox.put_nowait(receipt)
        self.app_centre.changed()

    async def _act(self, frame: channel.AppsAction, outbox: asyncio.Queue[bytes]) -> None:
        receipt = _encode(await self.app_centre.act(frame))
        with contextlib.suppress(asyncio.QueueFull):
            outbox.put_nowait(receipt)

    async def _answer(self, frame: channel.ShellFrame) -> bytes:
        runtime = self.runtime
        if isinstance(frame, channel.Hello):
            if frame.locale is not None:
                await runtime.locale_seen(frame.locale)
            session = runtime.session
            conversations = await runtime.conversations()
            items: list[channel.ItemView] = []
            unread = await runtime.unread(DEFAULT_SCOPE)
            groups: dict[str, channel.AppSessionView] = {}
            complete: list[str] = []
            oldest: dict[str, channel.RowBound] = {}
            for conversation in conversations:
                page = await runtime.history(conversation.id, limit=PAGE)
                assert page is not None  # no key asked for
                view = await page_view(runtime, page, unread)
                items.extend(view.items)
                if not page.older:
                    complete.append(conversation.id)
                if view.first is not None:
                    oldest[conversation.id] = view.first
                # The newest groups (an open app's overlay needs its group wherever
                # it opened); the shell places only those from ``oldest`` on.
                for found in await runtime.app_session_groups(conversation.id):
                    groups[found.id] = group_view(found)
                groups.update((g.app_session_id, g) for g in view.groups)
            return _encode(
                channel.Snapshot(
                    user_id=session.user_id if session else "",
                    username=session.username if session else "",
                    connection=str(runtime.state),
                    conversations=[
                        conversation_view(c.id, c.agent_id, c.title) for c in conversations
                    ],
                    items=items,
                    now=_iso(runtime.clock()),
                    drafts=runtime.drafts(),
                    complete=complete,
                    oldest=oldest,
                    apps=apps_view(runtime.apps.instances()),
                    app_sessions=sorted(groups.values(), key=_placed),
                    capability_calls=[
                        *await self.capabilities.open_calls(),
                        *await mcp.open_calls(runtime),
                    ],
                )
            )
        if isinstance(frame, channel.AppRequest):
            return _encode(await self._app_request(frame))
        if isinstance(frame, channel.MountRequest):
            return _encode(await self.app_surfaces.mount(frame))
        if isinstance(frame, channel.UnmountRequest):
            self.app_surfaces.unmount(frame.mount_id)
            return b""
        if isinstance(frame, channel.AppCall):
            return _encode(await self.app_surfaces.call(frame))
        if isinstance(frame, channel.MountUi):
            return _encode(await self.app_surfaces.mount_ui(frame))
        if isinstance(frame, channel.UiEventFrame):
            return _encode(await self.app_surfaces.ui_event(frame))
        if isinstance(frame, channel.AppEventFrame):
            return _encode(await self.app_surfaces.app_event(frame))
        if isinstance(frame, channel.SurfaceStopped):
            await self.app_surfaces.reloading(frame.mount_id)
            return b""
        if isinstance(frame, channel.SendMessage):
            known = {c.id for c in await runtime.conversations()}
            if frame.conversation_id not in known:
                return _encode(channel.ChannelError(ErrorCode.NOT_FOUND, "no such conversation"))
            await runtime.send_message(frame.conversation_id, frame.text)
            return b""
        if isinstance(frame, channel.Seen):
            await runtime.mark_seen(
                frame.conversation_id, frame.envelope_ids, app_scope=DEFAULT_SCOPE
            )
            return b""
        if isinstance(frame, channel.Answer):
            try:
                await runtime.answer(frame.interaction_id, frame.conversation_id, frame.answer)
            except InteractionRefused as refused:
                return _encode(
                    # The code only: the shell says it in the person's language.
                    channel.AnswerReceipt(interaction_id=frame.interaction_id, outcome=refused.code)
                )
            return _encode(
                channel.AnswerReceipt(interaction_id=frame.interaction_id, outcome="accepted")
            )
        if isinstance(frame, channel.Elicit):
            return _encode(await self._elicit(frame))
        if isinstance(frame, channel.Draft):
            if not runtime.set_draft(frame.interaction_id, frame.text):
                return _encode(channel.ChannelError(ErrorCode.TOO_LARGE, "too many drafts"))
            return b""
        if isinstance(frame, channel.Retry):
            if await runtime.retry(frame.conversation_id, frame.envelope_id) is None:
                return _encode(channel.ChannelError(ErrorCode.NOT_FAILED, "nothing to retry"))
            return b""
        assert isinstance(frame, channel.History)  # capability, app centre frames: their tabs
        return _encode(await self._history(frame))

    async def _elicit(self, frame: channel.Elicit) -> channel.ElicitReceipt:
        """The person answered an MCP server's form: the Runtime decides; the tab hears
        the code only (the shell says it in the person's language)."""
        try:
            await self.runtime.answer_elicitation(
                frame.elicitation_id, frame.conversation_id, frame.action, frame.content
            )
        except ElicitationRefused as refused:
            return channel.ElicitReceipt(elicitation_id=frame.elicitation_id, outcome=refused.code)
        return channel.ElicitReceipt(elicitation_id=frame.elicitation_id, outcome="accepted")

    async def _history(self, frame: channel.History) -> channel.HistoryPage | channel.ChannelError:
        if frame.before is not None and frame.after is not None:
            return channel.ChannelError(ErrorCode.INVALID_REQUEST, "history: before or after")
        page = await self.runtime.history(
            frame.conversation_id, before=frame.before, after=frame.after, limit=PAGE
        )
        if page is None:
            return channel.ChannelError(ErrorCode.NOT_FOUND, "no such row in this conversation")
        # A page of older rows offers nothing unread: what is unread is the newest.
        unread = (
            frozenset() if frame.before is not None else await self.runtime.unread(DEFAULT_SCOPE)
        )
        view = await page_view(self.runtime, page, unread)
        return channel.HistoryPage(
            conversation_id=frame.conversation_id,
            direction="older"
            if frame.before is not None
            else ("newer" if frame.after is not None else "newest"),
            items=view.items,
            app_sessions=view.groups,
            first=view.first,
            last=view.last,
            older=page.older,
            newer=page.newer,
        )

    async def _app_request(self, frame: channel.AppRequest) -> channel.AppReceipt:
        """Ask the Runtime's kernel; it decides. Every tab hears the change as an
        ``apps`` frame (queued before this receipt)."""
        apps = self.runtime.apps
        if frame.action == "foreground":
            receipt = await apps.request_foreground(frame.instance_id, actor="user")
        elif frame.action == "background":
            receipt = await apps.request_background(frame.instance_id, actor="user")
        elif frame.action == "continue":
            receipt = await apps.continue_work(frame.instance_id, actor="user")
        else:
            # Accepted, the close goes on without us: the Runtime's CloseSurfaces
            # reaches ``app_surfaces``, which takes the surfaces down and reports the
            # stop finished (``closed``).
            receipt = await apps.request_close(frame.instance_id, actor="user")
        return channel.AppReceipt(
            instance_id=frame.instance_id,
            action=frame.action,
            outcome="accepted"
            if receipt.accepted
            else (receipt.code or ErrorCode.LIFECYCLE_DENIED),
        )

    # --- capability files -----------------------------------------------------------------

    async def capability_upload(self, request: Request) -> Response:
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        if not self._origin_ok(request.headers.get("origin")) or not await self.sessions.valid(
            request.cookies.get(COOKIE)
        ):
            return Response(ErrorCode.FORBIDDEN, status_code=403)
        return await self.capabilities.upload(request)

    async def app_icon(self, request: Request) -> Response:
        """``/app-icons/{app_scope}``: the icon of the app with that scope, or the
        shell's generic one (so every instance the dock lists has one). An image, never
        a page: an SVG opened on its own runs sandboxed, with nothing allowed."""
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        if not await self.sessions.valid(request.cookies.get(COOKIE)):
            return Response(ErrorCode.FORBIDDEN, status_code=403)
        scope = request.path_params["app_scope"]
        found = await self.runtime.registry.icon(scope) if _SCOPE.match(scope) else None
        if found is None:
            body = resources.files(__package__).joinpath("static/app-icon.svg").read_bytes()
            found = (body, "image/svg+xml")
        return Response(
            found[0],
            media_type=found[1],
            headers={"content-security-policy": "sandbox; default-src 'none'"},
        )

    async def artifact(self, request: Request) -> Response:
        if not self._host_ok(request.headers.get("host")):
            return Response("unknown host", status_code=421)
        if not await self.sessions.valid(request.cookies.get(COOKIE)):
            return Response(ErrorCode.FORBIDDEN, status_code=403)
        return await self.capabilities.download(request.path_params["artifact_id"])

    # --- the ASGI app -------------------------------------------------------------------------

    def asgi(self, *, frame_origins: Iterable[str] = ()) -> ASGIApp:
        static = StaticFiles(packages=[(__package__, "static")])
        app = Starlette(
            routes=[
                Route("/", self.index, methods=["GET"]),
                Route("/login", self.login_page, methods=["GET"]),
                Route("/login", self.login, methods=["POST"]),
                Route("/login/link", self.one_time, methods=["GET"]),
                Route("/logout", self.logout, methods=["POST"]),
                WebSocketRoute("/host", self.host_channel),
                Route("/capabilities/upload", self.capability_upload, methods=["POST"]),
                Route("/artifacts/{artifact_id}", self.artifact, methods=["GET"]),
                Route("/app-icons/{app_scope}", self.app_icon, methods=["GET"]),
                Mount("/static", app=static, name="static"),
            ]
        )
        return SecurityHeaders(app, csp(frame_origins))


async def _small_form(request: Request, limit: int = 8192) -> dict[str, str] | None:
    """An url-encoded form of at most ``limit`` bytes (the login form), or ``None``."""
    if request.headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        return None
    return dict(pairs)


class _GroupChanges:
    """Sub-sessions (by id, or by their instance) whose groups a tab must be sent."""

    def __init__(self) -> None:
        self._sessions: set[str] = set()
        self._instances: set[str] = set()
        self._marked = asyncio.Event()

    def session(self, app_session_id: str | None) -> None:
        if app_session_id is not None:
            self._sessions.add(app_session_id)
            self._marked.set()

    def instances(self, instance_ids: Iterable[str]) -> None:
        before = len(self._instances)
        self._instances.update(instance_ids)
        if len(self._instances) != before:
            self._marked.set()

    async def take(self) -> tuple[set[str], set[str]]:
        await self._marked.wait()
        self._marked.clear()
        sessions, self._sessions = self._sessions, set()
        instances, self._instances = self._instances, set()
        return sessions, instances


def _placed(group: channel.AppSessionView) -> tuple[bool, int, int]:
    """Groups in the conversation's order (by the row where each opened)."""
    return (group.seq is None, group.seq or 0, group.key)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


async def _pump(websocket: WebSocket, outbox: asyncio.Queue[bytes]) -> None:
    while True:
        data = await outbox.get()
        if data:
            await websocket.send_text(data.decode("utf-8"))
