"""HTTP routes of the AppServer. Thin: decode the request, call the service."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lineup import wire
from lineup.delivery.errors import DeliveryError
from lineup.delivery.release import sha256_hex
from lineup.protocol import MAX_ENVELOPE_BYTES, ErrorCode

from .catalog import Catalog, empty_document
from .errors import ApiError
from .service import AppServerService
from .storage import ConversationRecord, Principal

T = TypeVar("T")

MAX_BODY_BYTES = MAX_ENVELOPE_BYTES + 1024
MAX_WAIT_SECONDS = 60.0
ARTIFACT_CACHE_CONTROL = "private, max-age=31536000, immutable"
CATALOG_CACHE_CONTROL = "private, no-cache"

log = logging.getLogger("lineup.server")


class JSONResponse(Response):
    media_type = "application/json"

    def __init__(self, content: Any, status_code: int = 200) -> None:
        super().__init__(msgspec.json.encode(content), status_code=status_code)


def service_of(request: Request) -> AppServerService:
    service: AppServerService = request.app.state.service
    return service


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, refused before it is read whole when it is too large."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(ErrorCode.ENVELOPE_TOO_LARGE, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(ErrorCode.ENVELOPE_TOO_LARGE, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_body(request: Request, kind: type[T]) -> T:
    data = await read_body(request, 64 * 1024)
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise ApiError(ErrorCode.INVALID_REQUEST, str(exc).splitlines()[0]) from None
    except msgspec.DecodeError:
        raise ApiError(ErrorCode.INVALID_REQUEST, "the body is not valid JSON") from None


async def principal_of(request: Request) -> Principal:
    return await service_of(request).authenticate(request.headers.get("authorization"))


def conversation_json(record: ConversationRecord) -> wire.Conversation:
    return wire.Conversation(
        id=record.id,
        user_id=record.user_id,
        agent_id=record.agent_id,
        title=record.title,
        created_at=record.created_at,
        last_seq=record.last_seq,
    )


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"`{name}` must be an integer") from None
    if not low <= value <= high:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"`{name}` must be between {low} and {high}")
    return value


# --- endpoints ---------------------------------------------------------------------------


async def login(request: Request) -> Response:
    body = await decode_body(request, wire.LoginRequest)
    token, user_id, expires_at = await service_of(request).login(body.username, body.password)
    return JSONResponse(wire.LoginResponse(token=token, user_id=user_id, expires_at=expires_at))


async def logout(request: Request) -> Response:
    principal = await principal_of(request)
    if principal.kind != "user":
        raise ApiError(ErrorCode.FORBIDDEN, "agents log out by having their key revoked")
    await service_of(request).logout(request.headers["authorization"].partition(" ")[2].strip())
    return Response(status_code=204)


async def me(request: Request) -> Response:
    principal = await principal_of(request)
    return JSONResponse(wire.Me(kind=principal.kind, id=principal.id))


async def list_conversations(request: Request) -> Response:
    principal = await principal_of(request)
    records = await service_of(request).list_conversations(principal)
    return JSONResponse(
        wire.ConversationList(conversations=[conversation_json(r) for r in records])
    )


async def create_conversation(request: Request) -> Response:
    principal = await principal_of(request)
    body = await decode_body(request, wire.CreateConversation)
    counterpart = body.agent_id if principal.kind == "user" else body.user_id
    record, created = await service_of(request).create_conversation(
        principal, counterpart=counterpart, conversation_id=body.id, title=body.title
    )
    return JSONResponse(conversation_json(record), status_code=201 if created else 200)


async def get_conversation(request: Request) -> Response:
    principal = await principal_of(request)
    record = await service_of(request).conversation_for(
        principal, request.path_params["conversation_id"]
    )
    return JSONResponse(conversation_json(record))


async def post_envelope(request: Request) -> Response:
    principal = await principal_of(request)
    data = await read_body(request)
    sent = await service_of(request).send(
        principal, data, conversation_id=request.path_params["conversation_id"]
    )
    result = wire.SendResult(
        conversation_id=sent.conversation_id,
        id=sent.envelope_id,
        seq=sent.seq,
        duplicate=sent.duplicate,
    )
    return JSONResponse(result, status_code=200 if sent.duplicate else 201)


async def get_envelopes(request: Request) -> Response:
    principal = await principal_of(request)
    conversation_id = request.path_params["conversation_id"]
    since = _int_param(request, "since", 0, 0, 2**62)
    limit = _int_param(request, "limit", 100, 1, 500)
    wait = _int_param(request, "wait", 0, 0, int(MAX_WAIT_SECONDS))
    items = await service_of(request).read(
        principal, conversation_id, since=since, limit=limit, wait=float(wait)
    )
    page = wire.EnvelopePage(
        conversation_id=conversation_id,
        envelopes=[wire.StoredItem(seq=i.seq, envelope=msgspec.Raw(i.body)) for i in items],
        next_since=items[-1].seq if items else since,
    )
    return JSONResponse(page)


def _etag_matches(request: Request, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, lists and ``*``)."""
    header = request.headers.get("if-none-match")
    if header is None:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in tags or etag in tags


async def get_catalog(request: Request) -> Response:
    """The catalog document: every published release and every revocation."""
    await principal_of(request)
    catalog: Catalog | None = request.app.state.catalog
    try:
        body, revision = await run_in_threadpool(catalog.document) if catalog else empty_document()
    except DeliveryError as exc:
        log.error("catalog unavailable", extra={"code": exc.code})
        raise ApiError(ErrorCode.UNAVAILABLE, "the catalog is unavailable; retry later") from None
    headers = {"ETag": f'"{revision}"', "Cache-Control": CATALOG_CACHE_CONTROL}
    if _etag_matches(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _read_artifact(path: Path, sha256: str) -> bytes | None:
    data = path.read_bytes()
    return data if sha256_hex(data) == sha256 else None


async def get_artifact(request: Request) -> Response:
    """An artifact's bytes, by the id a listed release names. Not verified for the
    caller (the Runtime checks signature, length and SHA-256 itself); a file that is
    no longer the release's bytes is not served under the release's digest."""
    await principal_of(request)
    catalog: Catalog | None = request.app.state.catalog
    artifact_id = request.path_params["artifact_id"]
    found = await run_in_threadpool(catalog.artifact, artifact_id) if catalog else None
    if found is None:
        raise ApiError(ErrorCode.NOT_FOUND, "no such artifact")
    path, release = found
    headers = {"ETag": f'"{release.sha256}"', "Cache-Control": ARTIFACT_CACHE_CONTROL}
    if _etag_matches(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    try:
        data = await run_in_threadpool(_read_artifact, path, release.sha256)
    except FileNotFoundError:
        data = None
    if data is None:
        log.error("catalog artifact changed on disk", extra={"artifact_id": release.artifact_id})
        raise ApiError(ErrorCode.UNAVAILABLE, "the artifact is unavailable")
    log.debug("artifact served", extra={"artifact_id": release.artifact_id, "bytes": len(data)})
    return Response(data, media_type="application/octet-stream", headers=headers)


async def healthz(request: Request) -> Response:
    return JSONResponse(wire.Health(status="ok"))


async def readyz(request: Request) -> Response:
    state = request.app.state
    if not getattr(state, "ready", False):
        return JSONResponse(
            wire.Health(status="stopping" if getattr(state, "stopping", False) else "starting"), 503
        )
    if not getattr(state.service.storage, "ready", True):
        return JSONResponse(
            wire.Health(status="degraded", schema_version=state.schema_version), 503
        )
    return JSONResponse(wire.Health(status="ok", schema_version=state.schema_version))


ROUTES = [
    Route("/v1/login", login, methods=["POST"]),
    Route("/v1/logout", logout, methods=["POST"]),
    Route("/v1/me", me, methods=["GET"]),
    Route("/v1/conversations", list_conversations, methods=["GET"]),
    Route("/v1/conversations", create_conversation, methods=["POST"]),
    Route("/v1/conversations/{conversation_id}", get_conversation, methods=["GET"]),
    Route("/v1/conversations/{conversation_id}/envelopes", post_envelope, methods=["POST"]),
    Route("/v1/conversations/{conversation_id}/envelopes", get_envelopes, methods=["GET"]),
    Route("/v1/catalog", get_catalog, methods=["GET"]),
    Route("/v1/artifacts/{artifact_id}", get_artifact, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
]
