"""The MCP Apps examples from npm (ext-apps) start over stdio, list tools that name a
``ui://`` view, and the view reads as ``text/html;profile=mcp-app`` (the later UI tests
build on this)."""

from __future__ import annotations

import pytest

from lineup.runtime.mcp import UI_MIME_TYPE, ServerConfig
from tests.support.npm import MCP_APPS, NpmUnavailable, npm_package

from .conftest import running, stdio_config


@pytest.mark.parametrize(
    ("package", "version"), MCP_APPS, ids=[name.rsplit("/", 1)[1] for name, _ in MCP_APPS]
)
async def test_an_mcp_apps_example_names_and_serves_its_view(package: str, version: str) -> None:
    try:
        root = npm_package(package, version, marker="dist/index.js")
    except NpmUnavailable as exc:
        pytest.fail(str(exc))
    config: ServerConfig = stdio_config("app", "node", str(root / "dist" / "index.js"), "--stdio")
    async with running(config) as server:
        info = server.info
        assert info is not None and info.has_ui and info.rejected_tools == ()
        with_view = [tool for tool in info.tools if tool.ui_resource_uri]
        assert with_view
        resource = await server.read_resource(
            with_view[0].ui_resource_uri or "", max_bytes=4 * 1024 * 1024
        )
    assert resource.mime_type == UI_MIME_TYPE
    assert resource.text is not None and "<html" in resource.text.lower()
