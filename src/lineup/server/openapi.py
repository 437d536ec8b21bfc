"""OpenAPI 3.1 document for the HTTP part, built from the same msgspec types."""

from __future__ import annotations

from typing import Any

import msgspec

from lineup import wire
from lineup.protocol import ErrorResponse
from lineup.protocol.envelope import AnyEnvelope
from lineup.protocol.schema import ecma_patterns

_ERROR = {"$ref": "#/components/schemas/ErrorResponse"}


def _json(ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _errors(*statuses: int) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(status): {"description": "error", "content": {"application/json": {"schema": _ERROR}}}
        for status in statuses
    }
    if "429" in responses:  # too many attempts: when to try again
        responses["429"]["description"] = "rate_limited: too many attempts"
        responses["429"]["headers"] = {
            "Retry-After": {
                "description": "seconds until another attempt is accepted",
                "schema": {"type": "integer", "minimum": 0},
            }
        }
    return responses


def _op(
    summary: str,
    ok: dict[str, Any],
    *errors: int,
    body: str | None = None,
    auth: bool = True,
    params: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {**ok, **_errors(*errors)}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": _json(body)}
    if auth:
        op["security"] = [{"bearer": []}]
    if params:
        op["parameters"] = params
    return op


def _query(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 0},
        "description": description,
    }


_CONV = {"name": "conversation_id", "in": "path", "required": True, "schema": {"type": "string"}}

_ARTIFACT_ID = {
    "name": "artifact_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,127}$"},
}
_IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "schema": {"type": "string"},
    "description": "the ETag already held: answered 304 when unchanged",
}
_ETAG = {"ETag": {"schema": {"type": "string"}}, "Cache-Control": {"schema": {"type": "string"}}}

CATALOG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["revision", "apps", "revoked"],
    "properties": {
        "revision": {"type": "string", "description": "`cat-` and 20 hex digits"},
        "apps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["app_id", "releases"],
                "properties": {
                    "app_id": {"type": "string"},
                    "releases": {
                        "type": "array",
                        "description": "signed `lineup.release.v1` documents, oldest first",
                        "items": {"type": "object"},
                    },
                },
            },
        },
        "revoked": {
            "type": "object",
            "required": ["versions", "keys"],
            "properties": {
                "versions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["app_id", "version"],
                        "properties": {
                            "app_id": {"type": "string"},
                            "version": {"type": "string"},
                        },
                    },
                },
                "keys": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}


def build_openapi() -> dict[str, Any]:
    types: list[Any] = [
        wire.LoginRequest,
        wire.LoginResponse,
        wire.Me,
        wire.CreateConversation,
        wire.Conversation,
        wire.ConversationList,
        wire.SendResult,
        wire.EnvelopePage,
        wire.Health,
        ErrorResponse,
        AnyEnvelope,
    ]
    schemas, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    components["Envelope"] = schemas[-1]
    components = ecma_patterns(components)
    envelope_ref = {"$ref": "#/components/schemas/Envelope"}
    paths: dict[str, Any] = {
        "/v1/login": {
            "post": _op(
                "Log a user in; returns a bearer token",
                {"200": {"description": "token", "content": _json("LoginResponse")}},
                400,
                401,
                429,
                body="LoginRequest",
                auth=False,
            )
        },
        "/v1/logout": {
            "post": _op(
                "Revoke the calling user's token", {"204": {"description": "revoked"}}, 401, 403
            )
        },
        "/v1/me": {
            "get": _op(
                "Who the bearer is",
                {"200": {"description": "principal", "content": _json("Me")}},
                401,
            )
        },
        "/v1/conversations": {
            "get": _op(
                "The caller's conversations",
                {"200": {"description": "list", "content": _json("ConversationList")}},
                401,
            ),
            "post": _op(
                "Create a conversation with the named agent (user) or user (agent)",
                {
                    "201": {"description": "created", "content": _json("Conversation")},
                    "200": {
                        "description": "already created by the same request id",
                        "content": _json("Conversation"),
                    },
                },
                400,
                401,
                404,
                409,
                body="CreateConversation",
            ),
        },
        "/v1/conversations/{conversation_id}": {
            "get": _op(
                "One conversation",
                {"200": {"description": "conversation", "content": _json("Conversation")}},
                401,
                404,
                params=[_CONV],
            ),
        },
        "/v1/conversations/{conversation_id}/envelopes": {
            "post": {
                **_op(
                    "Send an envelope; idempotent by envelope id",
                    {
                        "201": {"description": "stored", "content": _json("SendResult")},
                        "200": {
                            "description": "already stored (same id, same body)",
                            "content": _json("SendResult"),
                        },
                    },
                    400,
                    401,
                    403,
                    404,
                    409,
                    413,
                    422,
                    503,
                    params=[_CONV],
                ),
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": envelope_ref}},
                },
            },
            "get": _op(
                "Envelopes after a cursor; with `wait`, a long poll",
                {"200": {"description": "page", "content": _json("EnvelopePage")}},
                400,
                401,
                404,
                params=[
                    _CONV,
                    _query("since", "cursor: the last seq already seen"),
                    _query("limit", "page size, 1..500"),
                    _query("wait", "seconds to hold the request when nothing is new, 0..60"),
                ],
            ),
        },
        "/v1/catalog": {
            "get": _op(
                "Published MiniApp releases and revocations (the Runtime verifies them)",
                {
                    "200": {
                        "description": "catalog; ETag is the quoted revision",
                        "headers": _ETAG,
                        "content": {"application/json": {"schema": CATALOG_SCHEMA}},
                    },
                    "304": {"description": "unchanged since If-None-Match", "headers": _ETAG},
                },
                401,
                503,
                params=[_IF_NONE_MATCH],
            )
        },
        "/v1/artifacts/{artifact_id}": {
            "get": _op(
                "An artifact a listed release names; immutable, ETag is its quoted SHA-256",
                {
                    "200": {
                        "description": "the artifact's bytes",
                        "headers": _ETAG,
                        "content": {
                            "application/octet-stream": {
                                "schema": {"type": "string", "format": "binary"}
                            }
                        },
                    },
                    "304": {"description": "unchanged since If-None-Match", "headers": _ETAG},
                },
                401,
                404,
                503,
                params=[_ARTIFACT_ID, _IF_NONE_MATCH],
            )
        },
        "/healthz": {
            "get": _op(
                "Liveness",
                {"200": {"description": "alive", "content": _json("Health")}},
                auth=False,
            )
        },
        "/readyz": {
            "get": _op(
                "Readiness",
                {"200": {"description": "ready", "content": _json("Health")}},
                503,
                auth=False,
            )
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "LineUp AppServer", "version": "1"},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
