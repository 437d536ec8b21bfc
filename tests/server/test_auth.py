"""Login, bearer tokens, agent keys: real HTTP against a real AppServer process."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.clients import login


async def test_login_returns_a_token_that_identifies_the_user(appserver: AppServerProcess) -> None:
    user_id = appserver.add_user("alice-login")
    api = await login(appserver.url, "alice-login")
    response = await api.http.get("/v1/me")
    assert response.status_code == 200
    assert response.json() == {"kind": "user", "id": user_id}
    assert api.secret.startswith("lut_")
    await api.aclose()


async def test_wrong_password_and_unknown_user_get_the_same_unauthorized(
    appserver: AppServerProcess,
) -> None:
    appserver.add_user("bob-login")
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        wrong = await http.post("/v1/login", json={"username": "bob-login", "password": "nope"})
        unknown = await http.post("/v1/login", json={"username": "nobody", "password": "nope"})
    for response in (wrong, unknown):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    assert wrong.json() == unknown.json()


async def test_login_body_is_validated(appserver: AppServerProcess) -> None:
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        for body in (
            b"not json",
            b'{"username": "x"}',
            b'{"username": "x y", "password": "p"}',
            b'{"username": "x\\n", "password": "p"}',
        ):
            response = await http.post("/v1/login", content=body)
            assert response.status_code == 400
            assert response.json()["error"]["code"] == "invalid_request"


async def test_logout_revokes_the_token(appserver: AppServerProcess) -> None:
    appserver.add_user("carol-login")
    api = await login(appserver.url, "carol-login")
    assert (await api.http.post("/v1/logout")).status_code == 204
    response = await api.http.get("/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    await api.aclose()


async def test_agent_key_identifies_the_agent(pair: Pair) -> None:
    response = await pair.agent.http.get("/v1/me")
    assert response.json() == {"kind": "agent", "id": pair.agent.id}


async def test_missing_malformed_and_unknown_credentials_are_refused(
    appserver: AppServerProcess,
) -> None:
    headers_list: list[dict[str, str]] = [
        {},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer lut_not-a-real-token"},
        {"Authorization": "Bearer lak_not-a-real-key"},
        {"Authorization": "Bearer something-else"},
    ]
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        for headers in headers_list:
            response = await http.get("/v1/conversations", headers=headers)
            assert response.status_code == 401, headers
            assert response.json()["error"]["code"] == "unauthorized"


async def test_stream_handshake_without_credentials_is_refused(appserver: AppServerProcess) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    ws_url = appserver.url.replace("http://", "ws://") + "/v1/stream"
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url, additional_headers={"Authorization": "Bearer lut_bad"}):
            pass
    assert refused.value.response.status_code == 403
