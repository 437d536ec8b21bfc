"""Host capabilities in the Web Host: the consent dialog's frames, the shell providers'
claims and outcomes, the picked-file upload and the artifact download.

The Runtime's gateway (``runtime.capabilities``) decides everything; this module only
carries the person's decisions to it and its calls to the tabs. Every tab hears every
changed call (``capabilities``), so a dialog opens in every tab and closes everywhere
once the call is decided, expires or ends. A decision that approves a capability that
runs in the shell is claimed by the deciding tab in the same step, so the provider runs
inside the click's user activation (``window.open``, the file chooser). Calls approved
without a dialog (``display_only``, remembered consent) are run by the first tab that
claims them; the gateway's claim is first-wins. Only the tab that claimed a call may
report its outcome, and only it gets the one-time token the file upload needs. In a
desktop host, a claimed call that its native providers handle runs there instead
(``lineup.host.native``), with the call's stored arguments, and is finished here.

Logs name ids, capability names, codes and sizes: never a reason, an argument, a URL,
a text, a file name or a file's bytes.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import secrets
import unicodedata
from typing import Any
from urllib.parse import quote, unquote

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lineup.protocol import ErrorCode
from lineup.protocol.fields import ID_PATTERN
from lineup.runtime import Runtime
from lineup.runtime.apps.focus import Instances
from lineup.runtime.capabilities.calls import OPEN, State
from lineup.runtime.capabilities.catalog import CATALOG, MAX_ARTIFACT_BYTES
from lineup.runtime.capabilities.gateway import (
    CallKey,
    CapabilitiesChanged,
    CapabilityCall,
    CapabilityRefused,
    busy_or_final,
)

from . import channel, mcp
from .jobs import HostJobs
from .names import record_label
from .native import NativeHost, NativeOutcome

__all__ = ["PROVIDED", "CapabilityTab", "HostCapabilities", "artifact_headers"]

log = logging.getLogger("lineup.host.capabilities")
_encode = msgspec.json.encode

PROVIDED = tuple(CATALOG)
"""What the Web Host's shell (and the Runtime, for ``artifact.save``) can carry out."""

_ID = re.compile(ID_PATTERN)
_MEDIA = re.compile(r"^[a-z0-9.+-]+/[a-z0-9.+-]+$")
SAFE_INLINE_TYPES = frozenset(
    {"text/plain", "text/csv", "image/png", "image/jpeg", "image/gif", "image/webp"}
)
"""Media types a download keeps; anything else is served as ``application/octet-stream``."""


def call_view(call: CapabilityCall, apps: Instances) -> channel.CapabilityCallView:
    """``apps``: the instances now (an app's call is labelled by its instance's name)."""
    key = call.key
    capability = CATALOG.get(call.capability)
    requester = label = call.requester_id
    if key.requester_kind == "app":
        requester = requester.rsplit(".", 1)[0]  # the app's scope, not one instance
        record = apps.records.get(call.requester_id)
        label = requester if record is None else record_label(record)
    return channel.CapabilityCallView(
        conversation_id=key.conversation_id,
        call_id=key.call_id,
        requester_kind=key.requester_kind,
        requester=requester,
        requester_label=label,
        capability=call.capability,
        risk=call.risk,
        runs_in=capability.runs_in if capability is not None else "shell",
        reason=call.reason,
        arguments=msgspec.json.decode(call.arguments),
        phrase=call.phrase if call.risk == "restricted" else None,
        state=str(call.state),
        decision=call.decision,
        code=call.code,
        result=None if call.result is None else msgspec.json.decode(call.result),
        expires_at=call.expires_at,
    )


def run_frame(call: CapabilityCall, apps: Instances, upload_token: str = "") -> bytes:
    """``capability_run``: the claiming tab runs its provider for ``call``."""
    view = msgspec.structs.asdict(call_view(call, apps))
    return _encode(channel.CapabilityRun(**view, upload_token=upload_token))


class HostCapabilities:
    """The Web Host's side of the capability gateway (one per ``WebHost``)."""

    def __init__(self, runtime: Runtime, jobs: HostJobs, native: NativeHost | None = None) -> None:
        self.runtime = runtime
        self.jobs = jobs
        """Where native runs (and a desktop's own following job) live."""
        self.native = native
        """A desktop host's providers (``None`` in a browser: the tabs run everything)."""
        self._upload_tokens: dict[CallKey, str] = {}
        """``device.pick_file`` calls claimed here -> the claiming tab's upload token."""
        runtime.subscribe(self._on_event)

    async def start(self) -> None:
        """Attach: the Runtime declares these capabilities from now on."""
        await self.runtime.capabilities.provide(PROVIDED)
        if self.native is not None:
            following = self.native.attach(self.runtime)
            if following is not None:
                self.jobs.start(following, "native_host")

    def tab(self, outbox: asyncio.Queue[bytes]) -> CapabilityTab:
        return CapabilityTab(self, outbox)

    # --- native providers (a desktop host) ----------------------------------------------------

    def runs_natively(self, call: CapabilityCall) -> bool:
        return self.native is not None and self.native.handles(call.capability)

    def run_native(self, call: CapabilityCall, tab: CapabilityTab) -> None:
        """Run a call the tab just claimed with the native provider, in the background;
        a provider that declines hands it to the tab after all. The host owns the run,
        not the tab: a native dialog stays up when the tab that claimed it closes."""
        self.jobs.start(self._run_native(call, tab), "native_run")

    async def _run_native(self, call: CapabilityCall, tab: CapabilityTab) -> None:
        assert self.native is not None
        key, name = call.key, call.capability
        try:
            outcome = await self.native.run(name, msgspec.json.decode(call.arguments))
        except Exception as exc:  # a provider's bug ends the call, never the host
            # The type only: an OS error's message can name the person's files.
            error = type(exc).__name__
            log.error("native provider failed", extra={"capability": name, "error": error})
            outcome = NativeOutcome(code=ErrorCode.PROVIDER_FAILED)
        if outcome is None:
            tab.claimed.add(key)
            tab.outbox.put_nowait(run_frame(call, self.runtime.apps.instances()))
            return
        gateway = self.runtime.capabilities
        try:
            if outcome.file is not None:
                file = outcome.file
                media_type = file.media_type if _MEDIA.match(file.media_type) else ""
                done = await gateway.finish_with_file(
                    key,
                    safe_name(quote(file.name)),
                    media_type or "application/octet-stream",
                    file.body,
                )
            elif outcome.result is not None:
                done = await gateway.finish(key, result=outcome.result)
            else:
                done = await gateway.finish(key, code=outcome.code or ErrorCode.PROVIDER_FAILED)
        except CapabilityRefused as refused:  # expired or cancelled meanwhile
            log.info("native outcome refused", extra={"call_id": key.call_id, "code": refused.code})
            return
        log.info(
            "capability finished natively",
            extra={"call_id": key.call_id, "capability": name, "code": done.code},
        )

    def _on_event(self, event: Any) -> None:
        if isinstance(event, CapabilitiesChanged):
            for call in event.calls:
                if call.state not in OPEN:
                    self._upload_tokens.pop(call.key, None)

    # --- the snapshot ---------------------------------------------------------------------

    async def open_calls(self) -> list[channel.CapabilityCallView]:
        calls = await self.runtime.capabilities.open_calls()
        apps = self.runtime.apps.instances()
        return [call_view(c, apps) for c in calls]

    async def grants(self) -> channel.GrantsFrame:
        gateway = self.runtime.capabilities
        on = await self.runtime.declared_capabilities()
        names = await self._app_names()
        return channel.GrantsFrame(
            grants=[
                channel.GrantView(requester=r, label=_grant_label(r, names), capability=c)
                for r, c in sorted(gateway.remembered())
            ],
            capabilities=[
                channel.HostCapabilityView(name=n, risk=CATALOG[n].risk, revoked=n not in on)
                for n in PROVIDED
            ],
        )

    async def _app_names(self) -> dict[str, str]:
        """Display names by app scope, of every registered app."""
        registry = self.runtime.registry
        names: dict[str, str] = {}
        for entry in await registry.apps():
            manifest = await registry.manifest(entry.app_id)
            if manifest is not None:
                names[entry.app_scope] = manifest.name
        return names

    # --- the upload of a picked file --------------------------------------------------------

    def issue_upload_token(self, key: CallKey) -> str:
        token = secrets.token_urlsafe(24)
        self._upload_tokens[key] = token
        return token

    async def upload(self, request: Request) -> Response:
        """``POST /capabilities/upload``: the file the person picked for a claimed
        ``device.pick_file`` call (the caller checked Host, Origin and the session)."""
        query = request.query_params
        kind = query.get("requester_kind", "agent")
        conversation_id, call_id = query.get("conversation_id", ""), query.get("call_id", "")
        if kind not in ("agent", "app") or not (_ID.match(conversation_id) and _ID.match(call_id)):
            return _error(400, ErrorCode.INVALID_REQUEST)
        key = CallKey(conversation_id, call_id, kind)
        expected = self._upload_tokens.get(key)
        if expected is None:
            call = await self.runtime.capabilities.get(key)
            if call is None:
                return _error(404, ErrorCode.CAPABILITY_CALL_NOT_FOUND)
            return _error(409, busy_or_final(call))
        token = request.headers.get("x-upload-token", "")
        if not hmac.compare_digest(token.encode(), expected.encode()):
            return _error(403, ErrorCode.FORBIDDEN)
        declared_size = request.headers.get("content-length")
        body = bytearray()
        too_large = declared_size is not None and (
            not declared_size.isdigit() or int(declared_size) > MAX_ARTIFACT_BYTES
        )
        if not too_large:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_ARTIFACT_BYTES:
                    too_large = True
                    break
        gateway = self.runtime.capabilities
        try:
            if too_large:
                await gateway.finish(key, code=ErrorCode.ARTIFACT_TOO_LARGE)
                log.info("picked file refused", extra={"call_id": call_id, "code": "too_large"})
                return _error(413, ErrorCode.ARTIFACT_TOO_LARGE)
            name = safe_name(request.headers.get("x-file-name", ""))
            media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if not _MEDIA.match(media_type) or len(media_type) > 127:
                media_type = "application/octet-stream"
            call = await gateway.finish_with_file(key, name, media_type, bytes(body))
        except CapabilityRefused as refused:
            return _error(409, refused.code)
        finally:
            self._upload_tokens.pop(key, None)
        log.info(
            "picked file stored",
            extra={"call_id": call_id, "status": str(call.state), "bytes": len(body)},
        )
        return JSONResponse({"outcome": "accepted", "state": str(call.state), "code": call.code})

    # --- the download of an artifact ---------------------------------------------------------

    async def download(self, artifact_id: str) -> Response:
        if not _ID.match(artifact_id):
            return Response("not found", status_code=404)
        found = await self.runtime.capabilities.artifact(artifact_id)
        if found is None:
            return Response("not found", status_code=404)
        artifact, body = found
        return Response(body, headers=artifact_headers(artifact.name, artifact.media_type))


class CapabilityTab:
    """One tab's capability frames: its claims and what it may report."""

    def __init__(self, host: HostCapabilities, outbox: asyncio.Queue[bytes]) -> None:
        self.host = host
        self.gateway = host.runtime.capabilities
        self.outbox = outbox
        self.claimed: set[CallKey] = set()

    def on_event(self, event: Any) -> bytes | None:
        if not isinstance(event, CapabilitiesChanged):
            return None
        for call in event.calls:
            if call.state not in OPEN:
                self.claimed.discard(call.key)
        apps = self.host.runtime.apps.instances()
        return _encode(channel.CapabilitiesFrame(calls=[call_view(c, apps) for c in event.calls]))

    async def answer(self, frame: channel.CapabilityFrame) -> list[bytes]:
        if isinstance(frame, channel.GrantsRequest):
            return [_encode(await self.host.grants())]
        if isinstance(frame, channel.Forget):
            if self.gateway.forget(frame.requester, frame.capability):
                log.info("remembered consent revoked", extra={"capability": frame.capability})
            return [_encode(await self.host.grants())]
        if isinstance(frame, channel.CapabilityPolicy):
            if frame.capability not in PROVIDED:
                return [_encode(channel.ChannelError(ErrorCode.NOT_FOUND, "no such capability"))]
            await self.gateway.set_revoked(frame.capability, frame.revoked)
            return [_encode(await self.host.grants())]
        if frame.requester_kind == "mcp":  # an MCP server's tool: only consent applies
            key = CallKey(frame.conversation_id, frame.call_id, "mcp")
            if not isinstance(frame, channel.Consent):
                return [_receipt(key, "claim", ErrorCode.CAPABILITY_CALL_NOT_FOUND)]
            return [_receipt(key, "consent", await mcp.consent(self.host.runtime, frame))]
        key = CallKey(frame.conversation_id, frame.call_id, frame.requester_kind)
        if isinstance(frame, channel.Consent):
            return await self._consent(key, frame)
        if isinstance(frame, channel.Claim):
            return await self._claim(key)
        return [await self._done(key, frame)]

    async def _consent(self, key: CallKey, frame: channel.Consent) -> list[bytes]:
        try:
            call = await self.gateway.decide(
                key,
                frame.allow,
                remember=frame.remember,
                acknowledged=frame.acknowledged,
                confirmation=frame.confirmation,
            )
        except CapabilityRefused as refused:
            log.info("capability decision refused", extra={"code": refused.code})
            return [_receipt(key, "consent", refused.code)]
        frames = [_receipt(key, "consent", "accepted")]
        if frame.allow and call.state is State.APPROVED and _runs_in_shell(call):
            frames.extend(await self._claim(key, quiet=True))
        return frames

    async def _claim(self, key: CallKey, *, quiet: bool = False) -> list[bytes]:
        try:
            call = await self.gateway.claim(key)
        except CapabilityRefused as refused:
            return [] if quiet else [_receipt(key, "claim", refused.code)]
        if self.host.runs_natively(call):
            self.host.run_native(call, self)
            return []
        self.claimed.add(key)
        token = ""
        if call.capability == "device.pick_file":
            token = self.host.issue_upload_token(key)
        log.info(
            "capability claimed", extra={"call_id": key.call_id, "capability": call.capability}
        )
        return [run_frame(call, self.host.runtime.apps.instances(), token)]

    async def _done(self, key: CallKey, frame: channel.CapabilityDone) -> bytes:
        if key not in self.claimed:
            call = await self.gateway.get(key)
            if call is None:
                return _receipt(key, "done", ErrorCode.CAPABILITY_CALL_NOT_FOUND)
            return _receipt(key, "done", busy_or_final(call))
        try:
            if frame.ok and frame.result is not None:
                call = await self.gateway.finish(key, result=frame.result)
            else:
                call = await self.gateway.finish(key, code=frame.code or ErrorCode.PROVIDER_FAILED)
        except CapabilityRefused as refused:
            return _receipt(key, "done", refused.code)
        self.claimed.discard(key)
        log.info(
            "capability finished",
            extra={"call_id": key.call_id, "capability": call.capability, "code": call.code},
        )
        return _receipt(key, "done", "accepted")


def _runs_in_shell(call: CapabilityCall) -> bool:
    capability = CATALOG.get(call.capability)
    return capability is not None and capability.runs_in == "shell"


def _receipt(key: CallKey, action: str, outcome: str) -> bytes:
    return _encode(
        channel.CapabilityReceipt(
            conversation_id=key.conversation_id,
            call_id=key.call_id,
            requester_kind=key.requester_kind,
            action=action,
            outcome=outcome,
        )
    )


def _error(status: int, code: str) -> Response:
    return JSONResponse({"code": code}, status_code=status)


def safe_name(header: str) -> str:
    """The picked file's name from its percent-encoded header: the last path part,
    no control characters, at most 200 characters (``file`` when nothing is left)."""
    try:
        name = unquote(header, errors="strict")
    except UnicodeDecodeError:
        name = ""
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C").strip()
    return name[:200] or "file"


def _grant_label(requester: str, names: dict[str, str]) -> str:
    """``agent:<id>`` as the id, ``app:<scope>`` as the app's name (else its scope)."""
    kind, _, who = requester.partition(":")
    return names.get(who, who) if kind == "app" else who


def artifact_headers(name: str, media_type: str) -> dict[str, str]:
    """A download, never a page: ``attachment``, a safe file name, a harmless type."""
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]", "_", name)[:100] or "file"
    content_type = media_type if media_type in SAFE_INLINE_TYPES else "application/octet-stream"
    if content_type.startswith("text/"):
        content_type += "; charset=utf-8"
    return {
        "content-type": content_type,
        "content-disposition": (
            f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"
        ),
        "content-security-policy": "sandbox; default-src 'none'",
    }
