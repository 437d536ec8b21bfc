"""The MCP servers a person configures, in the ``mcpServers`` JSON other hosts read.

The shape is the one people already write for Claude, Cursor or Goose::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"KEY": "${KEY}"}},
        "remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${T}"}}
    }}

so a person can point LineUp at a file they have. It is decoded here, once, into frozen
``ServerConfig`` values; anything we cannot run as written is refused with one line
that names the file, the server and the field (``McpConfigError``), never with a
traceback and never with a value (an env value or a header is often a secret).

Why each rule:

- ``type`` is optional (``stdio`` for a ``command``, ``http`` for a ``url``); ``sse`` is
  refused: we speak streamable HTTP only, and a silent fallback would fail later and
  less clearly.
- Unknown fields are refused: a misspelt ``"evn"`` would otherwise start a server
  without its key.
- ``${VAR}`` (and ``${VAR:-default}``) in ``env`` and ``headers`` values is taken from
  the Runtime's environment, as other hosts do, so secrets stay out of the file. A
  missing variable is refused by name.
- Each server gets a ``key``: a lowercase name safe in a tool scope, derived from the
  name the person wrote; two names with one key are refused, since their tools would
  share a scope.
- ``digest`` is a hash of the launch definition *as written* (before expansion), so
  the Runtime notices a changed config without ever storing a hash of a secret.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from lineup.protocol import ErrorCode

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_SERVERS",
    "McpConfigError",
    "ServerConfig",
    "load_config",
    "parse_config",
    "server_key",
]

MAX_SERVERS = 32
MAX_CONFIG_BYTES = 1024 * 1024
MAX_NAME_CHARS = 128
MAX_KEY_CHARS = 41

Transport = Literal["stdio", "http"]

_SERVER_FIELDS = frozenset({"type", "command", "args", "env", "cwd", "url", "headers"})
_STDIO_FIELDS = frozenset({"type", "command", "args", "env", "cwd"})
_HTTP_FIELDS = frozenset({"type", "url", "headers"})
_TYPES: dict[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_KEY = re.compile(r"[a-z][a-z0-9_-]{0,40}\Z")


class McpConfigError(ValueError):
    """The config cannot be used as written: a stable code and one line to act on."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ServerConfig:
    """One configured server, as the Runtime will launch or reach it.

    ``env`` and ``headers`` hold expanded values: never log them.
    """

    name: str
    key: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    digest: str = ""


def load_config(path: Path) -> tuple[ServerConfig, ...]:
    """The servers of the file at ``path``; a relative ``cwd`` is taken from its folder."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise _error(str(path), f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    return parse_config(data, str(path), base=path.parent)


def parse_config(
    data: bytes,
    source: str,
    *,
    base: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[ServerConfig, ...]:
    """Decode a config's bytes; ``source`` names it in errors. ``environ`` (default: the
    process environment) is where ``${VAR}`` is looked up."""
    if len(data) > MAX_CONFIG_BYTES:
        raise _error(source, f"is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(source, f"is not UTF-8 (byte {exc.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _error(
            # Some of json's messages end in "at" themselves ("Invalid control character at").
            source,
            f"is not JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}",
        ) from None
    if not isinstance(document, dict):
        raise _error(source, 'must be a JSON object with "mcpServers"')
    unknown = sorted(set(document) - {"mcpServers"})
    if unknown:
        raise _error(source, f'unknown field {_quote(unknown[0])} (only "mcpServers" is read)')
    servers = document.get("mcpServers")
    if not isinstance(servers, dict):
        raise _error(source, '"mcpServers" must be an object of servers by name')
    if len(servers) > MAX_SERVERS:
        raise _error(source, f"has {len(servers)} servers; at most {MAX_SERVERS} are allowed")
    env = os.environ if environ is None else environ
    out: list[ServerConfig] = []
    keys: dict[str, str] = {}
    for name, body in servers.items():
        config = _server(source, name, body, base, env)
        if config.key in keys:
            raise _error(
                source,
                f"servers {_quote(keys[config.key])} and {_quote(name)} have the same key"
                f" {_quote(config.key)}: rename one",
            )
        keys[config.key] = name
        out.append(config)
    return tuple(out)


def server_key(name: str) -> str:
    """A stable key for a server's name: lowercase ``[a-z][a-z0-9_-]{0,40}``.

    Letters lose their accents, other characters become ``-``; a name with nothing
    usable (only symbols, or another script) gets ``mcp-`` and a hash of the name.
    """
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    key = re.sub(r"[^a-z0-9_-]+", "-", folded).strip("-_")
    if not key:
        return "mcp-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    if not key[0].isalpha():
        key = "mcp-" + key
    key = key[:MAX_KEY_CHARS].rstrip("-_")
    assert _KEY.match(key), key
    return key


def _server(
    source: str, name: object, body: object, base: Path | None, environ: Mapping[str, str]
) -> ServerConfig:
    if not isinstance(name, str) or not name.strip():
        raise _error(source, "a server has an empty name")
    if len(name) > MAX_NAME_CHARS or any(unicodedata.category(c)[0] == "C" for c in name):
        raise _error(
            source,
            f"server name {_quote(name[:40])}… must be at most {MAX_NAME_CHARS} printable"
            " characters",
        )
    where = f"server {_quote(name)}"
    if not isinstance(body, dict):
        raise _error(source, f"{where}: must be an object")
    unknown = sorted(set(body) - _SERVER_FIELDS)
    if unknown:
        raise _error(source, f"{where}: unknown field {_quote(unknown[0])}")
    transport = _transport(source, where, body)
    allowed = _STDIO_FIELDS if transport == "stdio" else _HTTP_FIELDS
    misplaced = sorted(set(body) - allowed)
    if misplaced:
        other = "a command" if transport == "http" else "a url"
        raise _error(source, f"{where}: {_quote(misplaced[0])} is for servers with {other}")
    digest = hashlib.sha256(
        json.dumps({"transport": transport, **body}, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    key = server_key(name)
    if transport == "stdio":
        return ServerConfig(
            name=name,
            key=key,
            transport="stdio",
            command=_command(source, where, body.get("command")),
            args=_strings(source, where, "args", body.get("args", [])),
            env=_mapping(source, where, "env", body.get("env", {}), _ENV_NAME, environ),
            cwd=_cwd(source, where, body.get("cwd"), base),
            digest=digest,
        )
    return ServerConfig(
        name=name,
        key=key,
        transport="http",
        url=_url(source, where, body.get("url")),
        headers=_mapping(source, where, "headers", body.get("headers", {}), _HEADER_NAME, environ),
        digest=digest,
    )


def _transport(source: str, where: str, body: dict[str, Any]) -> Transport:
    kind = body.get("type")
    if kind is None:
        if "command" in body and "url" in body:
            raise _error(source, f'{where}: has both "command" and "url"; keep one')
        if "command" in body:
            return "stdio"
        if "url" in body:
            return "http"
        raise _error(source, f'{where}: needs "command" or "url"')
    if kind == "sse":
        raise _error(
            source, f'{where}: "type": "sse" is not supported; LineUp speaks streamable HTTP only'
        )
    if not isinstance(kind, str) or kind not in _TYPES:
        raise _error(source, f'{where}: "type" must be "stdio", "http" or "streamable-http"')
    transport = _TYPES[kind]
    needed = "command" if transport == "stdio" else "url"
    if needed not in body:
        raise _error(source, f'{where}: "type": {_quote(kind)} needs {_quote(needed)}')
    return transport


def _command(source: str, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _error(source, f'{where}: "command" must be a non-empty string')
    return value


def _strings(source: str, where: str, field_name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _error(source, f"{where}: {_quote(field_name)} must be a list of strings")
    if any("\0" in item for item in value):
        raise _error(source, f"{where}: {_quote(field_name)} has a NUL character")
    return tuple(value)


def _cwd(source: str, where: str, value: object, base: Path | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\0" in value:
        raise _error(source, f'{where}: "cwd" must be a non-empty string')
    path = Path(value).expanduser()
    if not path.is_absolute():
        if base is None:
            raise _error(source, f'{where}: "cwd" must be an absolute path')
        path = base / path
    return str(path)


def _url(source: str, where: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise _error(source, f'{where}: "url" must be a non-empty string')
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise _error(source, f'{where}: "url" is not a valid URL') from None
    if parts.scheme not in ("http", "https"):
        raise _error(source, f'{where}: "url" must start with http:// or https://')
    if not parts.hostname:
        raise _error(source, f'{where}: "url" has no host')
    if any(c.isspace() for c in value):
        raise _error(source, f'{where}: "url" has white space in it')
    return value


def _mapping(
    source: str,
    where: str,
    field_name: str,
    value: object,
    name_pattern: re.Pattern[str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _error(source, f"{where}: {_quote(field_name)} must be an object of strings")
    out: dict[str, str] = {}
    for name, item in value.items():
        if not name_pattern.match(name):
            raise _error(
                source, f"{where}: {_quote(field_name)} has an invalid name {_quote(name[:40])}"
            )
        if not isinstance(item, str):
            raise _error(source, f"{where}: {field_name}.{name} must be a string")
        expanded = _expand(source, f"{where}: {field_name}.{name}", item, environ)
        if "\0" in expanded or (field_name == "headers" and ("\r" in expanded or "\n" in expanded)):
            raise _error(source, f"{where}: {field_name}.{name} has a control character")
        out[name] = expanded
    return out


def _expand(source: str, where: str, value: str, environ: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        found = environ.get(variable)
        if found is not None:
            return found
        if default is not None:
            return default
        raise _error(source, f"{where} uses ${{{variable}}}, which is not set in the environment")

    return _VARIABLE.sub(one, value)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _error(source: str, what: str) -> McpConfigError:
    return McpConfigError(ErrorCode.MCP_CONFIG_INVALID, f"mcp config {source}: {what}")
