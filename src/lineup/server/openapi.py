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
    return {
        str(status): {"description": "error", "content": {"application/json": {"schema": _ERROR}}}
        for status in statuses
    }


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
