"""What the MCP SDK logs never reaches our log handlers with what a server sent."""

from __future__ import annotations

import logging

from lineup.runtime.mcp.sdk_logs import guard_sdk_logs


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_sdk_lines_are_cut_to_their_logger_level_and_error_type() -> None:
    guard_sdk_logs()
    guard_sdk_logs()  # idempotent
    root = logging.getLogger()
    collect = _Collect()
    root.addHandler(collect)  # where the Runtime's handler is (lineup.logs.configure)
    sdk = logging.getLogger("mcp.client.streamable_http")
    sdk.setLevel(logging.DEBUG)
    try:
        sdk.debug("SSE message: %s", "SECRET-BODY")
        logging.getLogger("httpx2").warning("HTTP Request: POST https://h/mcp?token=SECRET-TOKEN")
        try:
            raise ValueError("input_value='SECRET-RESULT'")
        except ValueError:
            sdk.exception("Error parsing JSON response")
    finally:
        sdk.setLevel(logging.NOTSET)
        root.removeHandler(collect)
    seen = [
        (r.name, r.levelno, r.getMessage(), r.__dict__.get("sdk_logger"), r.__dict__.get("error"))
        for r in collect.records
    ]
    assert seen == [
        ("lineup.runtime.mcp.sdk", logging.WARNING, "mcp sdk reported a problem", "httpx2", None),
        (
            "lineup.runtime.mcp.sdk",
            logging.ERROR,
            "mcp sdk reported a problem",
            "mcp.client.streamable_http",
            "ValueError",
        ),
    ]
    assert not any("SECRET" in str(r.__dict__) for r in collect.records)
