"""``mcp_view_document``: the page and headers of an MCP view's surface, without a
browser (``tests/browser/test_mcp_view_bridge.py`` runs them in Chromium)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from lineup.host.surface import SurfaceOrigin, surface_headers
from lineup.host.surface.document import SurfaceRejected, SurfaceRejectionCode
from lineup.host.surface.mcp_document import (
    HOST_CAPABILITIES,
    MAX_VIEW_BYTES,
    STYLE_VARIABLES,
    DeclaredDomains,
    declared_domains,
    mcp_view_document,
)

SHELL = "http://127.0.0.1:8000"
_BOOT = re.compile(r"const BOOT = (\{.*?\});\n", re.S)


def build(view: str = "<p>hi</p>", meta: Any = None, **options: Any) -> tuple[str, dict[str, str]]:
    page, headers = mcp_view_document(
        view,
        meta,
        instance_id="inst-1",
        mount_id="abc123",
        shell_origins=[SHELL],
        name="Weather",
        **options,
    )
    return page.decode("utf-8"), headers


def boot(page: str) -> dict[str, Any]:
    found = _BOOT.search(page)
    assert found is not None
    value = json.loads(found[1])
    assert isinstance(value, dict)
    return value


def test_the_page_carries_the_view_as_data_and_the_surface_headers() -> None:
    view = "<script>alert('</script><!-- x')</script><p>&amp;</p>"
    page, headers = build(
        view, lang="zh-CN", theme="dark", tool={"name": "get-time"}, call_id="call-1"
    )
    assert headers == surface_headers([SHELL])
    assert headers["Connection-Allowlist"] == "()"
    assert page.startswith('<!doctype html>\n<html lang="zh-CN">')
    # The view's text is inside a JSON string: nothing in it can end our <script>.
    assert page.count("</script>") == 2 and "<!--" not in page
    data = boot(page)
    assert data["view_html"] == view
    assert (data["instance_id"], data["mount_id"]) == ("inst-1", "abc123")
    assert data["title"] == "应用界面\uff1aWeather"  # a full-width colon
    assert data["host_info"] == {"name": "LineUp", "version": "1"}
    assert data["host_capabilities"] == HOST_CAPABILITIES
    assert data["host_context"] == {
        "theme": "dark",
        "locale": "zh-CN",
        "displayMode": "inline",
        "availableDisplayModes": ["inline"],
        "platform": "web",
        "toolInfo": {"tool": {"name": "get-time"}, "id": "call-1"},
    }
    # The MCP bridge's listener is in place before bridge.js says "ready".
    assert page.index("lineup.mcp.v1") < page.index('type: "ready"')
    assert "lineup-mcp-notice" not in page.split("<body>", 1)[1]


def test_declared_domains_keep_only_single_source_expressions() -> None:
    meta = {
        "csp": {
            "connectDomains": ["https://api.example.com", "https://a.b; script-src *", 7],
            "resourceDomains": [
                "https://*.cdn.example",
                "'unsafe-eval'",
                "https://api.example.com",
            ],
            "frameDomains": "https://not-a-list.example",
            "baseUriDomains": ["https://base.example", "a b"],
        },
        "prefersBorder": True,
    }
    declared = declared_domains(meta)
    assert declared == DeclaredDomains(
        connect=("https://api.example.com",),
        resource=("https://*.cdn.example", "https://api.example.com"),
        frame=(),
        base_uri=("https://base.example",),
    )
    assert declared.all == (
        "https://api.example.com",
        "https://*.cdn.example",
        "https://base.example",
    )
    for nothing in (None, {}, {"csp": None}, {"csp": ["x"]}, "csp"):
        assert declared_domains(nothing) == DeclaredDomains()


def test_a_view_that_names_domains_gets_a_notice_in_the_person_s_language() -> None:
    domains = [f"https://d{i}.example" for i in range(7)] + ['https://x.example/"<b>']
    page, _ = build(meta={"csp": {"connectDomains": domains}}, lang="en")
    body = page.split("<body>", 1)[1]
    notice = re.search(r'<p id="lineup-mcp-notice" role="status">(.*?)</p>', body)
    assert notice is not None
    assert notice[1].startswith("This app asked to reach https://d0.example, ")
    assert "https://d4.example, …." in notice[1] and "d5" not in notice[1]
    page, _ = build(meta={"csp": {"resourceDomains": ["https://x.example/<b>"]}}, lang="zh-CN")
    body = page.split("<body>", 1)[1]
    assert "https://x.example/&lt;b&gt;" in body and "<b>" not in body
    assert "无法访问互联网" in body


def test_too_large_or_broken_views_and_bad_arguments_are_refused() -> None:
    with pytest.raises(SurfaceRejected) as large:
        build("x" * (MAX_VIEW_BYTES + 1))
    assert large.value.code is SurfaceRejectionCode.SURFACE_TOO_LARGE
    build("x" * MAX_VIEW_BYTES)
    with pytest.raises(SurfaceRejected) as broken:
        build("\ud800")
    assert broken.value.code is SurfaceRejectionCode.SURFACE_INVALID
    with pytest.raises(ValueError, match="instance_id"):
        mcp_view_document(
            "", None, instance_id="bad id", mount_id="m", shell_origins=[SHELL], name="x"
        )
    with pytest.raises(ValueError, match="lang"):
        build(lang="en US")
    with pytest.raises(ValueError, match="theme"):
        build(theme="blue")


def test_the_origin_mounts_an_mcp_view_once_and_logs_no_contents(
    caplog: pytest.LogCaptureFixture,
) -> None:
    origin = SurfaceOrigin([SHELL], port=8124)
    with caplog.at_level(logging.INFO, logger="lineup.host.surface"):
        mount = origin.mount_mcp_view(
            "inst-9", "<p>secret-view-4c1d</p>", {"csp": {}}, name="Weather", lang="en"
        )
    host = f"{mount.host_name}:8124"
    first = origin.respond("GET", host, "/", b"")
    assert first.status == 200
    data = boot(first.body.decode("utf-8"))
    assert (data["instance_id"], data["mount_id"]) == ("inst-9", mount.mount_id)
    assert data["view_html"] == "<p>secret-view-4c1d</p>"
    assert data["host_context"]["styles"] == {"variables": dict(STYLE_VARIABLES)}
    assert origin.respond("GET", host, "/", b"").status == 410
    assert "secret-view" not in caplog.text and mount.host_name not in caplog.text
    assert "mcp view mounted" in caplog.text
    with pytest.raises(SurfaceRejected):
        origin.mount_mcp_view("inst-9", "x" * (MAX_VIEW_BYTES + 1), None, name="Weather")
