"""AppManifest: the fixture suite of valid and invalid manifests, the loader's inputs
and limits, the inventory projections and a Hypothesis round trip."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lineup.formats import schemas
from lineup.formats.manifest import (
    HOST_VERSION,
    MAX_MANIFEST_BYTES,
    MAX_NAME_CHARS,
    AppManifest,
    ManifestError,
    ManifestErrorCode,
    Surface,
    compiled_tools,
    encode_manifest,
    load_manifest,
    to_inventory_application,
    tool_descriptors,
)
from lineup.protocol import decode, encode
from lineup.protocol.envelope import ClientInventoryEnvelope, Sender
from lineup.protocol.fields import (
    APP_SCOPE_PATTERN,
    CAPABILITY_NAME_PATTERN,
    EVENT_NAME_PATTERN,
    SEMVER_PATTERN,
)
from lineup.protocol.payloads import (
    ApplicationRef,
    ClientInventory,
    SurfaceRef,
    ToolDescriptor,
    ToolTarget,
)

FIXTURES = Path(__file__).parent / "manifests"
VALID = sorted((FIXTURES / "valid").glob("*.json"))
INVALID = sorted((FIXTURES / "invalid").iterdir())
EXPECTED: dict[str, dict[str, str]] = json.loads((FIXTURES / "expected_errors.json").read_text())


def _fixture(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "valid" / f"{name}.json").read_text())
    return document


def _refused(data: Any, **kwargs: Any) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        load_manifest(data, **kwargs)
    return caught.value


# --- the fixture suite ---------------------------------------------------------------------


def test_the_suite_is_complete() -> None:
    assert len(VALID) >= 10
    assert len(INVALID) >= 25
    assert {path.stem for path in INVALID} == set(EXPECTED), "every invalid fixture has an entry"
    # Every code but the size limit (tested below with generated input) has a fixture.
    codes = {entry["code"] for entry in EXPECTED.values()}
    assert codes == {code.value for code in ManifestErrorCode} - {"manifest_too_large"}


@pytest.mark.parametrize("path", VALID, ids=lambda path: path.stem)
def test_valid_manifests_load(path: Path) -> None:
    raw = path.read_bytes()
    manifest = load_manifest(raw)
    assert isinstance(manifest, AppManifest)
    # Canonical encoding is a fixed point, and the same manifest comes back.
    canonical = encode_manifest(manifest)
    again = load_manifest(canonical)
    assert again == manifest
    assert encode_manifest(again) == canonical
    # Every input form gives the same manifest.
    document = json.loads(raw)
    assert load_manifest(document) == manifest
    assert load_manifest(MappingProxyType(document)) == manifest
    assert load_manifest(raw.decode()) == manifest
    assert load_manifest(bytearray(raw)) == manifest
    assert load_manifest(memoryview(raw)) == manifest


@pytest.mark.parametrize("path", INVALID, ids=lambda path: path.stem)
def test_invalid_manifests_are_refused_with_code_and_path(path: Path) -> None:
    expected = EXPECTED[path.stem]
    error = _refused(path.read_bytes())
    assert (error.code, error.path) == (expected["code"], expected["path"]), error.message
    assert error.message and "\n" not in error.message and len(error.message) <= 300
    assert str(error) == f"{error.code} at {error.path}: {error.message}"


@pytest.mark.parametrize("path", INVALID, ids=lambda path: path.stem)
def test_refusals_quote_no_value_of_the_manifest(path: Path) -> None:
    """No string value of at least 8 characters from the faulty manifest reaches the
    message (shorter ones are ordinary words, and the format's own enum words may be
    named; the sentinel test below is exact)."""
    error = _refused(path.read_bytes())
    try:
        document = json.loads(path.read_bytes())
    except json.JSONDecodeError:
        return
    for value in _strings(document):
        if len(value) >= 8 and value not in _VOCABULARY:
            assert value not in error.message, path.stem


_VOCABULARY = {"interactive", "foreground", "operation", "installed", "bundled"}


def _strings(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_test_app_fixture_has_every_non_interactive_handling() -> None:
    """The tiny built-in test app the kernel's tests use."""
    manifest = load_manifest((FIXTURES / "valid" / "test-app.json").read_bytes())
    assert {tool.handling for tool in manifest.tools} == {
        "direct",
        "launch",
        "foreground",
        "operation",
    }
    assert all(tool.target and tool.target.app_scope == "test-app" for tool in manifest.tools)


# --- sentinels: no value is echoed ----------------------------------------------------------

SECRET = "s3cr3t-VALUE-xyz"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(id=SECRET), "$.id"),
        (lambda d: d.update(version=SECRET), "$.version"),
        (lambda d: d.update(kind=SECRET), "$.kind"),
        (lambda d: d.update(name=SECRET + "\n"), "$.name"),
        (lambda d: d.update(icon=SECRET), "$.icon"),
        (lambda d: d.update(app_scope=SECRET), "$.app_scope"),
        (lambda d: d.update(min_host_version=SECRET), "$.min_host_version"),
        (lambda d: d.update({SECRET: 1}), "$"),
        (lambda d: d["surfaces"][0].update(entry=SECRET), "$.surfaces[0].entry"),
        (lambda d: d["surfaces"][0].update(events=[SECRET + " "]), "$.surfaces[0].events[0]"),
        (lambda d: d.update(permissions=[SECRET]), "$.permissions[0]"),
        (lambda d: d["tools"][0].update(id=SECRET), "$.tools[0].id"),
        (lambda d: d["tools"][0].update(handling=SECRET), "$.tools[0].handling"),
        (lambda d: d["tools"][0]["target"].update(app_scope=SECRET), "$.tools[0].target.app_scope"),
        (
            lambda d: d["tools"][0]["input_schema"].update(type=SECRET),
            "$.tools[0].input_schema.type",
        ),
        (
            lambda d: d["tools"][0]["input_schema"].update({"$ref": "https://" + SECRET}),
            "$.tools[0].input_schema.$ref",
        ),
        (
            lambda d: d["tools"][0]["input_schema"].update(pattern="(" + SECRET),
            "$.tools[0].input_schema.pattern",
        ),
        (
            lambda d: d["tools"][0]["input_schema"].update(format=SECRET),
            "$.tools[0].input_schema.format",
        ),
    ],
)
def test_messages_never_echo_a_value(change: Any, path: str) -> None:
    document = _fixture("test-app")
    change(document)
    error = _refused(document)
    assert error.path == path
    assert SECRET not in error.message
    assert SECRET not in str(error)


# --- inputs and limits ---------------------------------------------------------------------


def test_too_large_is_refused_before_parsing() -> None:
    document = _fixture("minimal")
    document["name"] = "x" * MAX_MANIFEST_BYTES  # too long a name as well: size comes first
    for data in (json.dumps(document), json.dumps(document).encode(), document):
        error = _refused(data)
        assert (error.code, error.path) == (ManifestErrorCode.TOO_LARGE, "$")
    error = _refused(b"{" * (MAX_MANIFEST_BYTES + 1))
    assert error.code == ManifestErrorCode.TOO_LARGE


def test_a_manifest_just_under_the_limit_is_parsed() -> None:
    raw = json.dumps(_fixture("minimal")).encode()
    padded = raw[:-1] + b" " * (MAX_MANIFEST_BYTES - len(raw)) + b"}"
    assert len(padded) == MAX_MANIFEST_BYTES
    assert load_manifest(padded).id == "com.example.minimal"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe",
        b"[" * 100_000,
        b'{"a":' * 50_000,
        "\ud800",
        b"null",
        b'"manifest"',
        b"1e400",
    ],
    ids=["empty", "not-utf8", "deep-list", "deep-object", "lone-surrogate", "null", "str", "inf"],
)
def test_broken_documents_are_invalid_not_crashes(data: bytes | str) -> None:
    error = _refused(data)
    assert error.code == ManifestErrorCode.INVALID
    assert error.path == "$"


def test_mappings_with_values_that_are_not_json_are_invalid() -> None:
    document: dict[str, Any] = _fixture("minimal")
    document["name"] = {1, 2}
    assert _refused(document).code == ManifestErrorCode.INVALID
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    document["name"] = deep
    assert _refused(document).code == ManifestErrorCode.INVALID


def test_other_input_types_are_a_programming_error() -> None:
    with pytest.raises(TypeError):
        load_manifest(42)  # type: ignore[arg-type]


def test_the_name_limit_counts_characters_not_bytes() -> None:
    document = _fixture("minimal")
    document["name"] = "界" * MAX_NAME_CHARS
    assert load_manifest(document).name == "界" * MAX_NAME_CHARS
    document["name"] = "界" * (MAX_NAME_CHARS + 1)
    assert _refused(document).path == "$.name"


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u200f", "\u2066", "\x00", "\x7f"])
def test_names_refuse_separators_and_direction_controls(char: str) -> None:
    document = _fixture("minimal")
    document["name"] = f"Ta{char}sks"
    error = _refused(document)
    assert (error.code, error.path) == (ManifestErrorCode.INVALID, "$.name")


@pytest.mark.parametrize(
    "icon",
    ["icon.png", "a/b/c.svg", "icons/app-1.0.webp", "_i.png", "x.y.png"],
)
def test_icon_paths_inside_the_bundle_are_accepted(icon: str) -> None:
    document = _fixture("minimal")
    document["icon"] = icon
    assert load_manifest(document).icon == icon


@pytest.mark.parametrize(
    "icon",
    [
        "icon.PNG",
        ".hidden.png",
        "a/../icon.png",
        "./icon.png",
        "a//icon.png",
        "a\\icon.png",
        "data:image/png;base64,AAAA",
        "icon.png\n",
        "🙂",
        "/icon.png",
        "C:/icon.png",
    ],
)
def test_icons_that_leave_the_bundle_or_are_not_images_are_refused(icon: str) -> None:
    document = _fixture("minimal")
    document["icon"] = icon
    error = _refused(document)
    assert (error.code, error.path) == (ManifestErrorCode.INVALID, "$.icon")


def test_decoding_the_struct_directly_keeps_code_and_path() -> None:
    """Cross-field rules run in ``__post_init__`` and are not folded into msgspec's
    ValidationError, so decoding ``AppManifest`` yourself gives the same error."""
    document = _fixture("test-app")
    document["tools"][0]["target"]["app_scope"] = "elsewhere"
    with pytest.raises(ManifestError) as caught:
        msgspec.json.decode(json.dumps(document), type=AppManifest)
    assert caught.value.code == ManifestErrorCode.TOOL_SCOPE_MISMATCH
    assert caught.value.path == "$.tools[0].target.app_scope"


def test_constructing_the_struct_runs_the_cross_field_rules() -> None:
    target = ToolTarget(app_scope="demo", requires_foreground=False, restore_previous_focus=False)
    tool = ToolDescriptor(
        id="demo.run",
        handling="direct",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        target=target,
    )
    manifest = AppManifest(
        id="com.example.demo",
        version="1.0.0",
        kind="installed",
        name="Demo",
        app_scope="demo",
        min_host_version="0.1.0",
        tools=[tool],
    )
    assert manifest.tools == [tool]
    with pytest.raises(ManifestError) as caught:
        AppManifest(
            id="com.example.demo",
            version="1.0.0",
            kind="installed",
            name="Demo",
            app_scope="demo",
            min_host_version="0.1.0",
            tools=[tool, tool],
        )
    assert (caught.value.code, caught.value.path) == (ManifestErrorCode.DUPLICATE, "$.tools[1].id")


# --- rules -------------------------------------------------------------------------------


def test_the_first_fault_in_document_order_is_reported() -> None:
    document = _fixture("test-app")
    document["tools"][1]["target"]["app_scope"] = "elsewhere"
    document["tools"][3]["id"] = "other.run"
    error = _refused(document)
    assert (error.code, error.path) == (
        ManifestErrorCode.TOOL_SCOPE_MISMATCH,
        "$.tools[1].target.app_scope",
    )


def test_a_bad_schema_with_a_too_new_host_is_reported_as_the_schema() -> None:
    """The host check comes last: an invalid manifest says so whatever the host."""
    document = _fixture("test-app")
    document["min_host_version"] = "99.0.0"
    document["tools"][0]["input_schema"]["type"] = "objekt"
    assert _refused(document).code == ManifestErrorCode.SCHEMA_INVALID


def test_interactive_tool_with_other_faults_is_still_interactive() -> None:
    document = _fixture("test-app")
    document["tools"][2].update(handling="interactive", timeout_ms=0, id="nope")
    error = _refused(document)
    assert (error.code, error.path) == (ManifestErrorCode.TOOL_INTERACTIVE, "$.tools[2].handling")


@pytest.mark.parametrize("handling", ["direct", "launch", "operation"])
def test_background_tools_need_no_surface(handling: str) -> None:
    document = _fixture("minimal")
    document["tools"] = [
        {
            "id": "minimal.run",
            "handling": handling,
            "input_schema": {},
            "output_schema": {},
            "target": {
                "app_scope": "minimal",
                "requires_foreground": False,
                "restore_previous_focus": True,
            },
        }
    ]
    assert load_manifest(document).tools[0].handling == handling


def test_a_tool_may_declare_no_permissions_or_an_empty_list() -> None:
    document = _fixture("test-app")
    document["tools"][0]["permissions"] = []
    manifest = load_manifest(document)
    assert manifest.tools[0].permissions == []
    assert manifest.tools[1].permissions is None


@pytest.mark.parametrize(
    ("minimum", "host", "loads"),
    [
        ("0.1.0", "0.1.0", True),
        ("0.1.0", "0.1.1", True),
        ("0.1.0", "1.0.0", True),
        ("0.1.0-rc.1", "0.1.0", True),
        ("0.1.0+build.5", "0.1.0", True),
        ("0.1.1", "0.1.0", False),
        ("0.2.0", "0.1.9", False),
        ("1.0.0", "0.99.99", False),
        ("0.1.0", "0.1.0-rc.1", False),
        ("0.1.0-rc.2", "0.1.0-rc.1", False),
    ],
)
def test_min_host_version_against_the_host(minimum: str, host: str, loads: bool) -> None:
    document = _fixture("minimal")
    document["min_host_version"] = minimum
    if loads:
        assert load_manifest(document, host_version=host).min_host_version == minimum
    else:
        error = _refused(document, host_version=host)
        assert (error.code, error.path) == (ManifestErrorCode.HOST_TOO_OLD, "$.min_host_version")


def test_the_default_host_version_is_this_package() -> None:
    assert re.match(SEMVER_PATTERN, HOST_VERSION)
    document = _fixture("minimal")
    document["min_host_version"] = HOST_VERSION
    assert load_manifest(document).min_host_version == HOST_VERSION


def test_a_host_version_that_is_not_semver_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="SemVer"):
        load_manifest(_fixture("minimal"), host_version="1.0")


# --- projections for the inventory ----------------------------------------------------------


def test_inventory_projection() -> None:
    manifest = load_manifest((FIXTURES / "valid" / "task-dashboard.json").read_bytes())
    assert to_inventory_application(manifest) == ApplicationRef(
        id="com.lineup.task-dashboard",
        version="1.2.0",
        surfaces=[
            SurfaceRef(id="board", events=["select", "filter", "close"]),
            SurfaceRef(id="detail", events=["edit", "close"]),
        ],
    )
    tools = tool_descriptors(manifest)
    assert tools == manifest.tools and tools is not manifest.tools
    assert [tool.id for tool in tools] == [
        "task-dashboard.open",
        "task-dashboard.create_task",
        "task-dashboard.export",
    ]


@pytest.mark.parametrize("path", VALID, ids=lambda path: path.stem)
def test_every_valid_manifest_fits_a_client_inventory_envelope(path: Path) -> None:
    """What the projections produce is a valid ``client.inventory`` on the wire, and
    carries no entry path, icon, display name or permission list."""
    manifest = load_manifest(path.read_bytes())
    envelope = ClientInventoryEnvelope(
        id="env_inventory_1",
        conversation_id="conv_01",
        sender=Sender(kind="runtime", id="user_01"),
        created_at=datetime(2026, 8, 2, 12, 0, tzinfo=UTC),
        payload=ClientInventory(
            revision="rev-1",
            applications=[to_inventory_application(manifest)],
            tools=tool_descriptors(manifest),
        ),
    )
    raw = encode(envelope)
    assert decode(raw) == envelope
    for surface in manifest.surfaces:
        assert surface.entry.encode() not in raw
    if manifest.icon:
        assert manifest.icon.encode() not in raw


def test_compiled_tools_come_from_the_load() -> None:
    manifest = load_manifest((FIXTURES / "valid" / "test-app.json").read_bytes())
    compiled = compiled_tools(manifest)
    assert list(compiled) == [tool.id for tool in manifest.tools]
    for tool in manifest.tools:
        assert compiled[tool.id] is schemas.compile_tool(tool)
        assert compiled[tool.id].descriptor == tool
    echo = compiled["test-app.echo"]
    assert echo.validate_input({"text": "hi"}) is None
    problem = echo.validate_input({"text": 5})
    assert problem is not None and problem.path == "$.payload.arguments.text"


def test_loading_compiles_each_schema_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = schemas.compile_schema

    def counting(schema: Any, **options: Any) -> Any:
        calls.append(schema)
        return real(schema, **options)

    monkeypatch.setattr(schemas, "compile_schema", counting)
    document = _fixture("test-app")
    document["tools"][0]["input_schema"]["properties"]["text"]["maxLength"] = 123  # fresh
    manifest = load_manifest(document)
    assert len(calls) == 2
    compiled_tools(manifest)
    load_manifest(document)  # an equal descriptor: the content cache answers
    assert len(calls) == 2


# --- Hypothesis: valid manifests round-trip -------------------------------------------------

_SCHEMAS: list[dict[str, Any]] = [
    {},
    {"type": "object"},
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 10}}},
    {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 0}}},
    {"type": "object", "additionalProperties": False, "properties": {"e": {"enum": ["a", "b"]}}},
    {
        "$defs": {"x": {"type": "number"}},
        "type": "object",
        "additionalProperties": {"$ref": "#/$defs/x"},
    },
]

_segment = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True)
_label = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,12}", fullmatch=True)
_versions = st.from_regex(SEMVER_PATTERN).filter(lambda v: len(v) <= 128)
_bad_name_chars = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_names = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters=_bad_name_chars
    ),
    min_size=1,
    max_size=MAX_NAME_CHARS,
).filter(lambda name: name == name.strip())
_paths = st.lists(st.from_regex(r"[a-z0-9_][a-z0-9._-]{0,8}", fullmatch=True), max_size=3)


@st.composite
def manifests(draw: st.DrawFn) -> AppManifest:
    scope = draw(_segment)
    assert re.match(APP_SCOPE_PATTERN, scope)
    surface_ids = draw(st.lists(_segment, max_size=4, unique=True))
    surfaces = [
        Surface(
            id=surface_id,
            entry="/".join([*draw(_paths), draw(_segment) + ".html"]),
            events=draw(
                st.lists(st.from_regex(EVENT_NAME_PATTERN), max_size=5, unique=True).map(
                    lambda events: [e for e in events if len(e) <= 64]
                )
            ),
        )
        for surface_id in surface_ids
    ]
    permissions = draw(
        st.lists(
            st.from_regex(CAPABILITY_NAME_PATTERN).filter(lambda c: len(c) <= 255),
            max_size=4,
            unique=True,
        )
    )
    tools = []
    for verb in draw(st.lists(_segment, max_size=5, unique=True)):
        handling = draw(st.sampled_from(["direct", "launch", "foreground", "operation"]))
        if not surfaces and handling == "foreground":
            handling = "direct"
        tools.append(
            ToolDescriptor(
                id=f"{scope}.{verb}",
                handling=handling,
                input_schema=copy.deepcopy(draw(st.sampled_from(_SCHEMAS))),
                output_schema=copy.deepcopy(draw(st.sampled_from(_SCHEMAS))),
                target=ToolTarget(
                    app_scope=scope,
                    requires_foreground=bool(surfaces) and draw(st.booleans()),
                    restore_previous_focus=draw(st.booleans()),
                ),
                timeout_ms=draw(st.none() | st.integers(1, 86_400_000)),
                permissions=draw(st.none() | st.lists(st.sampled_from(permissions), unique=True))
                if permissions
                else None,
            )
        )
    icon = draw(st.none() | st.sampled_from(["icon.png", "img/icon.svg", "a/b/c.webp"]))
    return AppManifest(
        id=f"{draw(_segment)}.{draw(_label)}",
        version=draw(_versions),
        kind=draw(st.sampled_from(["system", "bundled", "installed"])),
        name=draw(_names),
        icon=icon,
        app_scope=scope,
        min_host_version=draw(st.sampled_from(["0.0.1", "0.1.0", "0.1.0-alpha"])),
        surfaces=surfaces,
        tools=tools,
        permissions=permissions,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests())
def test_valid_manifests_round_trip(manifest: AppManifest) -> None:
    raw = encode_manifest(manifest)
    loaded = load_manifest(raw)
    assert loaded == manifest
    assert encode_manifest(loaded) == raw
    assert load_manifest(msgspec.json.decode(raw)) == manifest
    assert load_manifest(raw.decode()) == manifest


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "id",
                        "version",
                        "kind",
                        "name",
                        "icon",
                        "app_scope",
                        "surfaces",
                        "tools",
                        "permissions",
                        "min_host_version",
                        "handling",
                        "target",
                        "entry",
                        "events",
                        "input_schema",
                        "output_schema",
                        "$ref",
                        "type",
                        "other",
                    ]
                ),
                children,
                max_size=8,
            )
        ),
        max_leaves=30,
    )
)
def test_arbitrary_json_never_breaks_the_loader(document: Any) -> None:
    error = _outcome(json.dumps(document))
    if error is not None:
        assert error.path.startswith("$")
        assert error.code in set(ManifestErrorCode)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), st.data())
def test_mutated_manifests_load_or_refuse_cleanly(
    manifest: AppManifest, data: st.DataObject
) -> None:
    """Overwrite one value somewhere in a valid manifest: the loader still answers with
    a manifest or a ManifestError, never anything else."""
    document = msgspec.json.decode(encode_manifest(manifest))
    slots = _slots(document)
    container, key = data.draw(st.sampled_from(slots))
    container[key] = data.draw(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.just({}) | st.just([])
    )
    error = _outcome(document)
    if error is not None:
        assert error.path.startswith("$")


def _outcome(data: Any) -> ManifestError | None:
    try:
        load_manifest(data)
    except ManifestError as error:
        return error
    return None


def _slots(document: Any) -> list[tuple[Any, Any]]:
    slots: list[tuple[Any, Any]] = []
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            slots.extend((item, key) for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            slots.extend((item, index) for index in range(len(item)))
            stack.extend(item)
    return slots


# --- docs/miniapps.md cannot drift ----------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "miniapps.md"


def test_the_documented_example_loads() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^```json\n(.*?)^```$", text, re.M | re.S)
    assert len(blocks) >= 2
    manifests = [load_manifest(block) for block in blocks]  # each one a valid manifest
    assert manifests[0].app_scope == "test-app"  # the annotated example
    assert "hello" in {m.app_scope for m in manifests}  # "Your first surface"


def test_the_documented_codes_and_limits_match_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(manifest_[a-z_]+)` \|", text, re.M))
    assert documented == {code.value for code in ManifestErrorCode}
    assert f"at most {MAX_MANIFEST_BYTES // 1024} KiB" in text
    assert f"at most {schemas.MAX_SCHEMA_BYTES // 1024} KiB" in text
    assert f"{schemas.MAX_SCHEMA_DEPTH} levels deep" in text
    assert f"1 to {MAX_NAME_CHARS} characters" in text
