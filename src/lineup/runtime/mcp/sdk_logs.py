"""Keep what MCP servers send out of the log, whatever the SDK logs.

The ``mcp`` SDK logs whole messages at DEBUG (``SSE message: ...``) and, at ERROR, the
exceptions of parsing a server's answer, whose text quotes it; its HTTP client
(``httpx2``) logs each request's URL at INFO (a configured URL may carry a token).
Our rule is that logs carry types, codes, sizes and counts only. So
``guard_sdk_logs()`` stops those loggers from propagating and forwards, from WARNING
up, a line that says which SDK logger spoke, at what level, and the type of the
exception, never its text or the message.

The SDK's loggers are the process's, so this is process-wide and idempotent.
"""

from __future__ import annotations

import logging

__all__ = ["SDK_LOGGERS", "guard_sdk_logs"]

SDK_LOGGERS = ("mcp", "httpx2", "httpcore2")

_OUT = logging.getLogger("lineup.runtime.mcp.sdk")


class _Forward(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        fields = {"sdk_logger": record.name[:80]}
        if record.exc_info and record.exc_info[0] is not None:
            fields["error"] = record.exc_info[0].__name__
        _OUT.log(record.levelno, "mcp sdk reported a problem", extra=fields)


_HANDLER = _Forward()


def guard_sdk_logs() -> None:
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        logger.propagate = False
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)
