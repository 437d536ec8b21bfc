"""The mcpServers file: what people write is read; anything else is one line with a code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp import McpConfigError, load_config, parse_config, server_key
from lineup.runtime.mcp.config import MAX_SERVERS


def _parse(document: object, environ: dict[str, str] | None = None) -> tuple:
    data = document if isinstance(document, bytes) else json.dumps(document).encode()
    return parse_config(data, "mcp.json", environ=environ or {})


def test_the_common_shapes_are_read() -> None:
    servers = _parse(
        {
            "mcpServers": {
                "Files": {
                    "command": "npx",
                    "args": ["-y", "server-files", "/tmp"],
                    "env": {"A": "1"},
                },
                "remote": {"url": "https://example.test/mcp", "headers": {"X-Key": "k"}},
                "typed": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
                "plain": {"type": "stdio", "command": "/bin/true", "cwd": "/tmp"},
            }
        }
    )
    files, remote, typed, plain = servers
    assert (files.name, files.key, files.transport) == ("Files", "files", "stdio")
    assert files.command == "npx" and files.args == ("-y", "server-files", "/tmp")
    assert dict(files.env) == {"A": "1"}
    assert (remote.transport, remote.url, dict(remote.headers)) == (
        "http",
        "https://example.test/mcp",
        {"X-Key": "k"},
    )
    assert typed.transport == "http" and plain.cwd == "/tmp"
    assert len({s.digest for s in servers}) == 4


def test_the_digest_follows_the_launch_definition_not_the_expanded_secret() -> None:
    doc = {"mcpServers": {"a": {"command": "x", "env": {"T": "${TOKEN}"}}}}
    one = _parse(doc, {"TOKEN": "one"})[0]
    two = _parse(doc, {"TOKEN": "two"})[0]
    assert one.env["T"] == "one" and two.env["T"] == "two"
    assert one.digest == two.digest
    changed = _parse(
        {"mcpServers": {"a": {"command": "x", "args": ["-v"], "env": {"T": "${TOKEN}"}}}},
        {"TOKEN": "one"},
    )
    assert changed[0].digest != one.digest


def test_variables_are_expanded_in_env_and_headers() -> None:
    environ = {"KEY": "s3cret", "HOST": "h"}
    servers = _parse(
        {
            "mcpServers": {
                "a": {
                    "command": "x",
                    "env": {"K": "${KEY}", "D": "${NOPE:-fallback}", "L": "$KEY"},
                },
                "b": {
                    "url": "https://e.test/mcp",
                    "headers": {"Authorization": "Bearer ${KEY}@${HOST}"},
                },
            }
        },
        environ,
    )
    assert dict(servers[0].env) == {"K": "s3cret", "D": "fallback", "L": "$KEY"}
    assert servers[1].headers["Authorization"] == "Bearer s3cret@h"
    assert "s3cret" not in repr(servers)


def test_a_missing_variable_is_named_and_no_value_is_shown() -> None:
    with pytest.raises(McpConfigError) as caught:
        _parse(
            {"mcpServers": {"a": {"command": "x", "env": {"K": "${MISSING_ONE}", "O": "${SET}"}}}},
            {"SET": "v4lue"},
        )
    assert caught.value.code is ErrorCode.MCP_CONFIG_INVALID
    assert "${MISSING_ONE}" in caught.value.message and "v4lue" not in caught.value.message


@pytest.mark.parametrize(
    ("document", "says"),
    [
        (
            b'{"mcpServers": {"a": {"command": "x",}}}',
            "is not JSON: Expecting property name enclosed in double quotes at line 1 column 38",
        ),
        (b"\xff\xfe", "is not UTF-8"),
        ([], 'must be a JSON object with "mcpServers"'),
        ({"servers": {}}, 'unknown field "servers"'),
        ({"mcpServers": []}, '"mcpServers" must be an object'),
        ({"mcpServers": {"x": {}}}, 'server "x": needs "command" or "url"'),
        ({"mcpServers": {"": {"command": "x"}}}, "a server has an empty name"),
        ({"mcpServers": {"  ": {"command": "x"}}}, "a server has an empty name"),
        ({"mcpServers": {"x": {"command": "x", "evn": {}}}}, 'server "x": unknown field "evn"'),
        (
            {"mcpServers": {"x": {"command": "x", "url": "http://a/"}}},
            'has both "command" and "url"',
        ),
        (
            {"mcpServers": {"x": {"type": "sse", "url": "http://a/"}}},
            "LineUp speaks streamable HTTP only",
        ),
        ({"mcpServers": {"x": {"type": "ws", "url": "http://a/"}}}, '"type" must be'),
        ({"mcpServers": {"x": {"type": "http", "command": "x"}}}, '"type": "http" needs "url"'),
        ({"mcpServers": {"x": {"url": "ftp://a/"}}}, '"url" must start with http:// or https://'),
        ({"mcpServers": {"x": {"url": "file:///etc/passwd"}}}, '"url" must start with http://'),
        ({"mcpServers": {"x": {"url": "http://"}}}, '"url" has no host'),
        ({"mcpServers": {"x": {"url": "http://a:port/"}}}, '"url" is not a valid URL'),
        (
            {"mcpServers": {"x": {"url": "http://a/", "env": {}}}},
            '"env" is for servers with a command',
        ),
        (
            {"mcpServers": {"x": {"command": "x", "headers": {}}}},
            '"headers" is for servers with a url',
        ),
        ({"mcpServers": {"x": {"command": ""}}}, '"command" must be a non-empty string'),
        ({"mcpServers": {"x": {"command": "x", "args": "-v"}}}, '"args" must be a list of strings'),
        ({"mcpServers": {"x": {"command": "x", "args": [1]}}}, '"args" must be a list of strings'),
        ({"mcpServers": {"x": {"command": "x", "env": {"A": 1}}}}, "env.A must be a string"),
        ({"mcpServers": {"x": {"command": "x", "env": {"1A": "v"}}}}, '"env" has an invalid name'),
        (
            {"mcpServers": {"x": {"url": "http://a/", "headers": {"Bad Name": "v"}}}},
            '"headers" has an invalid name',
        ),
        (
            {"mcpServers": {"x": {"url": "http://a/", "headers": {"H": "a\r\nX: y"}}}},
            "has a control character",
        ),
        (
            {"mcpServers": {"x": {"command": "x", "cwd": "relative"}}},
            '"cwd" must be an absolute path',
        ),
        (
            {"mcpServers": {"My Server": {"command": "x"}, "my-server": {"command": "y"}}},
            'servers "My Server" and "my-server" have the same key "my-server"',
        ),
        (
            {"mcpServers": {f"s{i}": {"command": "x"} for i in range(MAX_SERVERS + 1)}},
            f"at most {MAX_SERVERS}",
        ),
        ({"mcpServers": {"a\nb": {"command": "x"}}}, "printable characters"),
    ],
)
def test_every_refusal_is_one_line_with_the_code(document: object, says: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        _parse(document)
    error = caught.value
    assert error.code is ErrorCode.MCP_CONFIG_INVALID
    assert error.message.startswith("mcp config mcp.json: ")
    assert says in error.message, error.message
    assert "\n" not in error.message and str(error) == error.message


def test_a_file_is_read_and_its_folder_anchors_a_relative_cwd(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "cwd": "work"}}}))
    (server,) = load_config(path)
    assert server.cwd == str(tmp_path / "work")
    with pytest.raises(McpConfigError) as caught:
        load_config(tmp_path / "missing.json")
    assert (
        caught.value.message
        == f"mcp config {tmp_path / 'missing.json'}: cannot be read (No such file or directory)"
    )


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (1024 * 1024 + 1))
    with pytest.raises(McpConfigError, match="is larger than 1024 KiB"):
        load_config(path)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Everything", "everything"),
        ("my server (dev)", "my-server-dev"),
        ("Café", "cafe"),
        ("2fa", "mcp-2fa"),
        ("under_score.v2", "under_score-v2"),
        ("x" * 60, "x" * 41),
    ],
)
def test_keys_are_scope_safe_and_stable(name: str, key: str) -> None:
    assert server_key(name) == key


def test_a_name_with_nothing_usable_gets_a_hashed_key() -> None:
    key = server_key("日本語")
    assert key.startswith("mcp-") and key == server_key("日本語") and key != server_key("中文")
