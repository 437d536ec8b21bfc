"""The AppServer's log holds ids, types, codes and sizes: never bodies or secrets."""

from __future__ import annotations

import httpx

from tests.conftest import make_pair
from tests.support.appserver import AppServerProcess
from tests.support.clients import login


async def test_log_never_contains_bodies_tokens_keys_or_passwords(
    own_appserver: AppServerProcess,
) -> None:
    password = "pw-MARKER-5a1f"
    own_appserver.add_user("logger", password)
    user = await login(own_appserver.url, "logger", password)
    pair = await make_pair(own_appserver)
    body_marker = "body-MARKER-77c3"
    await pair.user.send_text(pair.conversation_id, body_marker)
    await pair.agent.send_text(pair.conversation_id, f"re: {body_marker}")
    # Refused envelopes are logged too (with their code): still no content.
    bad = pair.agent.envelope(pair.conversation_id, text=body_marker, envelope_id="x y")
    assert (await pair.agent.post(pair.conversation_id, bad)).status_code == 400
    async with httpx.AsyncClient(base_url=own_appserver.url) as http:
        await http.post("/v1/login", json={"username": "logger", "password": "wrong-MARKER-9d"})
    async with pair.agent.stream() as stream:
        await stream.subscribe({pair.conversation_id: 0})
        await stream.send(pair.agent.envelope(pair.conversation_id, text=body_marker))
        await stream.next()
    own_appserver.stop()  # flush everything

    log = own_appserver.log_text()
    assert "envelope refused" in log  # the log is not simply empty
    assert "code=malformed_envelope" in log
    for secret in (
        password,
        "wrong-MARKER-9d",
        body_marker,
        user.secret,
        pair.user.secret,
        pair.agent_key,
    ):
        assert secret not in log
    for api in (user, pair.user, pair.agent):
        await api.aclose()
