"""docs/mcp.md cannot drift: its config example is one ``load_config`` takes, its
envelopes decode, its tool id is one the inventory would advertise, and its error
table names real codes."""

from __future__ import annotations

import re
from pathlib import Path

from lineup.protocol import Envelope, ErrorCode, ToolCallEnvelope, ToolResultEnvelope, decode
from lineup.protocol.fields import TOOL_ID_PATTERN
from lineup.runtime.mcp import parse_config
from lineup.runtime.mcp.servers import CALL_TIMEOUT_MS

DOC = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```json\n(.*?)^```$", TEXT, re.M | re.S)


def test_every_json_example_is_a_config_or_an_envelope() -> None:
    assert len(BLOCKS) == 3
    configs = [b for b in BLOCKS if '"mcpServers"' in b]
    envelopes = [decode(b.encode()) for b in BLOCKS if '"mcpServers"' not in b]
    (config,) = configs
    servers = parse_config(
        config.encode(), "docs/mcp.md", environ={"HOME": "/h", "TICKETS_TOKEN": "t"}
    )
    assert [(s.key, s.transport) for s in servers] == [
        ("everything", "stdio"),
        ("notes", "stdio"),
        ("tickets", "http"),
    ]
    assert all(isinstance(e, Envelope) for e in envelopes), envelopes
    call, result = envelopes
    assert isinstance(call, ToolCallEnvelope) and isinstance(result, ToolResultEnvelope)
    assert re.match(TOOL_ID_PATTERN, call.payload.tool)
    assert result.payload.call_id == call.payload.call_id
    assert result.target is not None and result.target.app_scope == "mcp-everything"


def test_the_error_table_names_real_codes_and_the_stated_deadline() -> None:
    table = TEXT[TEXT.index("| status | code | when |") :]
    table = table[: table.index("\n\n")]
    codes = set(re.findall(r"`([a-z_]+)`", table)) - {
        "completed", "rejected", "failed", "dismissed", "cancelled",
        "interaction", "call_id", "isError",
    }  # fmt: skip
    assert codes <= {c.value for c in ErrorCode}, codes - {c.value for c in ErrorCode}
    assert f"within {CALL_TIMEOUT_MS // 60_000} minutes" in table
