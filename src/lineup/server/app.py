"""The AppServer as one ASGI application: routes, error shape, lifespan."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute

from lineup.protocol import ErrorCode

from .catalog import Catalog
from .errors import ApiError
from .http_api import ROUTES, JSONResponse
from .hub import Hub
from .openapi import build_openapi
from .service import AppServerService
from .storage import Storage, StorageError
from .ws_api import stream_endpoint

log = logging.getLogger("lineup.server")

_HTTP_CODES = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED}


def create_app(
    storage: Storage,
    *,
    token_ttl: timedelta = timedelta(days=30),
    catalog: Catalog | None = None,
) -> Starlette:
    """Build the AppServer around ``storage``; the lifespan opens and closes it.
    ``catalog`` serves signed MiniApp releases; without one the catalog is empty."""
    hub = Hub()
    service = AppServerService(storage, hub, token_ttl=token_ttl)
    openapi = build_openapi()

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(openapi)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await storage.open()
        app.state.schema_version = getattr(storage, "schema_version", 0)
        app.state.ready = True
        log.info("appserver ready", extra={"schema_version": app.state.schema_version})
        try:
            yield
        finally:
            app.state.ready = False
            app.state.stopping = True
            await storage.close()
            log.info("appserver stopped")

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return Response(
            exc.to_json(),
            status_code=exc.status,
            media_type="application/json",
            headers=exc.headers,
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = _HTTP_CODES.get(exc.status_code, ErrorCode.INVALID_REQUEST)
        error = ApiError(code, str(exc.detail))
        return Response(error.to_json(), status_code=exc.status_code, media_type="application/json")

    async def storage_error(request: Request, exc: Exception) -> Response:
        log.error("storage failed", extra={"error": type(exc).__name__})
        error = ApiError(ErrorCode.UNAVAILABLE, "storage is unavailable; retry later")
        return Response(error.to_json(), status_code=503, media_type="application/json")

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.error("unhandled error", exc_info=exc)
        error = ApiError(ErrorCode.INTERNAL_ERROR, "internal error")
        return Response(error.to_json(), status_code=500, media_type="application/json")

    app = Starlette(
        routes=[
            *ROUTES,
            Route("/openapi.json", openapi_json, methods=["GET"]),
            WebSocketRoute("/v1/stream", stream_endpoint),
        ],
        exception_handlers={
            ApiError: api_error,
            HTTPException: http_error,
            StorageError: storage_error,
            Exception: internal_error,
        },
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.catalog = catalog
    app.state.ready = False
    app.state.stopping = False
    return app
