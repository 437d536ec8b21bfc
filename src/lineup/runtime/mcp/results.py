"""What a call to an MCP server ends with: a result, a resource, or a stable error.

Decoded from the server's raw JSON here (not with the SDK's models) so that the size
is measured on what came and a result that is not MCP is refused with
``mcp_protocol_error`` rather than a pydantic traceback. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Literal

from lineup.protocol import ErrorCode

__all__ = [
    "ElicitAnswer",
    "McpCallError",
    "McpCallResult",
    "McpResource",
    "decode_call_result",
    "decode_resource",
    "json_size",
]

MAX_SERVER_MESSAGE_CHARS = 200


class McpCallError(Exception):
    """A call to an MCP server did not end with a result.

    ``server_code`` is the JSON-RPC error code the server answered with, if it did.
    The message is one line; it never carries the server's error data.
    """

    def __init__(self, code: ErrorCode, message: str, *, server_code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.server_code = server_code


@dataclass(frozen=True)
class McpCallResult:
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    meta: dict[str, Any] | None


@dataclass(frozen=True)
class McpResource:
    """One resource's contents. For ``ui://`` views ``meta`` holds the MCP Apps
    ``_meta.ui`` (csp, permissions, domain, prefersBorder) as the server gave it."""

    uri: str
    mime_type: str | None
    text: str | None
    blob: bytes | None
    meta: dict[str, Any] | None


@dataclass(frozen=True)
class ElicitAnswer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


def json_size(value: object) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (the size limits are on this)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def one_line(text: str, limit: int = MAX_SERVER_MESSAGE_CHARS) -> str:
    """A server's text made safe for one line of an error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def decode_call_result(raw: dict[str, Any], *, server: str, max_bytes: int) -> McpCallResult:
    size = json_size(raw)
    if size > max_bytes:
        raise McpCallError(
            ErrorCode.MCP_RESULT_TOO_LARGE,
            f"MCP server {server}: the result has {size} bytes, over the limit of {max_bytes}",
        )
    content = raw.get("content", [])
    structured = raw.get("structuredContent")
    is_error = raw.get("isError", False)
    meta = raw.get("_meta")
    if (
        not isinstance(content, list)
        or not all(
            isinstance(block, dict) and isinstance(block.get("type"), str) for block in content
        )
        or not (structured is None or isinstance(structured, dict))
        or not isinstance(is_error, bool)
        or not (meta is None or isinstance(meta, dict))
    ):
        raise McpCallError(
            ErrorCode.MCP_PROTOCOL_ERROR,
            f"MCP server {server}: the tool result is not an MCP result",
        )
    return McpCallResult(
        content=content, structured_content=structured, is_error=is_error, meta=meta
    )


def decode_resource(raw: dict[str, Any], uri: str, *, server: str, max_bytes: int) -> McpResource:
    contents = raw.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
        raise McpCallError(
            ErrorCode.MCP_PROTOCOL_ERROR, f"MCP server {server}: the resource has no contents"
        )
    # The content that is the resource asked for; else the first (a server may name it otherwise).
    item = next((c for c in contents if isinstance(c, dict) and c.get("uri") == uri), contents[0])
    text, blob, mime, meta = (
        item.get("text"),
        item.get("blob"),
        item.get("mimeType"),
        item.get("_meta"),
    )
    if (
        not (text is None or isinstance(text, str))
        or not (blob is None or isinstance(blob, str))
        or (text is None) == (blob is None)
        or not (mime is None or isinstance(mime, str))
        or not (meta is None or isinstance(meta, dict))
    ):
        raise McpCallError(
            ErrorCode.MCP_PROTOCOL_ERROR,
            f"MCP server {server}: the resource is not MCP resource contents",
        )
    data: bytes | None = None
    if blob is not None:
        if len(blob) > (max_bytes * 4) // 3 + 4:
            raise _resource_too_large(server, uri, max_bytes)
        try:
            data = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise McpCallError(
                ErrorCode.MCP_PROTOCOL_ERROR,
                f"MCP server {server}: the resource's blob is not base64",
            ) from None
        size = len(data)
    else:
        assert text is not None
        size = len(text.encode())
    if size > max_bytes:
        raise _resource_too_large(server, uri, max_bytes)
    return McpResource(uri=uri, mime_type=mime, text=text, blob=data, meta=meta)


def _resource_too_large(server: str, uri: str, max_bytes: int) -> McpCallError:
    return McpCallError(
        ErrorCode.MCP_RESOURCE_TOO_LARGE,
        f"MCP server {server}: resource {one_line(uri, 100)} is over the limit of"
        f" {max_bytes} bytes",
    )
