"""What the MCP SDK logs never carries what a server sent."""

from __future__ import annotations

import logging

import pytest

from lineup.runtime.mcp.sdk_logs import guard_sdk_logs


def test_sdk_lines_are_cut_to_their_logger_level_and_error_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard_sdk_logs()
    guard_sdk_logs()  # idempotent
    caplog.set_level(logging.DEBUG)
    sdk = logging.getLogger("mcp.client.streamable_http")
    sdk.setLevel(logging.DEBUG)
    try:
        sdk.debug("SSE message: %s", "SECRET-BODY")
        logging.getLogger("httpx2").info("HTTP Request: POST https://h/mcp?token=SECRET-TOKEN")
        try:
            raise ValueError("input_value='SECRET-RESULT'")
        except ValueError:
            sdk.exception("Error parsing JSON response")
    finally:
        sdk.setLevel(logging.NOTSET)
    assert "SECRET" not in caplog.text
    (record,) = caplog.records
    assert (record.name, record.levelno, record.getMessage()) == (
        "lineup.runtime.mcp.sdk",
        logging.ERROR,
        "mcp sdk reported a problem",
    )
    assert record.sdk_logger == "mcp.client.streamable_http" and record.error == "ValueError"  # type: ignore[attr-defined]
