"""``create_app``: the FastAPI app serving one kind of env; ``make_server``: uvicorn for it."""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp

from envkit.server.access import BearerAuth, RateLimit, RateLimiter
from envkit.server.adapter import EnvAdapter
from envkit.server.busy_poll import DEFAULT_BUSY_POLL_S, BusyPoll, check_window
from envkit.server.errors import ErrorCode, ServiceError, error_payload
from envkit.server.limits import MAX_BODY_BYTES, MAX_MESSAGE_BYTES, BodySizeLimit, Limits
from envkit.server.models import ErrorResponse
from envkit.server.routers import env, info, mcp, sessions, ws
from envkit.server.schema_docs import publish_openapi_without_examples
from envkit.server.service import EnvService
from envkit.server.sessions import SessionStore

__all__ = ["create_app", "make_server"]

OPENAPI_VERSION = "1.0.0"  # the version of the HTTP API, as OpenEnv numbers its own


def create_app(
    adapter_factory: Callable[[], EnvAdapter],
    *,
    max_sessions: int = 64,
    idle_timeout: float | None = 600.0,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    clock: Callable[[], float] = time.monotonic,
    rate_limit: int | None = None,
    token: str | None = None,
    on_shutdown: Callable[[], Any] | None = None,
    busy_poll: float = DEFAULT_BUSY_POLL_S,
) -> FastAPI:
    """An app serving ``adapter_factory()`` envs over OpenEnv's HTTP, WebSocket and MCP routes.

    Args:
        adapter_factory: makes one env per session (called once more at start-up, to read the
            env's name, schemas and tools).
        max_sessions: open sessions at most, HTTP and WebSocket together.
        idle_timeout: seconds after which an unused HTTP session closes (None: never).
        max_body_bytes: larger HTTP bodies get 413, unread.
        max_message_bytes: larger WebSocket messages close the connection (1009).
        clock: the time source of idle expiry and the rate limit (tests pass a fake one).
        rate_limit: HTTP requests plus WebSocket messages per minute and client IP, beyond which
            they get 429 (or a RATE_LIMITED error frame); None: no limit (the default, as for the
            ``serve`` commands: every env on one machine shares its IP's budget).
        token: when set, every route but ``/health`` (``/docs`` and ``/openapi.json`` too) needs
            ``Authorization: Bearer <token>``: 401 without it, and WebSocket handshakes close 1008.
        on_shutdown: called once when the app stops, after every session's env is closed (to
            flush what the envs recorded; it may be a coroutine function); uvicorn lets in-flight
            requests finish before that.
        busy_poll: seconds the event loop keeps polling its sockets after each reply instead
            of sleeping (``envkit.server.busy_poll``), which a client stepping in a tight loop
            gets its next reply sooner from; 0 turns it off.
    """
    if token is not None and not token:
        raise ValueError("token must not be empty (None: no token needed)")
    check_window(busy_poll)
    store = SessionStore(
        adapter_factory, max_sessions=max_sessions, idle_timeout=idle_timeout, clock=clock
    )
    service = EnvService(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        try:
            store.close_all()
        finally:
            if on_shutdown is not None:
                result = on_shutdown()
                if inspect.isawaitable(result):
                    await result

    app = FastAPI(
        title=f"{service.info.name} (OpenEnv server)",
        description=service.info.description,
        version=OPENAPI_VERSION,
        lifespan=lifespan,
        responses=_error_responses(rate_limited=rate_limit is not None, guarded=token is not None),
    )
    app.state.env_service = service
    publish_openapi_without_examples(app)
    app.state.limits = Limits(max_body_bytes=max_body_bytes, max_message_bytes=max_message_bytes)
    app.add_middleware(BusyPoll, window=busy_poll)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    if token is not None:
        app.add_middleware(BearerAuth, token=token)
    if rate_limit is not None:  # outermost: floods, and token guessing, are cut off first
        app.add_middleware(RateLimit, limiter=RateLimiter(rate_limit, clock=clock))
    for handled in (ServiceError, ValidationError, RequestValidationError):
        app.add_exception_handler(handled, _error_response)
    app.add_exception_handler(HTTPException, _http_error_response)
    for module in (info, env, sessions, ws, mcp):
        app.include_router(module.router)
    return app


def _error_responses(*, rate_limited: bool, guarded: bool) -> dict[int | str, dict[str, Any]]:
    """The refusals every route may answer with, for the OpenAPI document."""
    responses: dict[int | str, dict[str, Any]] = {
        400: {"model": ErrorResponse, "description": "The body is not JSON (INVALID_JSON)"},
        413: {"model": ErrorResponse, "description": "The body is over the size limit"},
        422: {
            "model": ErrorResponse,
            "description": "Malformed request, or input the env refuses (VALIDATION_ERROR)",
        },
    }
    if guarded:
        responses[401] = {"model": ErrorResponse, "description": "No or a wrong bearer token"}
    if rate_limited:
        responses[429] = {
            "model": ErrorResponse,
            "description": "Over the client's rate limit (RATE_LIMITED); see Retry-After",
        }
    return responses


async def _error_response(request: Request, error: Exception) -> JSONResponse:
    """Refused requests as ``{"detail", "code", ...}``; never echoes input (it may be NaN)."""
    status, body = error_payload(error)
    return JSONResponse({"detail": body.pop("message"), **body}, status_code=status)


async def _http_error_response(request: Request, error: Exception) -> Response:
    """FastAPI's own errors; a body it could not decode (not UTF-8, too deep) is INVALID_JSON."""
    assert isinstance(error, HTTPException)
    cause = error.__cause__
    if error.status_code == 400 and isinstance(cause, (ValueError, RecursionError)):
        message = f"the body is not valid JSON: {cause}"
        body = {"detail": message, "code": ErrorCode.INVALID_JSON.value}
        return JSONResponse(body, status_code=400)
    return await http_exception_handler(request, error)


def make_server(
    app: ASGIApp, *, host: str = "127.0.0.1", port: int = 8000, **options: Any
) -> uvicorn.Server:
    """A uvicorn server for ``app``, as ``serve`` runs it (and ``benchmarks.server_throughput``
    measures it); ``options`` go to ``uvicorn.Config`` (``log_level``, ...).

    - A WebSocket frame over the app's message limit closes the connection (1009); an app
      without ``app.state.limits`` (not made here, or not FastAPI) gets the default limit.
    - No per-message compression: deflating every reply of ~1 KB cost ~90 us per step, a tenth
      of a served chess step (measured with a client that asks for it, as OpenEnv's does by
      default), and saves nothing that matters on the networks an env server runs on.
    - uvicorn's ``auto`` choices take uvloop and httptools (in the ``server`` extra) when they
      are installed, and the websockets-sansio WebSocket implementation: per step over one
      connection, 40-60 us faster than asyncio's loop, 40-70 us faster than the legacy
      websockets and the wsproto implementations.
    """
    limits = getattr(getattr(app, "state", None), "limits", Limits())
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        ws_max_size=limits.max_message_bytes,
        ws_per_message_deflate=False,
        **options,
    )
    return uvicorn.Server(config)
