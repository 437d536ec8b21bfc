"""What a MiniApp may ask of the Runtime (spec 002 §7): the Runtime side of the
MiniApp SDK.

A request names the instance it comes from (the Web Host takes it from the mount the
message came through, never from the message), a method and its params. Every
request gets one answer: a result, or an ``AppApiError`` with a stable code. The
Runtime checks that the instance exists and is live, and each method checks
ownership itself (a tool call must be bound to this instance, an inbox entry must be
of this app's scope and conversation).

Methods (docs/miniapps.md has the SDK face):

- ``context.get``: who the app is here (ids, scope, version, its sub-session and the
  instance it continues, if any) and ``locale``, the person's language as a BCP 47 tag
  (``preferences.person_locale``: the one they chose, else their newest tab's; read
  afresh on every call, so a change shows on the next ``context.get``).
- ``lifecycle.ready`` (the app finished starting), ``lifecycle.requestForeground`` /
  ``requestBackground`` / ``requestClose``: requests; the kernel decides.
- ``tools.list``: the calls bound to the instance still waiting for the app (every
  one is listed again after a reload until the app answers it), with arguments.
  ``tools.progress`` / ``complete`` / ``fail`` / ``cancel``: the Tool Router's app side.
- ``state.get`` / ``state.set``: a JSON object per instance, at most 64 KiB,
  persisted; ``state.get`` with ``{"of": "continued"}`` reads the state of the
  instance this one continues ("Continue" on old work).
- ``inbox.list`` / ``inbox.acknowledge``: envelopes addressed to the app's scope in its
  conversation, until acknowledged.
- ``capabilities.request`` (``{name, arguments, reason, expires_in_ms}``): a host
  capability, decided by the capability gateway like an agent's ``app.call``; only
  what the app's manifest lists in ``permissions`` (else ``rejected``,
  ``capability_denied``). Answers at once with ``{call_id, status}``; the outcome is
  read with ``capabilities.get`` (``{call_id}``) once the host pushes
  ``capabilities``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from lineup.protocol import ErrorCode

from .. import preferences
from ..capabilities.calls import State as CallState
from ..capabilities.gateway import CallKey, CapabilityCall, CapabilityGateway
from ..store import RuntimeStore
from ..tables import audit
from ..txn import Sql
from . import instance_store, registry, tool_call_store
from .kernel import AppKernel
from .lifecycle import LIVE, MiniAppInstanceRecord
from .tool_calls import LIVE as CALL_LIVE

if TYPE_CHECKING:
    from .router import ToolRouter

__all__ = ["MAX_STATE_BYTES", "METHODS", "AppApi", "AppApiError"]

MAX_STATE_BYTES = 64 * 1024
MIN_CAPABILITY_MS = 1_000
MAX_CAPABILITY_MS = 86_400_000
DEFAULT_CAPABILITY_MS = 300_000

METHODS = frozenset(
    {
        "context.get",
        "lifecycle.ready",
        "lifecycle.requestForeground",
        "lifecycle.requestBackground",
        "lifecycle.requestClose",
        "tools.list",
        "tools.progress",
        "tools.complete",
        "tools.fail",
        "tools.cancel",
        "state.get",
        "state.set",
        "inbox.list",
        "inbox.acknowledge",
        "capabilities.request",
        "capabilities.get",
    }
)


class AppApiError(Exception):
    """A refused request: ``code`` is stable (``app_instance_not_found``,
    ``request_invalid``, ``method_unknown``, ``unsupported``, ``state_too_large``, or
    the kernel's and router's codes)."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.message = message or code


@dataclass(frozen=True, slots=True)
class _Caller:
    record: MiniAppInstanceRecord


_encode = msgspec.json.encode
_decode = msgspec.json.decode


def _text(params: dict[str, Any], name: str, *, optional: bool = False) -> str | None:
    value = params.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 256:
        raise AppApiError(ErrorCode.REQUEST_INVALID, f"{name} must be a short string")
    return value


class AppApi:
    def __init__(
        self,
        store: RuntimeStore,
        kernel: AppKernel,
        tools: ToolRouter,
        capabilities: CapabilityGateway,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._store = store
        self._kernel = kernel
        self._tools = tools
        self._capabilities = capabilities
        self._clock = clock or (lambda: datetime.now(UTC))
        self._methods: dict[str, Callable[[_Caller, dict[str, Any]], Awaitable[Any]]] = {
            "context.get": self._context,
            "lifecycle.ready": self._ready,
            "lifecycle.requestForeground": self._lifecycle("foreground"),
            "lifecycle.requestBackground": self._lifecycle("background"),
            "lifecycle.requestClose": self._lifecycle("close"),
            "tools.list": self._tools_list,
            "tools.progress": self._progress,
            "tools.complete": self._complete,
            "tools.fail": self._fail,
            "tools.cancel": self._cancel,
            "state.get": self._state_get,
            "state.set": self._state_set,
            "inbox.list": self._inbox_list,
            "inbox.acknowledge": self._inbox_ack,
            "capabilities.request": self._capability,
            "capabilities.get": self._capability_get,
        }
        assert set(self._methods) == METHODS

    async def call(self, instance_id: str, method: str, params: dict[str, Any]) -> Any:
        """Answer one request of the app instance ``instance_id``. Raises
        ``AppApiError``."""
        handler = self._methods.get(method)
        if handler is None:
            raise AppApiError(ErrorCode.METHOD_UNKNOWN, "no such method")
        if not isinstance(params, dict):
            raise AppApiError(ErrorCode.REQUEST_INVALID, "params must be an object")
        record = self._kernel.record(instance_id)
        if record is None or record.state not in LIVE:
            raise AppApiError(ErrorCode.APP_INSTANCE_NOT_FOUND, "the instance is not running")
        return await handler(_Caller(record), params)

    # --- context and lifecycle ---------------------------------------------------------------

    async def _context(self, caller: _Caller, params: dict[str, Any]) -> Any:
        record = caller.record
        app = await self._store.db.read(_app_of_scope, record.app_scope)
        return {
            "instance_id": record.instance_id,
            "app_id": None if app is None else app[0],
            "app_version": None if app is None else app[1],
            "app_scope": record.app_scope,
            "conversation_id": record.conversation_id,
            "app_session_id": await self._kernel.app_session_id(record.instance_id),
            "continues_instance_id": record.parent_instance_id,
            "state": str(record.state),
            "locale": await self._store.db.read(preferences.person_locale),
        }

    async def _ready(self, caller: _Caller, params: dict[str, Any]) -> Any:
        receipt = await self._tools.app_started(caller.record.instance_id)
        if not receipt.accepted and caller.record.state.value == "starting":
            raise AppApiError(receipt.code or ErrorCode.LIFECYCLE_DENIED)
        return {"state": str(receipt.record.state) if receipt.record else None}

    def _lifecycle(self, action: str) -> Callable[[_Caller, dict[str, Any]], Awaitable[Any]]:
        async def request(caller: _Caller, params: dict[str, Any]) -> Any:
            iid = caller.record.instance_id
            if action == "foreground":
                receipt = await self._kernel.request_foreground(iid, actor="app")
            elif action == "background":
                receipt = await self._kernel.request_background(iid, actor="app")
            else:
                receipt = await self._kernel.request_close(iid, actor="app")
            if not receipt.accepted:
                raise AppApiError(receipt.code or ErrorCode.LIFECYCLE_DENIED)
            return {"state": str(receipt.record.state) if receipt.record else None}

        return request

    # --- tools -------------------------------------------------------------------------------

    async def _tools_list(self, caller: _Caller, params: dict[str, Any]) -> Any:
        return await self._store.db.read(_pending_calls, caller.record.instance_id)

    async def _progress(self, caller: _Caller, params: dict[str, Any]) -> Any:
        call_id = _text(params, "call_id")
        assert call_id is not None
        try:
            receipt = await self._tools.app_progress(
                caller.record.instance_id,
                call_id,
                current=float(params.get("current", 0)),
                total=None if params.get("total") is None else float(params["total"]),
                label=_text(params, "label", optional=True),
            )
        except (TypeError, ValueError) as exc:
            raise AppApiError(ErrorCode.REQUEST_INVALID, "not a progress report") from exc
        return _receipt(receipt)

    async def _complete(self, caller: _Caller, params: dict[str, Any]) -> Any:
        call_id = _text(params, "call_id")
        assert call_id is not None
        result = params.get("result")
        receipt = await self._tools.app_complete(caller.record.instance_id, call_id, result)
        return _receipt(receipt)

    async def _fail(self, caller: _Caller, params: dict[str, Any]) -> Any:
        call_id = _text(params, "call_id")
        code = _text(params, "code")
        assert call_id is not None
        assert code is not None
        message = _text(params, "message", optional=True)
        try:
            receipt = await self._tools.app_fail(caller.record.instance_id, call_id, code, message)
        except ValueError as exc:  # found by fuzzing: it used to drop the tab's channel
            raise AppApiError(ErrorCode.REQUEST_INVALID, "code must be an error code") from exc
        return _receipt(receipt)

    async def _cancel(self, caller: _Caller, params: dict[str, Any]) -> Any:
        call_id = _text(params, "call_id")
        assert call_id is not None
        return _receipt(await self._tools.app_cancel(caller.record.instance_id, call_id))

    # --- state ---------------------------------------------------------------------------------

    async def _state_get(self, caller: _Caller, params: dict[str, Any]) -> Any:
        instance_id = caller.record.instance_id
        if params.get("of") == "continued":
            if caller.record.parent_instance_id is None:
                return {}
            instance_id = caller.record.parent_instance_id
        elif params.get("of") is not None:
            raise AppApiError(ErrorCode.REQUEST_INVALID, "of must be 'continued'")
        body = await self._store.db.read(_state_of, instance_id)
        return {} if body is None else _decode(body)

    async def _state_set(self, caller: _Caller, params: dict[str, Any]) -> Any:
        state = params.get("state")
        if not isinstance(state, dict):
            raise AppApiError(ErrorCode.REQUEST_INVALID, "state must be an object")
        body = _encode(state)
        if len(body) > MAX_STATE_BYTES:
            raise AppApiError(
                ErrorCode.STATE_TOO_LARGE, f"state is more than {MAX_STATE_BYTES} bytes"
            )
        now = self._clock().astimezone(UTC).isoformat(timespec="milliseconds")
        await self._store.db.write(_set_state_txn, caller.record.instance_id, body, now)
        return {"bytes": len(body)}

    # --- inbox ---------------------------------------------------------------------------------

    async def _inbox_list(self, caller: _Caller, params: dict[str, Any]) -> Any:
        items = await self._store.inbox(caller.record.app_scope)
        conversation = caller.record.conversation_id
        listed = []
        for item in items:
            if item.conversation_id != conversation:
                continue
            envelope = _decode(item.body)
            listed.append(
                {
                    "inbox_id": item.id,
                    "envelope_id": item.envelope_id,
                    "type": envelope.get("type"),
                    "payload": envelope.get("payload"),
                }
            )
        return listed

    async def _inbox_ack(self, caller: _Caller, params: dict[str, Any]) -> Any:
        inbox_id = params.get("inbox_id")
        if not isinstance(inbox_id, int) or isinstance(inbox_id, bool):
            raise AppApiError(ErrorCode.REQUEST_INVALID, "inbox_id must be an integer")
        mine = {i["inbox_id"] for i in await self._inbox_list(caller, {})}
        if inbox_id not in mine:
            raise AppApiError(ErrorCode.INBOX_NOT_FOUND, "no such inbox entry for this app")
        return {"acknowledged": await self._store.inbox_ack(caller.record.app_scope, inbox_id)}

    async def _capability(self, caller: _Caller, params: dict[str, Any]) -> Any:
        name = _text(params, "name")
        reason = _text(params, "reason")
        assert name is not None
        assert reason is not None
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            raise AppApiError(ErrorCode.REQUEST_INVALID, "arguments must be an object")
        expires_in = params.get("expires_in_ms", DEFAULT_CAPABILITY_MS)
        if (
            not isinstance(expires_in, int)
            or isinstance(expires_in, bool)
            or not MIN_CAPABILITY_MS <= expires_in <= MAX_CAPABILITY_MS
        ):
            raise AppApiError(ErrorCode.REQUEST_INVALID, "expires_in_ms must be 1 s .. 24 h")
        record = caller.record
        if record.conversation_id is None:
            raise AppApiError(ErrorCode.CAPABILITY_DENIED, "the instance has no conversation")
        permissions = await self._store.db.read(_permissions_of, record.app_scope)
        call_id = f"cap_{uuid.uuid4().hex}"
        key = CallKey(record.conversation_id, call_id, "app")
        call = await self._capabilities.request_from_app(
            key,
            record.instance_id,
            permissions,
            name,
            arguments,
            reason,
            self._clock() + timedelta(milliseconds=expires_in),
        )
        return _capability_view(call)

    async def _capability_get(self, caller: _Caller, params: dict[str, Any]) -> Any:
        call_id = _text(params, "call_id")
        assert call_id is not None
        record = caller.record
        key = CallKey(record.conversation_id or "", call_id, "app")
        call = await self._capabilities.get(key)
        if call is None or call.requester_id != record.instance_id:
            raise AppApiError(ErrorCode.CAPABILITY_CALL_NOT_FOUND, "no such call of this instance")
        return _capability_view(call)


def _capability_view(call: CapabilityCall) -> dict[str, Any]:
    view: dict[str, Any] = {"call_id": call.key.call_id, "status": str(call.state)}
    if call.state is CallState.COMPLETED and call.result is not None:
        view["result"] = _decode(call.result)
    if call.code is not None:
        view["code"] = call.code
    return view


def _permissions_of(conn: Sql, app_scope: str) -> frozenset[str]:
    row = conn.execute("SELECT app_id FROM apps WHERE app_scope = ?", (app_scope,)).fetchone()
    manifest = None if row is None else registry.manifest_of(conn, row[0])
    return frozenset() if manifest is None else frozenset(manifest.permissions)


def _receipt(receipt: Any) -> Any:
    if not receipt.accepted:
        raise AppApiError(receipt.code or ErrorCode.CALL_NOT_FOUND)
    return {"accepted": True}


def _pending_calls(conn: Sql, instance_id: str) -> list[dict[str, Any]]:
    """The calls bound to ``instance_id`` that still wait for the app, with their
    arguments (taken from the stored ``tool.call`` envelope)."""
    listed = []
    for call in tool_call_store.for_instance(conn, instance_id):
        if call.state not in CALL_LIVE:
            continue
        row = conn.execute(
            "SELECT body FROM timeline WHERE conversation_id = ? AND envelope_id = ?",
            (call.conversation_id, call.envelope_id),
        ).fetchone()
        arguments = {} if row is None else _decode(bytes(row[0]))["payload"].get("arguments", {})
        listed.append(
            {
                "call_id": call.call_id,
                "tool": call.tool,
                "arguments": arguments,
                "state": str(call.state),
                "deadline": None if call.deadline is None else call.deadline.isoformat(),
            }
        )
    return listed


def _app_of_scope(conn: Sql, app_scope: str) -> tuple[str, str] | None:
    row = conn.execute("SELECT app_id, version FROM apps WHERE app_scope = ?", (app_scope,))
    found = row.fetchone()
    return None if found is None else (str(found[0]), str(found[1]))


def _state_of(conn: Sql, instance_id: str) -> bytes | None:
    row = conn.execute("SELECT body FROM app_state WHERE instance_id = ?", (instance_id,))
    found = row.fetchone()
    return None if found is None else bytes(found[0])


def _set_state_txn(conn: Sql, instance_id: str, body: bytes, now: str) -> None:
    if instance_store.load(conn).records.get(instance_id) is None:
        return
    conn.execute(
        "INSERT INTO app_state (instance_id, body, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (instance_id) DO UPDATE SET body = excluded.body,"
        " updated_at = excluded.updated_at",
        (instance_id, body, now),
    )
    audit(conn, now, "app", "app.state", instance_id, "saved", None)
