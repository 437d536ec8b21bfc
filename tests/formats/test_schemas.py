"""Tool schemas: what compiles, what is refused and where, the problems validation
reports (paths under ``$.payload.arguments`` and ``$.result``, messages that never echo
a value), the compile-once cache, and that no schema ever reaches the network."""

from __future__ import annotations

import re
import socket
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.formats import schemas
from lineup.formats.schemas import (
    DRAFT_07,
    DRAFT_2020_12,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MCP_DIALECTS,
    CompiledTool,
    SchemaError,
    SchemaErrorCode,
    SchemaProblem,
    compile_schema,
    compile_tool,
)
from lineup.protocol.fields import MAX_LABEL_CHARS
from lineup.protocol.payloads import ToolDescriptor, ToolTarget

SECRET = "s3cr3t-VALUE-xyz"

TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "items"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 20},
        "due date": {"type": "string", "format": "date-time"},
        "items": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "qty": {"type": "integer", "minimum": 1},
                },
            },
        },
        "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}
VALID_TASK: dict[str, Any] = {"title": "Ship it", "items": [{"name": "box", "qty": 2}]}


def _tool(
    input_schema: dict[str, Any] | None = None, output_schema: dict[str, Any] | None = None
) -> ToolDescriptor:
    return ToolDescriptor(
        id="demo.run",
        handling="direct",
        input_schema=TASK_SCHEMA if input_schema is None else input_schema,
        output_schema={"type": "object"} if output_schema is None else output_schema,
        target=ToolTarget(
            app_scope="demo", requires_foreground=False, restore_previous_focus=False
        ),
    )


def _compile_error(schema: Any) -> SchemaError:
    with pytest.raises(SchemaError) as caught:
        compile_schema(schema)
    return caught.value


def _problem(schema: dict[str, Any], instance: Any) -> SchemaProblem:
    problem = compile_tool(_tool(schema)).validate_input(instance)
    assert problem is not None
    return problem


# --- compiling ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "object"},
        TASK_SCHEMA,
        {"$schema": DRAFT_2020_12, "type": "object"},
        {"$id": "urn:example:x", "$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"},
        {"$defs": {"n": {"$anchor": "num", "type": "number"}}, "items": {"$ref": "#num"}},
        {"$dynamicAnchor": "node", "type": "object", "properties": {"c": {"$dynamicRef": "#node"}}},
        {"$ref": "#"},
        {"$defs": {"a/b": {"type": "string"}}, "$ref": "#/$defs/a~1b"},
        {"pattern": "^[a-z]{2,}\\d*$", "format": "email"},
        {"patternProperties": {"^x-": {"type": "string"}}},
        {"const": {"$ref": "#/nowhere", "note": "data, not a reference"}},
    ],
)
def test_valid_schemas_compile(schema: dict[str, Any]) -> None:
    assert compile_schema(schema).is_valid({}) in (True, False)


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"$ref": "https://example.com/schema.json"}, "$.$ref"),
        ({"$ref": "http://127.0.0.1:1/x"}, "$.$ref"),
        ({"$ref": "other.json#/defs/x"}, "$.$ref"),
        ({"$ref": "file:///etc/passwd"}, "$.$ref"),
        ({"$ref": "urn:example:other"}, "$.$ref"),
        ({"$ref": "//example.com/x"}, "$.$ref"),
        ({"properties": {"a": {"$ref": "https://example.com/a"}}}, "$.properties.a.$ref"),
        ({"items": [{}, {"$ref": "a.json"}]}, "$.items[1].$ref"),
        ({"$dynamicRef": "https://example.com/meta#node"}, "$.$dynamicRef"),
        ({"default": {"$ref": "https://example.com/d"}}, "$.default.$ref"),
        ({"$id": "https://example.com/root", "$ref": "sibling.json"}, "$.$ref"),
    ],
)
def test_remote_refs_are_refused(schema: dict[str, Any], path: str) -> None:
    error = _compile_error(schema)
    assert (error.code, error.path) == (SchemaErrorCode.REMOTE_REF, path)
    assert "example.com" not in error.message and "json" not in error.message


def _no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise AssertionError("a schema tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_remote_refs_never_touch_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = _no_network(monkeypatch)
    for ref in ("https://example.com/s.json", "http://127.0.0.1:9/s.json", "s.json"):
        assert _compile_error({"$ref": ref}).code == SchemaErrorCode.REMOTE_REF
    assert attempts == []


def test_the_validator_is_offline_even_without_the_static_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Second line of defence: with the reference check switched off, compiling a remote
    ``$ref`` still fails, without a connection attempt (Python's or the library's own:
    nothing listens on the discard port, so an attempt would fail differently)."""
    attempts = _no_network(monkeypatch)
    monkeypatch.setattr(schemas, "_check_references", lambda *_: None)
    for ref in ("http://127.0.0.1:9/s.json", "https://example.invalid/s.json"):
        error = _compile_error({"properties": {"a": {"$ref": ref}}})
        assert error.code == SchemaErrorCode.INVALID
        assert error.path == "$"
    assert attempts == []


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "$.$schema"),
        ({"$schema": "https://json-schema.org/draft/2019-09/schema"}, "$.$schema"),
        ({"$schema": DRAFT_2020_12 + "#"}, "$.$schema"),
        (
            {"$defs": {"x": {"$schema": "http://json-schema.org/draft-04/schema#"}}},
            "$.$defs.x.$schema",
        ),
    ],
)
def test_other_dialects_are_refused(schema: dict[str, Any], path: str) -> None:
    error = _compile_error(schema)
    assert (error.code, error.path) == (SchemaErrorCode.INVALID, path)


DRAFT_7_TOOL = {
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}},
    "required": ["pair"],
    "definitions": {"n": {"type": "number"}},
}
"""Draft 7 as MCP servers write it (zod's output): the array form of ``items`` is a
tuple there, and an error under Draft 2020-12."""


def test_an_mcp_server_s_draft_7_schema_compiles_in_its_own_dialect() -> None:
    assert _compile_error(DRAFT_7_TOOL).path == "$.$schema"  # a manifest's: refused
    validator = compile_schema(DRAFT_7_TOOL, dialects=MCP_DIALECTS)
    assert validator.is_valid({"pair": ["a", 1]})
    assert not validator.is_valid({"pair": [1, "a"]})  # the tuple's types are checked
    bare = {**DRAFT_7_TOOL, "$schema": DRAFT_07.rstrip("#")}
    assert compile_schema(bare, dialects=MCP_DIALECTS).is_valid({"pair": ["b", 2]})


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "https://json-schema.org/draft/2019-09/schema"},
        {"$schema": DRAFT_07, "properties": {"a": {"$schema": DRAFT_2020_12}}},
        {"properties": {"a": {"$schema": DRAFT_07}}},
    ],
)
def test_an_mcp_schema_names_one_known_dialect_at_its_root(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema(schema, dialects=MCP_DIALECTS)
    assert caught.value.code == SchemaErrorCode.INVALID
    assert caught.value.path.endswith(".$schema")


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"type": "objekt"}, "$.type"),
        ({"properties": {"a": {"minLength": -1}}}, "$.properties.a.minLength"),
        ({"required": "name"}, "$.required"),
        ({"items": 5}, "$.items"),
        ({"properties": {"due date": {"enum": 3}}}, '$.properties["due date"].enum'),
        ({"pattern": "("}, "$.pattern"),
        ({"pattern": "^(?!x).*$"}, "$.pattern"),
        ({"pattern": "(a)\\1"}, "$.pattern"),
        ({"patternProperties": {"(?<=a)b": {}}}, '$.patternProperties["(?<=a)b"]'),
        ({"properties": {"a": {"format": "date_time"}}}, "$.properties.a.format"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "$.properties.a.$ref"),
    ],
)
def test_invalid_schemas_are_refused_at_the_fault(schema: dict[str, Any], path: str) -> None:
    error = _compile_error(schema)
    assert (error.code, error.path) == (SchemaErrorCode.INVALID, path)


def test_schema_size_and_depth_are_bounded() -> None:
    node: dict[str, Any] = {}
    for _ in range(MAX_SCHEMA_DEPTH - 1):
        node = {"not": node}
    compile_schema(node)  # exactly at the limit
    error = _compile_error({"not": node})
    assert (error.code, error.path) == (SchemaErrorCode.TOO_LARGE, "$")
    big = {"description": "x" * MAX_SCHEMA_BYTES}
    error = _compile_error(big)
    assert (error.code, error.path) == (SchemaErrorCode.TOO_LARGE, "$")
    assert str(MAX_SCHEMA_BYTES) in error.message


@pytest.mark.parametrize("schema", [True, [], "string", None, {"a": object()}])
def test_schemas_that_are_not_json_objects_are_refused(schema: Any) -> None:
    assert _compile_error(schema).code == SchemaErrorCode.INVALID


def test_compile_tool_paths_start_at_the_descriptor() -> None:
    with pytest.raises(SchemaError) as caught:
        compile_tool(_tool(output_schema={"properties": {"code": {"pattern": "(?=x)"}}}))
    assert caught.value.path == "$.output_schema.properties.code.pattern"
    with pytest.raises(SchemaError) as caught:
        compile_tool(_tool(input_schema={"$ref": "https://example.com/x"}))
    assert (caught.value.code, caught.value.path) == (
        SchemaErrorCode.REMOTE_REF,
        "$.input_schema.$ref",
    )


# --- validating -----------------------------------------------------------------------------


def test_valid_input_and_output_give_none() -> None:
    compiled = compile_tool(_tool(output_schema={"type": "object", "required": ["id"]}))
    assert compiled.validate_input(VALID_TASK) is None
    assert compiled.validate_output({"id": "t1"}) is None
    assert compiled.tool_id == "demo.run"
    assert repr(compiled) == "CompiledTool('demo.run')"


@pytest.mark.parametrize(
    ("instance", "path", "message"),
    [
        ({"items": []}, "$.payload.arguments", 'is missing the required property "title"'),
        ({**VALID_TASK, "title": 7}, "$.payload.arguments.title", "must be of type string"),
        ({**VALID_TASK, "title": ""}, "$.payload.arguments.title", "is shorter than 1 characters"),
        (
            {**VALID_TASK, "title": "x" * 21},
            "$.payload.arguments.title",
            "is longer than 20 characters",
        ),
        (
            {**VALID_TASK, "items": [{"name": "ok"}, {"name": "Bad!"}]},
            "$.payload.arguments.items[1].name",
            "does not match the required pattern",
        ),
        (
            {**VALID_TASK, "items": [{"name": "a", "qty": 0}]},
            "$.payload.arguments.items[0].qty",
            "is less than the minimum 1",
        ),
        (
            {**VALID_TASK, "items": [{}]},
            "$.payload.arguments.items[0]",
            'is missing the required property "name"',
        ),
        (
            {**VALID_TASK, "items": [{"name": "a"}] * 4},
            "$.payload.arguments.items",
            "has more than 3 items",
        ),
        (
            {**VALID_TASK, "due date": "tomorrow"},
            '$.payload.arguments["due date"]',
            "is not a valid `date-time`",
        ),
        (
            {**VALID_TASK, "extra": 1},
            "$.payload.arguments",
            "has properties the schema does not allow",
        ),
        (
            {**VALID_TASK, "labels": {"urgent": "yes"}},
            "$.payload.arguments.labels[*]",
            "must be of type integer",
        ),
        ([], "$.payload.arguments", "must be of type object"),
    ],
)
def test_input_problems_name_the_path_and_the_rule(instance: Any, path: str, message: str) -> None:
    problem = _problem(TASK_SCHEMA, instance)
    assert (problem.path, problem.message) == (path, message)
    assert problem.describe() == f"{path}: {message}"


def test_output_problems_are_under_result() -> None:
    compiled = compile_tool(
        _tool(
            output_schema={
                "type": "object",
                "required": ["task_id"],
                "properties": {
                    "task_id": {"type": "string"},
                    "tags": {"items": {"type": "string"}},
                },
            }
        )
    )
    assert compiled.validate_output({}) == SchemaProblem(
        path="$.result", message='is missing the required property "task_id"'
    )
    assert compiled.validate_output({"task_id": "t", "tags": ["a", 2]}) == SchemaProblem(
        path="$.result.tags[1]", message="must be of type string"
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"enum": ["a", "b"]}, "is not one of the allowed values (`enum`)"),
        ({"const": "a"}, "is not the value the schema requires (`const`)"),
        (
            {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "matches none of the allowed alternatives (`anyOf`)",
        ),
        (
            {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "matches none of the alternatives (`oneOf`)",
        ),
        (
            {"oneOf": [{"type": "string"}, {"minLength": 1}]},
            "matches more than one alternative (`oneOf`)",
        ),
        ({"not": {"type": "string"}}, "matches a schema it must not match (`not`)"),
        (False, "is not allowed here"),
        ({"format": "email"}, "is not a valid `email`"),
        ({"format": "uuid"}, "is not a valid `uuid`"),
        ({"pattern": "^[0-9]+$"}, "does not match the required pattern"),
        ({"maxLength": 3}, "is longer than 3 characters"),
    ],
)
def test_messages_never_echo_the_value(schema: Any, message: str) -> None:
    problem = _problem({"properties": {"v": schema}}, {"v": SECRET})
    assert (problem.path, problem.message) == ("$.payload.arguments.v", message)
    assert SECRET not in problem.describe()


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"type": "integer", "maximum": 5}, 6, "is greater than the maximum 5"),
        ({"type": "number", "exclusiveMinimum": 0}, 0, "must be greater than 0"),
        ({"type": "number", "exclusiveMaximum": 1.5}, 1.5, "must be less than 1.5"),
        ({"multipleOf": 3}, 4, "is not a multiple of 3"),
        ({"minItems": 2}, [1], "has fewer than 2 items"),
        ({"uniqueItems": True}, [1, 1], "has duplicate items"),
        ({"contains": {"type": "string"}}, [1], "has no item that matches `contains`"),
        ({"minProperties": 1}, {}, "has fewer than 1 properties"),
        ({"maxProperties": 0}, {"k": 1}, "has more than 0 properties"),
        (
            {"propertyNames": {"maxLength": 2}},
            {"long": 1},
            "has a property name the schema does not allow",
        ),
        ({"unevaluatedProperties": False}, {"k": 1}, "has properties the schema does not allow"),
        ({"type": ["string", "null"]}, 1, "must be of type null or string"),
    ],
)
def test_each_rule_has_a_message(schema: dict[str, Any], instance: Any, message: str) -> None:
    problem = _problem({"properties": {"v": schema}}, {"v": instance})
    assert (problem.path, problem.message) == ("$.payload.arguments.v", message)


def test_undeclared_keys_stay_out_of_paths_and_messages() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {"type": "object", "required": [SECRET.upper()]},
        "patternProperties": {"^p-": {"type": "integer"}},
    }
    problem = _problem(schema, {SECRET: {}})
    assert problem.path == "$.payload.arguments[*]"
    assert SECRET not in problem.describe()
    # A name the schema itself declares may be shown, an instance's own key may not.
    assert problem.message == f'is missing the required property "{SECRET.upper()}"'
    problem = _problem(schema, {"p-" + SECRET: "x"})
    assert problem.path == "$.payload.arguments[*]"
    required_by_instance = _problem({"required": ["a\nb"]}, {})
    assert required_by_instance.message == "is missing a required property"


def test_values_that_are_not_json_are_a_problem_not_a_crash() -> None:
    # Arguments always come decoded from JSON; a stray Python object is only looked at
    # where the schema has something to check, and then it is a problem, not a crash.
    assert compile_tool(_tool({})).validate_input({"v": object()}) is None
    compiled = compile_tool(_tool({"properties": {"v": {"type": "string"}}}))
    assert compiled.validate_input({"v": object()}) == SchemaProblem(
        path="$.payload.arguments", message="is not a JSON value"
    )


def test_patterns_are_linear_time() -> None:
    """``^(a+)+$`` backtracks exponentially in a backtracking engine (which would give
    up and report a failure); the linear engine simply answers."""
    problem = _problem({"properties": {"v": {"pattern": "^(a+)+$"}}}, {"v": "a" * 5000 + "!"})
    assert problem.message == "does not match the required pattern"


def test_large_integers_are_compared_exactly() -> None:
    problem = _problem({"properties": {"v": {"maximum": 2**63}}}, {"v": 2**63 + 1})
    assert problem.message == f"is greater than the maximum {2**63}"


def test_describe_is_bounded() -> None:
    long = SchemaProblem(path="$" + ".k" * 1000, message="m")
    assert len(long.describe()) == MAX_LABEL_CHARS


# --- compile once ---------------------------------------------------------------------------


def test_each_descriptor_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = schemas.compile_schema

    def counting(schema: Any, **options: Any) -> Any:
        calls.append(schema)
        return real(schema, **options)

    monkeypatch.setattr(schemas, "compile_schema", counting)
    descriptor = _tool({"type": "object", "title": "compile-once"})
    first = compile_tool(descriptor)
    assert len(calls) == 2  # input and output
    assert compile_tool(descriptor) is first
    # An equal descriptor decoded separately shares the compiled validators.
    twin = msgspec.json.decode(msgspec.json.encode(descriptor), type=ToolDescriptor)
    assert twin is not descriptor
    assert compile_tool(twin) is first
    assert len(calls) == 2


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schemas, "CACHE_SIZE", 3)
    descriptors = [_tool({"title": f"bounded-{n}"}) for n in range(6)]
    for descriptor in descriptors:
        compile_tool(descriptor)
    assert len(schemas._by_identity) <= 3 and len(schemas._by_content) <= 3
    # An evicted descriptor is compiled again, correctly.
    assert compile_tool(descriptors[0]).validate_input({}) is None


def test_compiled_tools_are_shared_safely_between_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    descriptor = _tool()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: compile_tool(descriptor), range(16)))
        problems = list(pool.map(results[0].validate_input, [VALID_TASK, {}] * 8))
    assert all(result is results[0] for result in results)
    assert problems[0::2] == [None] * 8
    assert all(p is not None and p.path == "$.payload.arguments" for p in problems[1::2])


# --- Hypothesis -----------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["title", "items", "name", "qty", "due date", "labels"])
            | st.text(max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)
_PATH_PART = re.compile(r'\[[0-9]+\]|\[\*\]|\.[A-Za-z_$][A-Za-z0-9_$-]*|\["[ -~]+"\]')
_DECLARED = {"title", "due date", "items", "name", "qty", "labels"}


@settings(max_examples=400, deadline=None)
@given(_json)
def test_any_value_gets_none_or_a_safe_problem(value: Any) -> None:
    compiled: CompiledTool = compile_tool(_tool())
    problem = compiled.validate_input(value)
    assert (problem is None) == compiled._input.is_valid(value)
    if problem is None:
        return
    assert problem.path.startswith("$.payload.arguments")
    rest = problem.path.removeprefix("$.payload.arguments")
    parts = _PATH_PART.findall(rest)
    assert "".join(parts) == rest
    for part in parts:
        if part.startswith("."):
            assert part[1:] in _DECLARED
        elif part.startswith('["'):
            assert part[2:-2] in _DECLARED
    assert "\n" not in problem.message
