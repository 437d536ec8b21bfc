"""The four standard interactions as pure protocol: arguments, answers, inventory."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.protocol import ErrorCode, Rejection, Sender, decode, encode
from lineup.protocol import interactions as ix
from lineup.protocol.envelope import ClientInventoryEnvelope
from lineup.protocol.payloads import ToolDescriptor, ToolTarget

OPTIONS = [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}, {"id": "c", "label": "C"}]
VALID: dict[str, dict[str, Any]] = {
    ix.NOTICE: {"text": "Deployed", "title": "CI", "level": "success", "toast": False},
    ix.CHOICE: {"prompt": "Pick", "options": OPTIONS},
    ix.CONFIRM: {"prompt": "Sure?", "confirm_label": "Yes", "danger": True},
    ix.INPUT: {"prompt": "Name?", "placeholder": "alice", "pattern": "[a-z]+"},
}
ANSWERABLE = (ix.CHOICE, ix.CONFIRM, ix.INPUT)


def parsed(tool: str, arguments: dict[str, Any]) -> ix.Interaction:
    result = ix.parse_arguments(tool, arguments)
    assert isinstance(result, ix.Interaction), result
    return result


def refused(tool: str, arguments: Any) -> Rejection:
    result = ix.parse_arguments(tool, arguments)
    assert isinstance(result, Rejection), f"{tool} accepted {arguments!r}"
    assert result.code == ErrorCode.TOOL_INPUT_INVALID
    assert result.path is not None and result.path.startswith("$.payload.arguments")
    assert result.message and "\n" not in result.message
    return result


def invalid_answer(interaction: ix.Interaction, answer: Any) -> Rejection:
    result = ix.check_answer(interaction, answer)
    assert isinstance(result, Rejection), f"accepted {answer!r}"
    assert result.code == ErrorCode.ANSWER_INVALID
    assert result.message and "\n" not in result.message and len(result.message) <= 1024
    return result


# --- arguments --------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ix.TOOL_IDS)
def test_each_tool_parses_its_arguments(tool: str) -> None:
    interaction = parsed(tool, VALID[tool])
    assert interaction.tool == tool
    assert interaction.kind == tool.removeprefix("interact.")
    assert type(interaction.arguments) is ix.ARGUMENT_TYPES[tool]
    assert msgspec.to_builtins(interaction.arguments) == VALID[tool]


def test_a_notice_takes_no_expiry_and_answerable_ones_default_to_15_minutes() -> None:
    assert parsed(ix.NOTICE, VALID[ix.NOTICE]).expires_in_ms is None
    for tool in ANSWERABLE:
        assert parsed(tool, VALID[tool]).expires_in_ms == 900_000
        assert parsed(tool, VALID[tool] | {"expires_in_ms": 120_000}).expires_in_ms == 120_000
    rejection = refused(ix.NOTICE, VALID[ix.NOTICE] | {"expires_in_ms": 60_000})
    assert "expires_in_ms" in rejection.message


@pytest.mark.parametrize("tool", ANSWERABLE)
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (60_000, True),
        (86_400_000, True),
        (59_999, False),
        (86_400_001, False),
        (0, False),
        (-60_000, False),
        (60_000.0, False),
        ("60000", False),
        (True, False),
    ],
)
def test_expires_in_ms_is_one_minute_to_one_day(tool: str, value: object, ok: bool) -> None:
    arguments = VALID[tool] | {"expires_in_ms": value}
    if ok:
        assert parsed(tool, arguments).expires_in_ms == value
    else:
        assert refused(tool, arguments).path == "$.payload.arguments.expires_in_ms"


def test_an_unknown_tool_is_not_advertised() -> None:
    for tool in ("interact.poll", "deploy", "interact.notice2"):
        result = ix.parse_arguments(tool, {})
        assert isinstance(result, Rejection)
        assert result.code == ErrorCode.TOOL_NOT_ADVERTISED


BAD_ARGUMENTS: list[tuple[str, Any, str]] = [
    # (tool, arguments, path)
    (ix.NOTICE, {}, "$.payload.arguments"),
    (ix.NOTICE, {"text": ""}, "$.payload.arguments.text"),
    (ix.NOTICE, {"text": "x" * 4097}, "$.payload.arguments.text"),
    (ix.NOTICE, {"text": "x", "level": "debug"}, "$.payload.arguments.level"),
    (ix.NOTICE, {"text": "x", "colour": "red"}, "$.payload.arguments"),
    (ix.NOTICE, [], "$.payload.arguments"),
    (ix.CHOICE, {"prompt": "p"}, "$.payload.arguments"),
    (ix.CHOICE, {"prompt": "p", "options": []}, "$.payload.arguments.options"),
    (ix.CHOICE, {"prompt": "p", "options": OPTIONS * 17}, "$.payload.arguments.options"),
    (
        ix.CHOICE,
        {"prompt": "p", "options": [*OPTIONS, {"id": "has space", "label": "x"}]},
        "$.payload.arguments.options[3].id",
    ),
    (
        ix.CHOICE,
        {"prompt": "p", "options": [{"id": "a", "label": ""}]},
        "$.payload.arguments.options[0].label",
    ),
    (
        ix.CHOICE,
        {"prompt": "p", "options": OPTIONS, "multiple": "yes"},
        "$.payload.arguments.multiple",
    ),
    (
        ix.CHOICE,
        {"prompt": "p", "options": OPTIONS, "multiple": True, "max_selected": 0},
        "$.payload.arguments.max_selected",
    ),
    (ix.CONFIRM, {"prompt": "p", "danger": 1}, "$.payload.arguments.danger"),
    (ix.CONFIRM, {"prompt": "p", "confirm_label": "x" * 65}, "$.payload.arguments.confirm_label"),
    (ix.CONFIRM, {"prompt": ""}, "$.payload.arguments.prompt"),
    (ix.INPUT, {"prompt": "p", "max_length": 16_385}, "$.payload.arguments.max_length"),
    (ix.INPUT, {"prompt": "p", "max_length": 0}, "$.payload.arguments.max_length"),
    (ix.INPUT, {"prompt": "p", "min_length": -1}, "$.payload.arguments.min_length"),
    (ix.INPUT, {"prompt": "p", "pattern": "a" * 257}, "$.payload.arguments.pattern"),
    (ix.INPUT, {"prompt": "p", "pattern": ""}, "$.payload.arguments.pattern"),
]


@pytest.mark.parametrize(("tool", "arguments", "path"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_with_a_path(tool: str, arguments: Any, path: str) -> None:
    assert refused(tool, arguments).path == path


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"options": [{"id": "a", "label": "A"}, {"id": "a", "label": "B"}]}, "unique"),
        ({"min_selected": 1}, "multiple"),
        ({"max_selected": 2}, "multiple"),
        ({"multiple": True, "min_selected": 3, "max_selected": 2}, "greater than `max_selected`"),
        ({"multiple": True, "min_selected": 4, "max_selected": 5}, "number of options"),
    ],
)
def test_choice_option_ids_are_unique_and_bounds_are_consistent(
    arguments: dict[str, Any], message: str
) -> None:
    rejection = refused(ix.CHOICE, {"prompt": "p", "options": OPTIONS} | arguments)
    assert message in rejection.message


def test_choice_bounds() -> None:
    assert ix.ChoiceArgs(prompt="p", options=[ix.ChoiceOption(id="a", label="A")]).bounds == (1, 1)
    multiple = parsed(ix.CHOICE, {"prompt": "p", "options": OPTIONS, "multiple": True})
    assert isinstance(multiple.arguments, ix.ChoiceArgs)
    assert multiple.arguments.bounds == (1, 3)
    ranged = parsed(
        ix.CHOICE,
        {"prompt": "p", "options": OPTIONS, "multiple": True, "min_selected": 0, "max_selected": 2},
    )
    assert isinstance(ranged.arguments, ix.ChoiceArgs)
    assert ranged.arguments.bounds == (0, 2)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # a backreference: not linear time, RE2 refuses it
        r"(?P<x>a)(?P=x)",
        r"(?=a)a",  # lookahead
        r"(?<=a)b",  # lookbehind
        r"[a-",  # not an expression at all
        r"((a{1000}){1000}){1000}",  # beyond RE2's memory budget
    ],
)
def test_input_patterns_must_compile_in_re2(pattern: str) -> None:
    rejection = refused(ix.INPUT, {"prompt": "p", "pattern": pattern})
    assert "RE2" in rejection.message
    with pytest.raises(ValueError, match="RE2"):
        ix.compile_pattern(pattern)


def test_input_min_length_cannot_exceed_max_length() -> None:
    rejection = refused(ix.INPUT, {"prompt": "p", "min_length": 11, "max_length": 10})
    assert "min_length" in rejection.message


def test_a_hostile_pattern_runs_in_linear_time() -> None:
    # Catastrophic for a backtracking engine (2^n paths); RE2 needs one pass.
    hostile = "a" * 50_000 + "!"
    compiled = ix.compile_pattern("(a+)+$")
    started = time.perf_counter()
    assert compiled.fullmatch(hostile) is None
    assert compiled.search(hostile) is None
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"took {elapsed:.2f} s"

    # And through check_answer, with the longest input an interaction can ask for.
    interaction = parsed(ix.INPUT, {"prompt": "p", "pattern": "(a+)+$", "max_length": 16_384})
    started = time.perf_counter()
    invalid_answer(interaction, {"text": "a" * 16_383 + "!"})
    assert ix.check_answer(interaction, {"text": "a" * 16_384}) == {"text": "a" * 16_384}
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"took {elapsed:.2f} s"


# --- answers ------------------------------------------------------------------------------


def choice(**extra: Any) -> ix.Interaction:
    return parsed(ix.CHOICE, {"prompt": "p", "options": OPTIONS} | extra)


def test_a_single_choice_takes_exactly_one_known_option() -> None:
    single = choice()
    assert ix.check_answer(single, {"selected": ["b"]}) == {"selected": ["b"]}
    assert "no such option" in invalid_answer(single, {"selected": ["zz"]}).message
    assert "twice" in invalid_answer(single, {"selected": ["a", "a"]}).message
    assert "between 1 and 1" in invalid_answer(single, {"selected": ["a", "b"]}).message
    assert "between 1 and 1" in invalid_answer(single, {"selected": []}).message


def test_a_multiple_choice_respects_its_bounds_and_the_agents_order() -> None:
    multiple = choice(multiple=True, min_selected=2, max_selected=2)
    assert ix.check_answer(multiple, {"selected": ["c", "a"]}) == {"selected": ["a", "c"]}
    invalid_answer(multiple, {"selected": ["a"]})
    invalid_answer(multiple, {"selected": ["a", "b", "c"]})
    invalid_answer(multiple, {"selected": ["a", "a"]})
    invalid_answer(multiple, {"selected": ["a", "nope"]})
    anything = choice(multiple=True, min_selected=0)
    assert ix.check_answer(anything, {"selected": []}) == {"selected": []}
    assert ix.check_answer(anything, {"selected": ["c", "b", "a"]}) == {"selected": ["a", "b", "c"]}


@pytest.mark.parametrize(
    "answer",
    [
        {"selected": "a"},
        {"selected": [1]},
        {"selected": ["a"], "extra": 1},
        {},
        ["a"],
        "a",
        None,
        {"confirmed": True},
    ],
)
def test_a_choice_answer_has_the_choice_shape(answer: Any) -> None:
    invalid_answer(choice(), answer)


@pytest.mark.parametrize("value", [True, False])
def test_confirm_takes_a_boolean(value: bool) -> None:
    interaction = parsed(ix.CONFIRM, VALID[ix.CONFIRM])
    assert ix.check_answer(interaction, {"confirmed": value}) == {"confirmed": value}


@pytest.mark.parametrize("value", [1, 0, "true", "yes", None, [], {}])
def test_confirm_refuses_anything_but_a_boolean(value: Any) -> None:
    invalid_answer(parsed(ix.CONFIRM, VALID[ix.CONFIRM]), {"confirmed": value})


def test_input_length_and_pattern() -> None:
    interaction = parsed(
        ix.INPUT, {"prompt": "p", "min_length": 2, "max_length": 5, "pattern": "[a-z]+"}
    )
    assert ix.check_answer(interaction, {"text": "abc"}) == {"text": "abc"}
    assert "2 to 5" in invalid_answer(interaction, {"text": "a"}).message
    assert "2 to 5" in invalid_answer(interaction, {"text": "abcdef"}).message
    # The pattern must match the whole answer, not a part of it.
    assert "format" in invalid_answer(interaction, {"text": "abc1"}).message
    assert "format" in invalid_answer(interaction, {"text": "1abc"}).message
    invalid_answer(interaction, {"text": 12})
    invalid_answer(interaction, {"text": "abc", "more": "x"})


def test_an_input_longer_than_16384_characters_is_refused_whatever_the_bounds() -> None:
    interaction = parsed(ix.INPUT, {"prompt": "p", "max_length": 16_384})
    assert ix.check_answer(interaction, {"text": "x" * 16_384}) == {"text": "x" * 16_384}
    invalid_answer(interaction, {"text": "x" * 16_385})
    invalid_answer(interaction, {"text": "x" * 1_000_000})


def test_a_notice_takes_no_answer() -> None:
    notice = parsed(ix.NOTICE, VALID[ix.NOTICE])
    assert "notice" in invalid_answer(notice, {}).message


MARKER = "SeCrEt-4711"
LEAKY_ANSWERS: list[tuple[str, dict[str, Any], Any]] = [
    (ix.CHOICE, {"prompt": "p", "options": OPTIONS}, {"selected": [MARKER]}),
    (ix.CHOICE, {"prompt": "p", "options": OPTIONS}, {"selected": [f"{MARKER} x"]}),
    (ix.CHOICE, {"prompt": "p", "options": OPTIONS}, {"selected": MARKER}),
    (ix.CHOICE, {"prompt": "p", "options": OPTIONS}, MARKER),
    (ix.CONFIRM, {"prompt": "p"}, {"confirmed": MARKER}),
    (ix.INPUT, {"prompt": "p", "max_length": 5}, {"text": MARKER}),
    (ix.INPUT, {"prompt": "p", "pattern": "[0-9]+"}, {"text": MARKER}),
    (ix.INPUT, {"prompt": "p"}, {"text": MARKER * 2000}),
    (ix.INPUT, {"prompt": "p"}, {"text": "ok", MARKER: MARKER}),
    (ix.INPUT, {"prompt": "p"}, {MARKER: "ok"}),
]


@pytest.mark.parametrize(("tool", "arguments", "answer"), LEAKY_ANSWERS)
def test_refusals_never_repeat_the_answer(
    tool: str, arguments: dict[str, Any], answer: Any
) -> None:
    rejection = invalid_answer(parsed(tool, arguments), answer)
    assert MARKER.lower() not in rejection.message.lower()


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab1 é", max_size=12),
    low=st.integers(0, 6),
    span=st.integers(0, 6),
)
def test_input_answers_agree_with_an_independent_oracle(text: str, low: int, span: int) -> None:
    interaction = parsed(
        ix.INPUT,
        {"prompt": "p", "min_length": low, "max_length": max(1, low + span), "pattern": "[ab]+1?"},
    )
    ok = low <= len(text) <= max(1, low + span) and re.fullmatch("[ab]+1?", text) is not None
    result = ix.check_answer(interaction, {"text": text})
    if ok:
        assert result == {"text": text}
    else:
        assert isinstance(result, Rejection) and result.code == ErrorCode.ANSWER_INVALID


@settings(max_examples=300, deadline=None)
@given(selected=st.lists(st.sampled_from(["a", "b", "c", "d", "A"]), max_size=5))
def test_choice_answers_agree_with_an_independent_oracle(selected: list[str]) -> None:
    interaction = choice(multiple=True, min_selected=1, max_selected=2)
    ok = (
        len(set(selected)) == len(selected)
        and set(selected) <= {"a", "b", "c"}
        and 1 <= len(selected) <= 2
    )
    result = ix.check_answer(interaction, {"selected": selected})
    if ok:
        assert result == {"selected": sorted(selected)}
    else:
        assert isinstance(result, Rejection) and result.code == ErrorCode.ANSWER_INVALID


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(tool=st.sampled_from(ix.TOOL_IDS), arguments=JSON, answer=JSON)
def test_parsing_and_checking_never_raise(tool: str, arguments: Any, answer: Any) -> None:
    result = ix.parse_arguments(tool, arguments)
    if isinstance(result, Rejection):
        assert result.code == ErrorCode.TOOL_INPUT_INVALID
    else:
        checked = ix.check_answer(result, answer)
        assert isinstance(checked, dict) or checked.code == ErrorCode.ANSWER_INVALID


# --- inventory --------------------------------------------------------------------------


def test_the_inventory_revision_is_a_digest_of_its_content() -> None:
    first, second = ix.inventory(), ix.inventory()
    assert first == second
    assert first.revision == second.revision
    assert re.fullmatch(r"inv-[0-9a-f]{20}", first.revision)
    extra = ToolDescriptor(
        id="demo.deploy",
        handling="direct",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        target=ToolTarget(
            app_scope="deploy", requires_foreground=False, restore_previous_focus=False
        ),
    )
    with_extra = ix.inventory([extra])
    assert with_extra.revision != first.revision
    assert ix.inventory([extra]).revision == with_extra.revision


def test_interactive_descriptors_have_no_target_and_no_timeout() -> None:
    tools = ix.inventory().tools
    assert [t.id for t in tools] == list(ix.TOOL_IDS)
    for tool in tools:
        assert tool.handling == "interactive"
        assert tool.target is None
        assert tool.timeout_ms is None
        assert tool.input_schema == msgspec.json.schema(ix.ARGUMENT_TYPES[tool.id])
        assert tool.output_schema == msgspec.json.schema(ix.RESULT_TYPES[tool.id])


def test_the_inventory_travels_as_a_valid_envelope() -> None:
    inventory = ix.inventory()
    envelope = ClientInventoryEnvelope(
        id="inv_1",
        conversation_id="conv_1",
        sender=Sender(kind="runtime", id="user-1"),
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
        payload=inventory,
    )
    decoded = decode(encode(envelope))
    assert isinstance(decoded, ClientInventoryEnvelope)
    assert decoded.payload.revision == inventory.revision
    assert decoded.payload.tools == inventory.tools
