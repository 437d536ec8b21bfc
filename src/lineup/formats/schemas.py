"""Tool input and output schemas: checked and compiled once, then used on every call.

A tool descriptor carries two JSON Schemas (spec 002 §8). They are Draft 2020-12,
whatever they say, and they are compiled with ``jsonschema-rs`` exactly once per
descriptor: ``compile_tool`` keeps the result in a bounded cache, looked up first by
the descriptor object itself and then by its canonical bytes, so the manifest loader
compiles and the Tool Router gets the same ``CompiledTool`` back for free.

Before compiling, a schema is held to rules that keep validation local, bounded and
predictable (docs/miniapps.md, "How tools are validated"):

- at most ``MAX_SCHEMA_BYTES`` once encoded and ``MAX_SCHEMA_DEPTH`` levels deep;
- ``$schema``, wherever it appears, names Draft 2020-12 (an MCP server's tools may
  also be Draft 7, which much of that ecosystem writes: ``compile_tool(...,
  dialects=MCP_DIALECTS)``; one dialect per schema);
- every ``$ref`` and ``$dynamicRef`` is local (starts with ``#``): a schema never
  reaches the network or the file system, and the validator is built offline as a
  second line of defence;
- valid under the Draft 2020-12 meta-schema;
- ``pattern`` and ``patternProperties`` compile with a linear-time regex engine (no
  look-around, no back-references), so no input can make a check backtrack;
- ``format`` is asserted, and an unknown format name is an error, not a no-op.

Validation answers ``None`` or one ``SchemaProblem(path, message)``. The path is a
JSON path into the envelope (``$.payload.arguments...``) or the result
(``$.result...``); it names only array indices and property names that the schema
itself declares (any other key shows as ``[*]``), and the message is built from the
schema, never from the value, so both are safe to log and to send back.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Any, Literal

import jsonschema_rs
import msgspec

from lineup.protocol.fields import MAX_LABEL_CHARS, json_depth_exceeds
from lineup.protocol.payloads import ToolDescriptor

__all__ = [
    "DRAFT_07",
    "DRAFT_2020_12",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MCP_DIALECTS",
    "STRICT_DIALECTS",
    "CompiledSchemas",
    "CompiledTool",
    "SchemaError",
    "SchemaErrorCode",
    "SchemaProblem",
    "compile_schema",
    "compile_tool",
]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
"""The dialect of LineUp's own tool schemas (manifests, capabilities): the only one
they may name in ``$schema``, and the one used when they name none."""
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
STRICT_DIALECTS = frozenset({DRAFT_2020_12})
MCP_DIALECTS = frozenset({DRAFT_2020_12, DRAFT_07, DRAFT_07.rstrip("#")})
"""What an MCP server's tool schemas may name: Draft 2020-12 (MCP's default) or Draft 7
(what zod and many servers emit), with or without the trailing ``#``."""
_VALIDATORS: dict[str, Any] = {
    DRAFT_2020_12: jsonschema_rs.Draft202012Validator,
    DRAFT_07: jsonschema_rs.Draft7Validator,
    DRAFT_07.rstrip("#"): jsonschema_rs.Draft7Validator,
}

MAX_SCHEMA_BYTES = 16 * 1024
"""Largest tool schema, as canonical JSON bytes. Every tool of every enabled app goes
out in one ``client.inventory`` envelope (at most 256 KiB), so schemas stay small."""

MAX_SCHEMA_DEPTH = 20
"""Deepest JSON nesting of a tool schema; the schema object itself is level 1."""

CACHE_SIZE = 1024
"""Compiled descriptors kept, per lookup kind (object identity, canonical bytes)."""

INPUT_ROOT = "$.payload.arguments"
OUTPUT_ROOT = "$.result"

_encode = msgspec.json.Encoder(order="sorted").encode
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]{0,63}\Z")
_PRINTABLE = re.compile(r"^[ -~]{1,64}\Z")
_POINTER_IN_MESSAGE = re.compile(r"Pointer '([^']*)' does not exist")
_MAX_MESSAGE_CHARS = 300


class SchemaErrorCode(StrEnum):
    """Why a schema was refused. The manifest loader prefixes these with ``manifest_``."""

    INVALID = "schema_invalid"
    REMOTE_REF = "schema_remote_ref"
    TOO_LARGE = "schema_too_large"


class SchemaError(Exception):
    """A schema that cannot be used. ``path`` is a JSON path from the schema's owner:
    ``$`` is the schema itself for ``compile_schema`` and the descriptor for
    ``compile_tool`` (``$.input_schema.properties.when.format``). The message never
    quotes the schema's values."""

    def __init__(self, code: SchemaErrorCode, message: str, path: str = "$") -> None:
        super().__init__(f"{code} at {path}: {message}")
        self.code = code
        self.message = message
        self.path = path


class SchemaProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why a value does not match a tool schema: where, and what the schema wanted."""

    path: str
    message: str

    def describe(self) -> str:
        """One line for a ``tool.result`` error message (``path: message``)."""
        return f"{self.path}: {self.message}"[:MAX_LABEL_CHARS]


# --- compiling -----------------------------------------------------------------------


def compile_schema(
    schema: Any, *, dialects: frozenset[str] = STRICT_DIALECTS
) -> jsonschema_rs.Validator:
    """Check ``schema`` against the rules above and compile it in its dialect (one of
    ``dialects``, named by its root ``$schema``; Draft 2020-12 when it names none).

    Raises ``SchemaError`` with a path relative to the schema (``$`` is its root).
    """
    if not isinstance(schema, dict):
        raise SchemaError(SchemaErrorCode.INVALID, "a tool schema must be a JSON object")
    if json_depth_exceeds(schema, MAX_SCHEMA_DEPTH):
        raise SchemaError(
            SchemaErrorCode.TOO_LARGE, f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        )
    try:
        size = len(_encode(schema))
    except (TypeError, ValueError, OverflowError) as exc:
        raise SchemaError(SchemaErrorCode.INVALID, "the schema is not JSON") from exc
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(
            SchemaErrorCode.TOO_LARGE,
            f"the schema encodes to {size} bytes; the limit is {MAX_SCHEMA_BYTES}",
        )
    dialect = schema.get("$schema", DRAFT_2020_12)
    if not isinstance(dialect, str) or dialect not in dialects:
        dialect = DRAFT_2020_12  # refused just below, at its path
    _check_references(schema, dialect if dialect in dialects else DRAFT_2020_12, dialects)
    name = "Draft 2020-12" if dialect == DRAFT_2020_12 else "Draft 7"
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise SchemaError(
            SchemaErrorCode.INVALID,
            f"not valid under the {name} meta-schema (`{exc.kind.name}` fails here)",
            _path("$", exc.instance_path),
        ) from None
    try:
        validator: jsonschema_rs.Validator = _VALIDATORS[dialect](
            schema,
            validate_formats=True,
            ignore_unknown_formats=False,
            pattern_options=jsonschema_rs.RegexOptions(),
            offline=True,
        )
    except jsonschema_rs.ValidationError as exc:
        raise _compile_error(schema, exc) from None
    except jsonschema_rs.ReferencingError:  # pragma: no cover - reported as above today
        raise SchemaError(SchemaErrorCode.INVALID, "a `$ref` cannot be resolved") from None
    return validator


def _check_references(schema: dict[str, Any], dialect: str, dialects: frozenset[str]) -> None:
    """Refuse non-local references and foreign dialects (any ``$schema`` but the
    root's ``dialect``), in document order.

    Walks the whole document, including ``const``, ``enum``, ``default`` and
    ``examples``: a local JSON pointer may turn any part of the document into a
    schema, so there is no part where a remote reference would be harmless.
    """
    for path, node in _objects(schema):
        if "$schema" in node and node["$schema"] != dialect:
            if dialects == STRICT_DIALECTS:
                message = f"`$schema` must be {DRAFT_2020_12} (tool schemas are Draft 2020-12)"
            else:
                message = "`$schema` must name Draft 2020-12 or Draft 7, once, at the root"
            raise SchemaError(SchemaErrorCode.INVALID, message, f"{path}.$schema")
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if isinstance(ref, str) and not ref.startswith("#"):
                raise SchemaError(
                    SchemaErrorCode.REMOTE_REF,
                    f"`{keyword}` must be local to the schema (start with `#`);"
                    " tool schemas never load other documents",
                    f"{path}.{keyword}",
                )


def _objects(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON object in ``schema`` with its path, depth first, in document order."""
    stack: list[tuple[str, Any]] = [("$", schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            yield path, node
            children: Iterable[tuple[str, Any]] = (
                (_key_path(path, key), value) for key, value in node.items()
            )
        elif isinstance(node, list):
            children = ((f"{path}[{index}]", value) for index, value in enumerate(node))
        else:
            continue
        stack.extend(reversed(list(children)))


def _compile_error(schema: dict[str, Any], exc: jsonschema_rs.ValidationError) -> SchemaError:
    kind = exc.kind
    name = type(kind).__name__
    path = _path("$", exc.instance_path)
    if name == "Format" and kind.as_dict().get("format") == "regex":
        return SchemaError(
            SchemaErrorCode.INVALID,
            "not a regular expression this validator accepts (linear-time syntax:"
            " no look-around, no back-references)",
            path,
        )
    if name == "Custom" and "Unknown format" in str(kind.as_dict().get("message", "")):
        return SchemaError(
            SchemaErrorCode.INVALID,
            "names a format this validator does not know (see docs/miniapps.md)",
            path,
        )
    if name == "Referencing":
        return SchemaError(
            SchemaErrorCode.INVALID,
            "`$ref` points at nothing in this schema",
            _dangling_ref_path(schema, exc.message) or path,
        )
    return SchemaError(SchemaErrorCode.INVALID, "the schema cannot be compiled", path)


def _dangling_ref_path(schema: dict[str, Any], message: str) -> str | None:
    """Where the ``$ref`` that failed to resolve is, when the message names its pointer."""
    match = _POINTER_IN_MESSAGE.search(message)
    if match is None:
        return None
    wanted = {f"#{match.group(1)}"}
    for path, node in _objects(schema):
        for keyword in ("$ref", "$dynamicRef"):
            if node.get(keyword) in wanted:
                return f"{path}.{keyword}"
    return None


# --- compiled tools ------------------------------------------------------------------


class CompiledSchemas:
    """An input and an output schema compiled, ready for every call (tools and
    capabilities). Immutable and safe to share between threads."""

    __slots__ = ("_input", "_input_names", "_output", "_output_names")

    def __init__(
        self, input_schema: Any, output_schema: Any, dialects: frozenset[str] = STRICT_DIALECTS
    ) -> None:
        self._input = _compile_field(input_schema, "input_schema", dialects)
        self._output = _compile_field(output_schema, "output_schema", dialects)
        self._input_names = _declared_names(input_schema)
        self._output_names = _declared_names(output_schema)

    def validate_input(self, arguments: Any) -> SchemaProblem | None:
        """``None`` when ``arguments`` match ``input_schema``; else the first problem,
        with a path under ``$.payload.arguments``."""
        return _check(self._input, self._input_names, arguments, INPUT_ROOT)

    def validate_output(self, result: Any) -> SchemaProblem | None:
        """``None`` when ``result`` matches ``output_schema``; else the first problem,
        with a path under ``$.result``."""
        return _check(self._output, self._output_names, result, OUTPUT_ROOT)


class CompiledTool(CompiledSchemas):
    """A tool descriptor with its two schemas compiled; get one from ``compile_tool``."""

    __slots__ = ("descriptor",)

    def __init__(
        self, descriptor: ToolDescriptor, dialects: frozenset[str] = STRICT_DIALECTS
    ) -> None:
        super().__init__(descriptor.input_schema, descriptor.output_schema, dialects)
        self.descriptor = descriptor

    @property
    def tool_id(self) -> str:
        return self.descriptor.id

    def __repr__(self) -> str:
        return f"CompiledTool({self.descriptor.id!r})"


def _compile_field(
    schema: Any, field: Literal["input_schema", "output_schema"], dialects: frozenset[str]
) -> Any:
    try:
        return compile_schema(schema, dialects=dialects)
    except SchemaError as exc:
        raise SchemaError(exc.code, exc.message, f"$.{field}{exc.path[1:]}") from None


_lock = threading.Lock()
_by_identity: OrderedDict[tuple[int, frozenset[str]], tuple[ToolDescriptor, CompiledTool]] = (
    OrderedDict()
)
_by_content: OrderedDict[tuple[bytes, frozenset[str]], CompiledTool] = OrderedDict()


def compile_tool(
    descriptor: ToolDescriptor, *, dialects: frozenset[str] = STRICT_DIALECTS
) -> CompiledTool:
    """The ``CompiledTool`` for ``descriptor``, compiling its schemas at most once.

    Raises ``SchemaError`` with a path relative to the descriptor
    (``$.output_schema.properties.code.pattern``). The same descriptor object, or an
    equal one, gets the cached result back without compiling again.
    """
    key = (id(descriptor), dialects)
    with _lock:
        entry = _by_identity.get(key)
        if entry is not None and entry[0] is descriptor:
            _by_identity.move_to_end(key)
            return entry[1]
    content = (_encode(descriptor), dialects)
    with _lock:
        compiled = _by_content.get(content)
        if compiled is not None:
            _by_content.move_to_end(content)
    if compiled is None:
        compiled = CompiledTool(descriptor, dialects)  # outside the lock: compiling takes a while
        with _lock:
            _by_content[content] = compiled
            _trim(_by_content)
    with _lock:
        # The entry holds the descriptor, so its id cannot be reused while cached.
        _by_identity[key] = (descriptor, compiled)
        _trim(_by_identity)
    return compiled


def _trim(cache: OrderedDict[Any, Any]) -> None:
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


# --- validating ----------------------------------------------------------------------


def _check(validator: Any, names: frozenset[str], value: Any, root: str) -> SchemaProblem | None:
    try:
        if validator.is_valid(value):
            return None
        error = next(iter(validator.iter_errors(value)))
    except (ValueError, TypeError, OverflowError, StopIteration):
        return SchemaProblem(path=root, message="is not a JSON value")
    return SchemaProblem(
        path=_path(root, error.instance_path, names), message=_explain(error.kind, names)
    )


def _declared_names(schema: Any) -> frozenset[str]:
    """Property names the schema itself spells out: ``properties`` keys and the
    entries of ``required`` and ``dependentRequired``. Only these may appear in a
    problem's path or message."""
    names: set[str] = set()
    for _, node in _objects(schema):
        properties = node.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
        for keyword in ("required",):
            listed = node.get(keyword)
            if isinstance(listed, list):
                names.update(item for item in listed if isinstance(item, str))
        dependent = node.get("dependentRequired")
        if isinstance(dependent, dict):
            names.update(dependent)
            for listed in dependent.values():
                if isinstance(listed, list):
                    names.update(item for item in listed if isinstance(item, str))
    return frozenset(names)


def _explain(kind: Any, names: frozenset[str]) -> str:
    """A short message from the schema's side of the failure, never the value's."""
    detail = kind.as_dict()
    limit = _number(detail.get("limit"))
    match type(kind).__name__:
        case "Type":
            types = detail.get("types") or []
            return "must be of type " + " or ".join(str(t) for t in types)
        case "Required":
            prop = detail.get("property")
            if isinstance(prop, str) and prop in names and _PRINTABLE.match(prop):
                return f"is missing the required property {json.dumps(prop)}"
            return "is missing a required property"
        case "AdditionalProperties" | "UnevaluatedProperties":
            return "has properties the schema does not allow"
        case "AdditionalItems" | "UnevaluatedItems":
            return "has items the schema does not allow"
        case "AnyOf":
            return "matches none of the allowed alternatives (`anyOf`)"
        case "OneOfNotValid":
            return "matches none of the alternatives (`oneOf`)"
        case "OneOfMultipleValid":
            return "matches more than one alternative (`oneOf`)"
        case "Constant":
            return "is not the value the schema requires (`const`)"
        case "Enum":
            return "is not one of the allowed values (`enum`)"
        case "Contains":
            return "has no item that matches `contains`"
        case "FalseSchema":
            return "is not allowed here"
        case "Not":
            return "matches a schema it must not match (`not`)"
        case "Format":
            return f"is not a valid `{detail.get('format')}`"
        case "Pattern":
            return "does not match the required pattern"
        case "PropertyNames":
            return "has a property name the schema does not allow"
        case "UniqueItems":
            return "has duplicate items"
        case "MultipleOf":
            return f"is not a multiple of {_number(detail.get('multiple_of'))}"
        case "Minimum":
            return f"is less than the minimum {limit}"
        case "Maximum":
            return f"is greater than the maximum {limit}"
        case "ExclusiveMinimum":
            return f"must be greater than {limit}"
        case "ExclusiveMaximum":
            return f"must be less than {limit}"
        case "MinLength":
            return f"is shorter than {limit} characters"
        case "MaxLength":
            return f"is longer than {limit} characters"
        case "MinItems":
            return f"has fewer than {limit} items"
        case "MaxItems":
            return f"has more than {limit} items"
        case "MinProperties":
            return f"has fewer than {limit} properties"
        case "MaxProperties":
            return f"has more than {limit} properties"
        case "BacktrackLimitExceeded" | "RegexEngineFailure":
            return "could not be checked against the pattern"
    return f"does not match the schema (`{kind.name}`)"[:_MAX_MESSAGE_CHARS]


def _number(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, int | float) else "the limit"
    return text[:40]


# --- paths ---------------------------------------------------------------------------


def _path(root: str, parts: Iterable[str | int], names: frozenset[str] | None = None) -> str:
    """A JSON path: ``.name`` for plain keys, ``["odd key"]`` for other printable ones,
    ``[n]`` for indices. With ``names``, a key the schema does not declare shows as
    ``[*]``: an instance's own keys are input and stay out of paths."""
    path = root
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif names is not None and part not in names:
            path += "[*]"
        else:
            path = _key_path(path, part)
    return path


def _key_path(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    if _PRINTABLE.match(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}[?]"
