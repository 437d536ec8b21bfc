"""The surface origin over real sockets: uvicorn on loopback, httpx as the client, the
``Host`` header set as Chromium would set it for ``m-<label>.localhost``."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from lineup.host.surface import (
    PERMISSIONS_POLICY,
    Mount,
    SurfaceDocument,
    SurfaceOrigin,
    SurfaceRejected,
    SurfaceRejectionCode,
    frame_source,
    surface_csp,
    surface_headers,
)
from lineup.protocol.fields import MAX_BUNDLE_BYTES
from tests.host.surface.listener import serving

SHELL = "http://127.0.0.1:8123"
SECRET_HTML = "<p>secret-html-7f3a</p>"
SECRET_CSS = "p { color: rgb(1, 2, 3); } /* secret-css-91c2 */"
SECRET_JS = "LineUpSurface.event('hello', {marker: 'secret-js-5be0'});"


def document(
    html: str = SECRET_HTML, css: str = SECRET_CSS, js: str = SECRET_JS
) -> SurfaceDocument:
    return SurfaceDocument(
        app_id="com.example.todo", app_version="1.0.0", surface_id="main", html=html, css=css, js=js
    )


@dataclass
class Served:
    origin: SurfaceOrigin
    port: int
    http: httpx.AsyncClient

    async def get(self, host: str, path: str = "/", method: str = "GET") -> httpx.Response:
        return await self.http.request(method, path, headers={"Host": host})

    async def fetch(self, mount: Mount, method: str = "GET") -> httpx.Response:
        return await self.get(f"{mount.host_name}:{self.port}", method=method)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    origin = SurfaceOrigin([SHELL])
    async with serving(origin.asgi()) as port:
        origin.bind_port(port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            yield Served(origin, port, http)


def assert_surface_headers(response: httpx.Response) -> None:
    for name, value in surface_headers([SHELL]).items():
        assert response.headers.get(name) == value, name


async def test_every_status_carries_the_surface_headers(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    responses = [
        await served.fetch(mount),  # 200
        await served.fetch(mount),  # 410
        await served.get("m-0123.localhost:1"),  # 404
        await served.fetch(mount, method="POST"),  # 405
        await served.fetch(mount, method="HEAD"),  # 410 again, no body
    ]
    assert [r.status_code for r in responses] == [200, 410, 404, 405, 410]
    for response in responses:
        assert_surface_headers(response)
    assert responses[3].headers["allow"] == "GET, HEAD"


def test_the_headers_hold_the_issue_s_minimum_policy() -> None:
    headers = surface_headers([SHELL, "http://localhost:8123"])
    csp = headers["Content-Security-Policy"]
    directives = [part.strip() for part in csp.split(";")]
    for required in (
        "default-src 'none'",
        "connect-src 'none'",
        "img-src data: blob:",
        "style-src 'unsafe-inline'",
        "script-src 'unsafe-inline'",
        "form-action 'none'",
        "base-uri 'none'",
        f"frame-ancestors {SHELL} http://localhost:8123",
    ):
        assert required in directives
    assert headers["Connection-Allowlist"] == "()"
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Cache-Control"] == "no-store"
    assert "camera=()" in PERMISSIONS_POLICY
    assert "clipboard-write=()" in PERMISSIONS_POLICY
    assert csp == surface_csp([SHELL, "http://localhost:8123"])


@pytest.mark.parametrize(
    "bad", ["", "http://a b", "http://x; script-src *", "http://x/path", "javascript:x", "*"]
)
def test_a_shell_origin_that_could_bend_the_csp_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="origin"):
        surface_headers([bad])


def test_frame_source_names_every_mount_host_on_the_port_and_nothing_else() -> None:
    assert frame_source(41234) == "http://*.localhost:41234"
    with pytest.raises(ValueError, match="port"):
        frame_source(0)


async def test_the_host_header_picks_the_mount(served: Served) -> None:
    first = served.origin.mount("inst-1", document(html="<p>first</p>"))
    second = served.origin.mount("inst-2", document(html="<p>second</p>"))
    assert "<p>second</p>" in (await served.fetch(second)).text
    assert "<p>first</p>" in (await served.fetch(first)).text


@pytest.mark.parametrize(
    "host",
    [
        None,  # the right label on another port, filled in below
        "127.0.0.1:{port}",
        "localhost:{port}",
        "{label}",
        "{label}.:{port}",
        "x.{label}:{port}",
        "m-00000000000000000000000000000000.localhost:{port}",
    ],
)
async def test_a_host_that_names_no_mount_gets_404(served: Served, host: str | None) -> None:
    mount = served.origin.mount("inst-1", document())
    pattern = host or "{label}:1"
    response = await served.get(pattern.format(label=mount.host_name, port=served.port))
    assert response.status_code == 404
    assert response.content == b""
    assert (await served.fetch(mount)).status_code == 200  # not spent by the miss


@pytest.mark.parametrize("path", ["/index.html", "/favicon.ico", "/a/", "/?x=1"])
async def test_only_the_root_path_serves_a_mount(served: Served, path: str) -> None:
    mount = served.origin.mount("inst-1", document())
    response = await served.get(f"{mount.host_name}:{served.port}", path)
    assert response.status_code == 404
    assert (await served.fetch(mount)).status_code == 200


async def test_a_document_is_served_once_then_gone(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    assert (await served.fetch(mount, method="HEAD")).status_code == 200  # looking is free
    first = await served.fetch(mount)
    again = await served.fetch(mount)
    assert first.status_code == 200
    assert SECRET_HTML in first.text
    assert again.status_code == 410
    assert again.content == b""


async def test_an_unmounted_document_is_unknown(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    assert served.origin.unmount(mount.mount_id)
    assert not served.origin.unmount(mount.mount_id)
    assert (await served.fetch(mount)).status_code == 404


async def test_other_methods_get_405_and_do_not_spend_the_document(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        response = await served.fetch(mount, method=method)
        assert response.status_code == 405
        assert response.content == b""
    assert (await served.fetch(mount)).status_code == 200


async def test_a_websocket_upgrade_is_refused(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    response = await served.http.get(
        "/",
        headers={
            "Host": f"{mount.host_name}:{served.port}",
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        },
    )
    assert response.status_code == 403


def test_a_bundle_over_160_kib_is_refused_as_too_large() -> None:
    origin = SurfaceOrigin([SHELL], port=4000)
    limit = document(html="x" * (MAX_BUNDLE_BYTES - len(SECRET_CSS) - len(SECRET_JS)))
    origin.mount("inst-1", limit)  # exactly at the limit: fine
    over = document(html="é" * (MAX_BUNDLE_BYTES // 2))  # 2 bytes each in UTF-8
    with pytest.raises(SurfaceRejected) as caught:
        origin.mount("inst-1", over)
    assert caught.value.code is SurfaceRejectionCode.SURFACE_TOO_LARGE
    assert str(caught.value.code) == "surface_too_large"


@pytest.mark.parametrize(
    ("part", "text"),
    [
        ("js", "const s = '</script><script>alert(1)';"),
        ("js", "const s = '</SCRIPT >';"),
        ("js", "const s = '<!--<script>';"),
        ("js", "const s = '<ScRiPt>';"),
        ("css", "p { color: red } </style><script>alert(1)</script>"),
        ("css", "p { color: red } </STYLE"),
        ("html", "\udc00"),  # a lone surrogate has no UTF-8 form
    ],
)
def test_css_or_js_that_would_break_out_of_its_element_is_refused(part: str, text: str) -> None:
    origin = SurfaceOrigin([SHELL], port=4000)
    parts = {"html": SECRET_HTML, "css": SECRET_CSS, "js": SECRET_JS, part: text}
    with pytest.raises(SurfaceRejected) as caught:
        origin.mount("inst-1", document(**parts))
    assert caught.value.code is SurfaceRejectionCode.SURFACE_INVALID
    assert str(caught.value.code) == "surface_invalid"
    assert text not in str(caught.value)


def test_mount_host_names_are_unique_and_unguessable() -> None:
    origin = SurfaceOrigin([SHELL], port=4000)
    mounts = [origin.mount("inst-1", document()) for _ in range(200)]
    labels = {m.host_name.removesuffix(".localhost") for m in mounts}
    assert len(labels) == 200
    assert len({m.mount_id for m in mounts}) == 200
    for mount in mounts:
        assert re.fullmatch(r"m-[0-9a-f]{32}\.localhost", mount.host_name)  # 128 random bits
        assert mount.url == f"http://{mount.host_name}:4000/"
        assert mount.mount_id not in mount.host_name


def test_mounting_needs_the_port() -> None:
    origin = SurfaceOrigin([SHELL])
    with pytest.raises(RuntimeError, match="bind_port"):
        origin.mount("inst-1", document())
    origin.bind_port(4000)
    origin.bind_port(4000)
    with pytest.raises(RuntimeError, match="already bound"):
        origin.bind_port(4001)


async def test_the_page_runs_the_bridge_before_any_app_code(served: Served) -> None:
    mount = served.origin.mount("inst-1", document())
    page = (await served.fetch(mount)).text
    assert page.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in page
    bridge = page.index("LineUpSurface")
    assert bridge < page.index("<style>") < page.index(SECRET_HTML) < page.index(SECRET_JS)
    assert page.index("<script>") < page.index("<style>")
    assert f'{{"instance_id":"inst-1","mount_id":"{mount.mount_id}"}}' in page
    assert "__LINEUP_SURFACE_BOOT__" not in page


async def test_the_page_is_in_the_person_s_language_when_told(served: Served) -> None:
    told = served.origin.mount("inst-1", document(), app=True, lang="zh-CN")
    assert '<html lang="zh-CN"><head>' in (await served.fetch(told)).text
    untold = served.origin.mount("inst-2", document())
    assert "<html><head>" in (await served.fetch(untold)).text
    with pytest.raises(ValueError, match="lang"):
        served.origin.mount("inst-3", document(), lang='en"><script>alert(1)</script>')


def test_ids_that_are_not_protocol_ids_are_the_caller_s_bug() -> None:
    origin = SurfaceOrigin([SHELL], port=4000)
    with pytest.raises(ValueError, match="instance_id"):
        origin.mount("</script><script>alert(1)//", document())


def test_a_document_s_repr_carries_no_contents() -> None:
    text = repr(document())
    assert "secret" not in text
    assert "com.example.todo" in text


async def test_logs_carry_ids_codes_and_sizes_but_no_contents(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lineup.host.surface")
    mount = served.origin.mount("inst-1", document())
    await served.fetch(mount)
    await served.fetch(mount)
    with pytest.raises(SurfaceRejected):
        served.origin.mount("inst-2", document(js="'</script>' // secret-js-5be0"))
    served.origin.unmount(mount.mount_id)
    records = [r for r in caplog.records if r.name == "lineup.host.surface"]
    assert [r.getMessage() for r in records] == [
        "surface mounted",
        "surface served",
        "surface document requested again",
        "surface refused",
        "surface unmounted",
    ]
    assert records[3].__dict__["code"] == "surface_invalid"
    assert records[0].__dict__["mount_id"] == mount.mount_id
    dumped = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    for secret in ("secret-html", "secret-css", "secret-js", mount.host_name):
        assert secret not in dumped
