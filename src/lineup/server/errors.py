"""``ApiError``: a stable code, a message, an HTTP status. One shape on the wire."""

from __future__ import annotations

import msgspec

from lineup.protocol import ErrorBody, ErrorCode, ErrorResponse, Rejection

HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.ENVELOPE_TOO_LARGE: 413,
    ErrorCode.MALFORMED_ENVELOPE: 400,
    ErrorCode.UNSUPPORTED_TYPE: 422,
    ErrorCode.UNSUPPORTED_VERSION: 422,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.SENDER_MISMATCH: 403,
    ErrorCode.DIRECTION_NOT_ALLOWED: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.CONFLICT: 409,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.INTERNAL_ERROR: 500,
}
"""HTTP status per code; any other code (runtime decisions) maps to 422."""


class ApiError(Exception):
    """A failure to report to the caller with a stable code."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        path: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.headers = headers or {}

    @classmethod
    def from_rejection(cls, rejection: Rejection) -> ApiError:
        return cls(rejection.code, rejection.message, path=rejection.path)

    @property
    def status(self) -> int:
        return HTTP_STATUS.get(self.code, 422)

    def body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, path=self.path)

    def to_json(self) -> bytes:
        return msgspec.json.encode(ErrorResponse(error=self.body()))
