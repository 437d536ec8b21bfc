"""Cross-field rules of the payloads: an inconsistent payload can be neither decoded
nor constructed."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.protocol import ErrorCode, Rejection, Target, decode, payloads

from .examples import (
    DROP,
    INTEGRITY,
    INTERACTIVE_TOOL,
    LAUNCH_TOOL,
    accepted,
    dumps,
    envelope,
    payload,
    rejected,
)

MALFORMED = ErrorCode.MALFORMED_ENVELOPE
FAILURES = ["failed", "cancelled", "rejected", "expired", "dismissed"]
APP_FAILURES = ["rejected", "cancelled", "expired", "unsupported", "failed"]
ERROR = {"code": "app_closed", "message": "The app was closed"}


def _tool_result(**changes: Any) -> dict[str, Any]:
    return envelope("lineup.v1.tool.result", payload("lineup.v1.tool.result", **changes))


def _app_result(**changes: Any) -> dict[str, Any]:
    return envelope("lineup.v1.app.result", payload("lineup.v1.app.result", **changes))


# --- tool.result -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["completed", "accepted"])
def test_successful_tool_result_may_carry_a_result_but_no_error(status: str) -> None:
    accepted(_tool_result(status=status))
    accepted(_tool_result(status=status, result=DROP))
    rejected(_tool_result(status=status, error=ERROR), MALFORMED, "$.payload")


@pytest.mark.parametrize("status", FAILURES)
def test_failed_tool_result_needs_an_error_and_no_result(status: str) -> None:
    accepted(_tool_result(status=status, result=DROP, error=ERROR))
    rejected(_tool_result(status=status, result=DROP), MALFORMED, "$.payload")
    rejected(_tool_result(status=status, error=ERROR), MALFORMED, "$.payload")


def test_tool_result_rule_holds_for_constructed_payloads() -> None:
    with pytest.raises(ValueError, match="needs an `error`"):
        payloads.ToolResult(call_id="c", status="failed")
    ok = payloads.ToolResult(
        call_id="c", status="cancelled", error=payloads.ErrorInfo(code="app_closed", message="")
    )
    assert ok.result is None


def test_tool_result_error_code_follows_the_grammar() -> None:
    bad = {"code": "App Closed", "message": "x"}
    rejected(
        _tool_result(status="failed", result=DROP, error=bad), MALFORMED, "$.payload.error.code"
    )


# --- app.result ------------------------------------------------------------------------------


def test_completed_app_result_carries_no_error() -> None:
    accepted(_app_result(status="completed"))
    accepted(_app_result(status="completed", result=DROP))
    rejected(_app_result(status="completed", error=ERROR), MALFORMED, "$.payload")


@pytest.mark.parametrize("status", APP_FAILURES)
def test_other_app_results_carry_no_result(status: str) -> None:
    accepted(_app_result(status=status, result=DROP))
    accepted(_app_result(status=status, result=DROP, error=ERROR))
    rejected(_app_result(status=status), MALFORMED, "$.payload")


# --- tool descriptors ------------------------------------------------------------------------


def _inventory(*tools: dict[str, Any]) -> dict[str, Any]:
    kind = "lineup.v1.client.inventory"
    return envelope(kind, payload(kind, tools=list(tools)))


def test_interactive_tool_has_no_target() -> None:
    accepted(_inventory(INTERACTIVE_TOOL))
    with_target = {**INTERACTIVE_TOOL, "target": LAUNCH_TOOL["target"]}
    rejected(_inventory(INTERACTIVE_TOOL, with_target), MALFORMED, "$.payload.tools[1]")


def test_interactive_tool_has_no_timeout() -> None:
    rejected(_inventory({**INTERACTIVE_TOOL, "timeout_ms": 1000}), MALFORMED, "$.payload.tools[0]")


@pytest.mark.parametrize("handling", ["direct", "launch", "foreground", "operation"])
def test_app_tools_need_a_target(handling: str) -> None:
    tool = {**LAUNCH_TOOL, "handling": handling}
    accepted(_inventory(tool))
    del tool["target"]
    rejected(_inventory(tool), MALFORMED, "$.payload.tools[0]")


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"version": 2}, "$.payload.tools[0].version"),
        ({"handling": "remote"}, "$.payload.tools[0].handling"),
        ({"timeout_ms": 0}, "$.payload.tools[0].timeout_ms"),
        ({"timeout_ms": 86_400_001}, "$.payload.tools[0].timeout_ms"),
        ({"input_schema": DROP}, "$.payload.tools[0]"),
        ({"permissions": ["Not A Capability"]}, "$.payload.tools[0].permissions[0]"),
        (
            {"target": {"app_scope": "x", "requires_foreground": True}},
            "$.payload.tools[0].target",
        ),
    ],
)
def test_tool_descriptor_fields(change: dict[str, Any], path: str) -> None:
    tool = dict(LAUNCH_TOOL)
    for key, value in change.items():
        if value is DROP:
            del tool[key]
        else:
            tool[key] = value
    rejected(_inventory(tool), MALFORMED, path)


# --- the person's language in the inventory --------------------------------------------------


@pytest.mark.parametrize("tag", ["en", "zh-CN", "zh-Hans-CN", "de-CH-1901", "x" * 2 + "-a" * 16])
def test_inventory_locale_is_a_language_tag(tag: str) -> None:
    inventory = _inventory(INTERACTIVE_TOOL)
    inventory["payload"]["locale"] = tag
    decoded = accepted(inventory)
    assert isinstance(decoded.payload, payloads.ClientInventory)
    assert decoded.payload.locale == tag


def test_inventory_without_locale_is_an_older_runtimes() -> None:
    decoded = accepted(_inventory(INTERACTIVE_TOOL))
    assert isinstance(decoded.payload, payloads.ClientInventory)
    assert decoded.payload.locale is None


@pytest.mark.parametrize(
    "tag",
    [
        "",
        "z",
        "zh_CN",
        "zh-",
        "-CN",
        "zh--CN",
        "zh-CN\n",
        "中文",
        "zh-CN-" + "a" * 9,
        "en" + "-a" * 17,
        7,
    ],
)
def test_inventory_locale_refuses_what_is_no_language_tag(tag: object) -> None:
    inventory = _inventory(INTERACTIVE_TOOL)
    inventory["payload"]["locale"] = tag
    rejected(inventory, MALFORMED, "$.payload.locale")


# --- surfaces --------------------------------------------------------------------------------


def _open(app: dict[str, Any]) -> dict[str, Any]:
    return envelope("lineup.v1.ui.open", payload("lineup.v1.ui.open", app=app))


BASE_APP = {"id": "com.lineup.weather", "version": "1.0.0"}


def test_production_open_names_a_surface() -> None:
    accepted(_open({**BASE_APP, "surface": "dashboard"}))
    rejected(_open(BASE_APP), MALFORMED, "$.payload.app")


@pytest.mark.parametrize("part", ["html", "css", "js"])
def test_inline_bundle_needs_integrity(part: str) -> None:
    accepted(_open({**BASE_APP, part: "x", "integrity": INTEGRITY}))
    accepted(_open({**BASE_APP, part: "", "integrity": INTEGRITY}))
    rejected(_open({**BASE_APP, part: "x"}), MALFORMED, "$.payload.app")
    rejected(_open({**BASE_APP, "surface": "main", part: "x"}), MALFORMED, "$.payload.app")


def test_ui_patch_cannot_carry_code() -> None:
    kind = "lineup.v1.ui.patch"
    rejected(envelope(kind, payload(kind, html="<script>")), MALFORMED, "$.payload")
    rejected(envelope(kind, payload(kind, state=DROP)), MALFORMED, "$.payload")


# --- progress --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lineup.v1.progress", "lineup.v1.tool.progress"])
def test_progress_current_is_at_most_total(kind: str) -> None:
    accepted(envelope(kind, payload(kind, current=10, total=10)))
    accepted(envelope(kind, payload(kind, current=10**6, total=DROP)))
    accepted(envelope(kind, payload(kind, current=0.5, total=0.5)))
    rejected(envelope(kind, payload(kind, current=11, total=10)), MALFORMED, "$.payload")


@pytest.mark.parametrize("kind", ["lineup.v1.progress", "lineup.v1.tool.progress"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("current", -1), ("total", 0), ("total", -5), ("current", "3"), ("current", None)],
)
def test_progress_numbers(kind: str, field: str, value: Any) -> None:
    rejected(envelope(kind, payload(kind, **{field: value})), MALFORMED, f"$.payload.{field}")


@pytest.mark.parametrize("literal", [b"1e400", b"-1e400", b"NaN", b"Infinity"])
def test_progress_numbers_must_be_finite(literal: bytes) -> None:
    kind = "lineup.v1.progress"
    data = dumps(envelope(kind, payload(kind, current="LITERAL", total=DROP)))
    result = decode(data.replace(b'"LITERAL"', literal))
    assert isinstance(result, Rejection)
    assert result.code is MALFORMED


# --- target ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        {"app_scope": "task-dashboard"},
        {"instance_id": "task-dashboard.01"},
        {"app_scope": "task-dashboard", "instance_id": "task-dashboard.01"},
        None,
    ],
)
def test_target_names_a_scope_or_an_instance(target: Any) -> None:
    accepted(envelope("lineup.v1.message", target=target))


@pytest.mark.parametrize(
    "target", [{}, {"app_scope": None}, {"app_scope": None, "instance_id": None}]
)
def test_empty_target_is_malformed(target: Any) -> None:
    rejected(envelope("lineup.v1.message", target=target), MALFORMED, "$.target")


def test_target_rule_holds_for_constructed_targets() -> None:
    with pytest.raises(ValueError, match="`target` names"):
        Target()


# --- unknown fields --------------------------------------------------------------------------


def test_unknown_fields_are_refused_at_every_level(kind: str, example: dict[str, Any]) -> None:
    rejected({**example, "extra": 1}, MALFORMED, "$")
    rejected({**example, "payload": {**example["payload"], "extra": 1}}, MALFORMED, "$.payload")
    rejected({**example, "sender": {**example["sender"], "extra": 1}}, MALFORMED, "$.sender")
