"""What a MiniApp may ask (``AppApi``), on a real store: each method answers once, bad
input gets a stable code and changes nothing, and an instance can reach only its own
calls, state and inbox."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.runtime import classify, preferences
from lineup.runtime.apps.app_api import MAX_STATE_BYTES, METHODS, AppApi, AppApiError
from lineup.runtime.apps.registry import AppRegistry
from lineup.runtime.apps.tool_calls import State
from lineup.runtime.capabilities.gateway import CapabilityGateway
from tests.formats.test_bundle import BUNDLE
from tests.runtime.apps.test_router import C1, SCOPES, RouterHarness, launched
from tests.support.interactions import envelope
from tests.support.receiving import apply_received


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[RouterHarness]:
    harness = RouterHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    yield harness
    await harness.close()


@pytest.fixture
async def api(h: RouterHarness) -> AppApi:
    registry = AppRegistry(h.db, clock=h.clock)
    installed = await registry.install_bundle(BUNDLE, enable=True)
    h.revision = installed.inventory.revision
    return AppApi(h.db, h.k, h.r, CapabilityGateway(h.db, clock=h.clock), clock=h.clock)


async def refused(api: AppApi, instance_id: str, method: str, params: Any) -> str:
    with pytest.raises(AppApiError) as caught:
        await api.call(instance_id, method, params)
    return caught.value.code


async def test_every_method_is_known_and_unknown_ones_are_refused(
    h: RouterHarness, api: AppApi
) -> None:
    instance_id = await launched(h)
    assert len(METHODS) == 16
    assert await refused(api, instance_id, "tools.delete", {}) == "method_unknown"
    assert await refused(api, instance_id, "state.set", ["not", "an", "object"]) == (
        "request_invalid"
    )
    assert await refused(api, "test-app.nothing", "context.get", {}) == "app_instance_not_found"
    assert await refused(api, instance_id, "capabilities.request", {"name": "x"}) == (
        "request_invalid"  # no reason
    )


async def test_context_and_ready(h: RouterHarness, api: AppApi) -> None:
    await h.call("open", "test-app.open")
    call = await h.stored_call("open")
    assert call is not None and call.instance_id is not None
    instance_id = call.instance_id
    context = await api.call(instance_id, "context.get", {})
    assert context["instance_id"] == instance_id
    assert (context["app_id"], context["app_version"], context["app_scope"]) == (
        "dev.lineup.test-app",
        "1.0.0",
        "test-app",
    )
    assert context["conversation_id"] == C1.id
    assert context["app_session_id"] == await h.k.app_session_id(instance_id)
    assert context["state"] == "starting"
    assert context["locale"] == "en"
    assert (await api.call(instance_id, "lifecycle.ready", {}))["state"] == "foreground"
    # Ready again (a reload): nothing to do, no refusal.
    assert (await api.call(instance_id, "lifecycle.ready", {}))["state"] == "foreground"


async def test_the_context_carries_the_person_s_language_and_follows_a_change(
    h: RouterHarness, api: AppApi
) -> None:
    instance_id = await launched(h)
    db = h.db.db
    assert (await api.call(instance_id, "context.get", {}))["locale"] == "en"  # nothing known
    await db.write(preferences.set_seen_locale_txn, "zh-CN")  # the newest tab's language
    assert (await api.call(instance_id, "context.get", {}))["locale"] == "zh-CN"
    await db.write(preferences.set_locale_choice_txn, "en")  # the person's choice wins
    assert (await api.call(instance_id, "context.get", {}))["locale"] == "en"
    await db.write(preferences.set_locale_choice_txn, None)  # back to the browser's
    assert (await api.call(instance_id, "context.get", {}))["locale"] == "zh-CN"


async def test_tools_are_listed_with_arguments_answered_once_and_only_by_their_instance(
    h: RouterHarness, api: AppApi
) -> None:
    first = await launched(h, "open-1")
    await api.call(first, "tools.complete", {"call_id": "open-1", "result": {"instance_id": first}})
    await h.call("echo-1", "test-app.echo", {"text": "hi"})
    listed = await api.call(first, "tools.list", {})
    assert [(c["call_id"], c["tool"], c["arguments"], c["state"]) for c in listed] == [
        ("echo-1", "test-app.echo", {"text": "hi"}, "running")
    ]
    assert listed == await api.call(first, "tools.list", {})  # listed again until answered
    second = await launched(h, "open-2")
    other = await api.call(second, "tools.list", {})
    assert [(c["call_id"], c["tool"], c["state"]) for c in other] == [
        ("open-2", "test-app.open", "running")
    ]
    assert other[0]["deadline"] is not None  # the launch tool has a timeout_ms
    # Another instance cannot touch echo-1.
    assert await refused(api, second, "tools.complete", {"call_id": "echo-1", "result": {}}) == (
        "call_not_found"
    )
    assert await refused(api, first, "tools.progress", {"call_id": "echo-1", "current": "x"}) == (
        "request_invalid"
    )
    assert (await api.call(first, "tools.progress", {"call_id": "echo-1", "current": 1}))[
        "accepted"
    ]
    assert await refused(api, first, "tools.complete", {"call_id": "echo-1", "result": {}}) == (
        "tool_output_invalid"
    )
    done = await api.call(first, "tools.complete", {"call_id": "echo-1", "result": {"text": "hi"}})
    assert done == {"accepted": True}
    assert await refused(api, first, "tools.cancel", {"call_id": "echo-1"}) == (
        "call_already_final"
    )
    assert await api.call(first, "tools.list", {}) == []
    call = await h.stored_call("echo-1")
    assert call is not None and call.state is State.SUBMITTED
    assert h.results_for("echo-1") == [
        {"call_id": "echo-1", "status": "completed", "result": {"text": "hi"}}
    ]
    await h.call("echo-2", "test-app.echo", {"text": "no"})
    await api.call(second, "tools.fail", {"call_id": "open-2", "code": "nope"})
    assert await refused(api, first, "tools.fail", {"call_id": "echo-2", "code": ""}) == (
        "request_invalid"
    )


async def test_state_is_per_instance_bounded_and_readable_by_a_continuation(
    h: RouterHarness, api: AppApi
) -> None:
    first = await launched(h, "open-1")
    assert await api.call(first, "state.get", {}) == {}
    assert await api.call(first, "state.set", {"state": {"tasks": ["a", "b"]}}) == {"bytes": 19}
    assert await api.call(first, "state.get", {}) == {"tasks": ["a", "b"]}
    big = {"blob": "x" * MAX_STATE_BYTES}
    assert await refused(api, first, "state.set", {"state": big}) == "state_too_large"
    assert await refused(api, first, "state.set", {"state": [1, 2]}) == "request_invalid"
    assert await refused(api, first, "state.get", {"of": "someone"}) == "request_invalid"
    assert await api.call(first, "state.get", {}) == {"tasks": ["a", "b"]}  # unchanged

    second = await launched(h, "open-2")
    assert await api.call(second, "state.get", {}) == {}  # its own, empty
    assert await api.call(second, "state.get", {"of": "continued"}) == {}  # continues nothing
    assert (await h.k.request_close(first)).accepted
    assert (await h.k.closed(first)).accepted
    continued = await h.k.continue_work(first)
    assert continued.record is not None
    third = continued.record.instance_id
    # Continue again (a second click, another tab): the same instance, no other one.
    again = await h.k.continue_work(first)
    assert again.accepted and again.record is not None
    assert again.record.instance_id == third
    assert [r.instance_id for r in h.k.instances().live() if r.parent_instance_id == first] == [
        third
    ]
    assert h.k.instances().focus == third
    assert await api.call(third, "state.get", {"of": "continued"}) == {"tasks": ["a", "b"]}
    assert await api.call(third, "state.get", {}) == {}
    assert await refused(api, first, "state.get", {}) == "app_instance_not_found"  # stopped


async def test_the_inbox_holds_this_app_s_envelopes_and_acks_only_its_own(
    h: RouterHarness, api: AppApi
) -> None:
    instance_id = await launched(h)
    assert await api.call(instance_id, "inbox.list", {}) == []
    assert await refused(api, instance_id, "inbox.acknowledge", {"inbox_id": 1}) == (
        "inbox_not_found"
    )
    assert await refused(api, instance_id, "inbox.acknowledge", {"inbox_id": True}) == (
        "request_invalid"
    )


async def test_an_envelope_for_the_app_s_scope_is_listed_until_acknowledged(
    h: RouterHarness, api: AppApi
) -> None:
    instance_id = await launched(h)
    body = msgspec.json.decode(
        envelope(C1.id, "lineup.v1.message", {"text": "for the app"}, sender_id=C1.agent_id)
    )
    body["target"] = {"app_scope": "test-app"}
    frame = wire.EnvelopeFrame(
        conversation_id=C1.id,
        seq=h.next_seq(C1.id),
        envelope=msgspec.Raw(msgspec.json.encode(body)),
    )
    await apply_received(h.db, [classify(frame, SCOPES)])
    [item] = await api.call(instance_id, "inbox.list", {})
    assert (item["envelope_id"], item["type"], item["payload"]) == (
        body["id"],
        "lineup.v1.message",
        {"text": "for the app"},
    )
    assert await api.call(instance_id, "inbox.acknowledge", {"inbox_id": item["inbox_id"]}) == {
        "acknowledged": True
    }
    assert await api.call(instance_id, "inbox.list", {}) == []


def test_the_shell_relays_exactly_the_runtime_s_methods() -> None:
    # The shell checks the method before a request leaves the frame's mount; the two
    # lists are written in two languages and must not drift apart.
    source = (
        Path(__file__).parents[3] / "src" / "lineup" / "host" / "static" / "surface_host.js"
    ).read_text()
    block = source.split("export const APP_METHODS = new Set([", 1)[1].split("]);", 1)[0]
    assert set(re.findall(r'"([a-zA-Z.]+)"', block)) == METHODS
