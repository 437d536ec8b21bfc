"""Decoding a server's tool listing, one tool at a time (pure)."""

from __future__ import annotations

from lineup.runtime.mcp import RejectedTool, RejectionReason
from lineup.runtime.mcp.tools import MAX_TOOLS, decode_tool, decode_tools

OBJECT = {"type": "object", "properties": {}}


def test_a_full_tool_is_read() -> None:
    tool = decode_tool(
        {
            "name": "show.chart",
            "title": "Chart",
            "description": "Shows a chart",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True, "destructiveHint": "yes", "openWorldHint": False},
            "_meta": {"ui": {"resourceUri": "ui://charts/view", "visibility": ["app", "app", "x"]}},
        }
    )
    assert not isinstance(tool, RejectedTool)
    assert (tool.name, tool.title, tool.description) == ("show.chart", "Chart", "Shows a chart")
    assert (tool.read_only, tool.destructive, tool.idempotent, tool.open_world) == (
        True,
        None,
        None,
        False,
    )
    assert tool.ui_resource_uri == "ui://charts/view" and tool.visibility == ("app",)
    assert tool.output_schema == {"type": "object"}


def test_the_deprecated_flat_ui_key_is_read_and_the_nested_one_wins() -> None:
    flat = decode_tool(
        {"name": "a", "inputSchema": OBJECT, "_meta": {"ui/resourceUri": "ui://a/v"}}
    )
    both = decode_tool(
        {
            "name": "a",
            "inputSchema": OBJECT,
            "_meta": {"ui/resourceUri": "ui://a/old", "ui": {"resourceUri": "ui://a/new"}},
        }
    )
    not_ui = decode_tool(
        {"name": "a", "inputSchema": OBJECT, "_meta": {"ui": {"resourceUri": "https://a/v"}}}
    )
    assert not isinstance(flat, RejectedTool) and flat.ui_resource_uri == "ui://a/v"
    assert not isinstance(both, RejectedTool) and both.ui_resource_uri == "ui://a/new"
    assert not isinstance(not_ui, RejectedTool) and not_ui.ui_resource_uri is None
    assert flat.visibility == ("model", "app")


def test_bad_tools_are_rejected_with_a_reason_and_the_rest_kept() -> None:
    tools, rejected = decode_tools(
        [
            {"name": "good", "inputSchema": OBJECT},
            "not a tool",
            {"name": "white space", "inputSchema": OBJECT},
            {"name": "x" * 129, "inputSchema": OBJECT},
            {"name": "list_schema", "inputSchema": ["type", "object"]},
            {"name": "no_schema"},
            {"name": "string_schema", "inputSchema": {"type": "string"}},
            {"name": "bad_output", "inputSchema": OBJECT, "outputSchema": {"type": "array"}},
            {"name": "good", "inputSchema": OBJECT},
        ]
    )
    assert [t.name for t in tools] == ["good"]
    assert [(r.name, r.reason) for r in rejected] == [
        ("", RejectionReason.NOT_AN_OBJECT),
        ("white space", RejectionReason.NAME_INVALID),
        ("x" * 128, RejectionReason.NAME_INVALID),
        ("list_schema", RejectionReason.INPUT_SCHEMA_INVALID),
        ("no_schema", RejectionReason.INPUT_SCHEMA_INVALID),
        ("string_schema", RejectionReason.INPUT_SCHEMA_INVALID),
        ("bad_output", RejectionReason.OUTPUT_SCHEMA_INVALID),
        ("good", RejectionReason.NAME_DUPLICATE),
    ]


def test_a_listing_is_bounded() -> None:
    tools, rejected = decode_tools(
        [{"name": f"t{i}", "inputSchema": OBJECT} for i in range(MAX_TOOLS + 3)]
    )
    assert len(tools) == MAX_TOOLS
    assert [r.reason for r in rejected] == [RejectionReason.TOO_MANY_TOOLS] * 3
