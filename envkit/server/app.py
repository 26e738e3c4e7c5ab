"""``create_app``: the FastAPI app serving one kind of env; ``make_server``: uvicorn for it."""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable, Sequence
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
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from envkit.server.access import (
    BearerAuth,
    ClientAddress,
    RateLimit,
    RateLimiter,
    SessionTokens,
)
from envkit.server.access_log import hide_queries
from envkit.server.adapter import EnvAdapter
from envkit.server.bodies import ErrorResponse
from envkit.server.busy_poll import DEFAULT_BUSY_POLL_S, BusyPoll, check_window
from envkit.server.errors import (
    ErrorCode,
    ServiceError,
    code_for_status,
    error_headers,
    error_payload,
)
from envkit.server.headers import API_HEADERS, ReplyHeaders
from envkit.server.http_limits import HEADER_TIMEOUT_S, MAX_HEADER_BYTES, HeaderLimitedProtocol
from envkit.server.limits import MAX_BODY_BYTES, MAX_MESSAGE_BYTES, BodySizeLimit, Limits
from envkit.server.origins import JsonBodies, OriginCheck, check_origins
from envkit.server.replies import CodedErrors
from envkit.server.routers import env, info, mcp, sessions, ws
from envkit.server.schema_docs import publish_openapi_without_examples
from envkit.server.service import EnvService
from envkit.server.sessions import SessionStore
from envkit.server.ws_limits import MAX_WS_PENDING_BYTES, limit_pending_output

__all__ = ["create_app", "make_server"]

OPENAPI_VERSION = "1.0.0"  # the version of the HTTP API, as OpenEnv numbers its own


def create_app(
    adapter_factory: Callable[[], EnvAdapter],
    *,
    max_sessions: int = 64,
    max_sessions_per_client: int | None = None,
    idle_timeout: float | None = 600.0,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    clock: Callable[[], float] = time.monotonic,
    rate_limit: int | None = None,
    forwarded_allow_ips: str | Sequence[str] | None = None,
    token: str | None = None,
    on_startup: Callable[[], Any] | None = None,
    on_shutdown: Callable[[], Any] | None = None,
    busy_poll: float = DEFAULT_BUSY_POLL_S,
    allow_origins: Sequence[str] = (),
    session_owner_check: bool = False,
) -> FastAPI:
    """An app serving ``adapter_factory()`` envs over OpenEnv's HTTP, WebSocket and MCP routes.

    Args:
        adapter_factory: makes one env per session (called once more at start-up, to read the
            env's name, schemas and tools).
        max_sessions: open sessions at most, HTTP and WebSocket together.
        max_sessions_per_client: open sessions at most per client IP, HTTP and WebSocket
            together; one more gets 503 CAPACITY_REACHED with reason ``client_session_limit``
            (the WebSocket: that frame, then close 1013). Closed and expired sessions free
            theirs. None: no cap of its own (the default, as for ``rate_limit``; the ``serve``
            commands set half of ``max_sessions``).
        idle_timeout: seconds after which an unused HTTP session closes (None: never).
        max_body_bytes: larger HTTP bodies get 413, unread.
        max_message_bytes: larger WebSocket messages close the connection (1009).
        clock: the time source of idle expiry and the rate limit (tests pass a fake one).
        rate_limit: HTTP requests plus WebSocket messages per minute and client IP, beyond which
            they get 429 (or a RATE_LIMITED error frame); None: no limit (the default, as for the
            ``serve`` commands: every env on one machine shares its IP's budget). A
            WebSocket handshake counts as a request: over the budget it gets 429 too.
        forwarded_allow_ips: the proxies (IPs, CIDR networks, comma-separated, or ``"*"``)
            whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` name the client (uvicorn's
            ``ProxyHeadersMiddleware``); from anyone else those headers are ignored. None (the
            default): the client is always the connection's peer. The rate limit and the
            per-client session cap count by that client.
        token: when set, every route but ``/health`` (``/docs`` and ``/openapi.json`` too) needs
            ``Authorization: Bearer <token>``: 401 without it, and WebSocket handshakes close 1008.
        on_startup: called once when the app starts, before it serves (to start the background
            work of what it mounts; it may be a coroutine function).
        on_shutdown: called once when the app stops, after every session's env is closed (to
            flush what the envs recorded; it may be a coroutine function); uvicorn lets in-flight
            requests finish before that.
        busy_poll: seconds the event loop keeps polling its sockets after each reply instead
            of sleeping (``envkit.server.busy_poll``), which a client stepping in a tight loop
            gets its next reply sooner from; 0 turns it off.
        allow_origins: origins (``scheme://host[:port]``) whose pages may open WebSockets and
            send POST, PUT, PATCH and DELETE, besides the server's own (``"*"``: any); others
            get 403 FORBIDDEN_ORIGIN (``envkit.server.origins``). Every POST body must be
            ``application/json`` (415 UNSUPPORTED_MEDIA_TYPE), and every error reply, mounted
            apps' too, is JSON with a ``code`` (``envkit.server.replies``).
        session_owner_check: for a server several users share, where a session id may be seen
            by others (in a log, a shared notebook): the reply that opens a session (``POST
            /reset``, MCP's ``openenv/session/create``) carries a secret ``session_token``,
            and every later call naming that session (``/step``, ``/state``, ``/reset`` with
            an id, ``DELETE /sessions/{id}``, ``/ws?session_id=``, MCP calls) must send it in
            the ``X-Session-Token`` header (MCP: or ``params.session_token``), else 403
            SESSION_ERROR, reason ``session_token`` (a WebSocket: that frame, then 1008).
            Off by default: OpenEnv's clients name a session by its id alone.
    """
    if token is not None and not token:
        raise ValueError("token must not be empty (None: no token needed)")
    check_window(busy_poll)
    allow_origins = check_origins(allow_origins)
    store = SessionStore(
        adapter_factory,
        max_sessions=max_sessions,
        max_sessions_per_client=max_sessions_per_client,
        idle_timeout=idle_timeout,
        clock=clock,
        owner_check=session_owner_check,
    )
    service = EnvService(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if on_startup is not None:
            result = on_startup()
            if inspect.isawaitable(result):
                await result
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
        responses=_error_responses(
            rate_limited=rate_limit is not None,
            guarded=token is not None,
            owned=session_owner_check,
        ),
    )
    app.state.env_service = service
    publish_openapi_without_examples(app)
    app.state.limits = Limits(max_body_bytes=max_body_bytes, max_message_bytes=max_message_bytes)
    app.add_middleware(BusyPoll, window=busy_poll)
    app.add_middleware(CodedErrors)
    app.add_middleware(JsonBodies, own_parsers=[mcp.MCP_PATH])  # it answers in JSON-RPC
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.add_middleware(OriginCheck, allow_origins=allow_origins)
    if token is not None:
        app.add_middleware(BearerAuth, token=token)
    if rate_limit is not None:  # outermost: floods, and token guessing, are cut off first
        app.add_middleware(RateLimit, limiter=RateLimiter(rate_limit, clock=clock))
    app.add_middleware(ClientAddress)
    if session_owner_check:
        app.add_middleware(SessionTokens)
    app.add_middleware(ReplyHeaders)  # on every reply, refusals too
    if forwarded_allow_ips:  # outside the rest, which then see the client the proxy names
        hosts = forwarded_allow_ips
        if not isinstance(hosts, str):  # uvicorn takes a str or a list
            hosts = list(hosts)
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=hosts)
    for handled in (ServiceError, ValidationError, RequestValidationError):
        app.add_exception_handler(handled, _error_response)
    app.add_exception_handler(HTTPException, _http_error_response)
    app.add_exception_handler(Exception, _unexpected_error_response)
    for module in (info, env, sessions, ws, mcp):
        app.include_router(module.router)
    return app


def _error_responses(
    *, rate_limited: bool, guarded: bool, owned: bool
) -> dict[int | str, dict[str, Any]]:
    """The refusals every route may answer with, for the OpenAPI document."""
    responses: dict[int | str, dict[str, Any]] = {
        400: {"model": ErrorResponse, "description": "The body is not JSON (INVALID_JSON)"},
        403: {
            "model": ErrorResponse,
            "description": "Sent by a web page of an origin not allowed (FORBIDDEN_ORIGIN)"
            + ("; or a session named without its X-Session-Token (SESSION_ERROR)" if owned else ""),
        },
        413: {"model": ErrorResponse, "description": "The body is over the size limit"},
        415: {
            "model": ErrorResponse,
            "description": "A POST body not declared application/json (UNSUPPORTED_MEDIA_TYPE)",
        },
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
    body = {"detail": body.pop("message"), **body}
    return JSONResponse(body, status_code=status, headers=error_headers(error))


async def _http_error_response(request: Request, error: Exception) -> Response:
    """FastAPI's and Starlette's own errors (404 and 405 from routing, 400 for a body it could
    not decode: not UTF-8, too deep) with the code of their status."""
    assert isinstance(error, HTTPException)
    cause = error.__cause__
    if error.status_code == 400 and isinstance(cause, (ValueError, RecursionError)):
        message = f"the body is not valid JSON: {cause}"
        body = {"detail": message, "code": ErrorCode.INVALID_JSON.value}
        return JSONResponse(body, status_code=400)
    response = await http_exception_handler(request, error)
    if isinstance(response, JSONResponse):  # not a 204 or 304, which have no body
        code = code_for_status(error.status_code).value
        body = {"detail": error.detail, "code": code}
        return JSONResponse(body, status_code=error.status_code, headers=error.headers)
    return response


async def _unexpected_error_response(request: Request, error: Exception) -> JSONResponse:
    """A bug: 500 EXECUTION_ERROR, without its text (uvicorn logs the traceback)."""
    body = {"detail": "internal server error", "code": ErrorCode.EXECUTION_ERROR.value}
    return JSONResponse(body, status_code=500, headers=API_HEADERS)  # sent outside ReplyHeaders


def make_server(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_header_bytes: int = MAX_HEADER_BYTES,
    header_timeout: float = HEADER_TIMEOUT_S,
    max_ws_pending_bytes: int = MAX_WS_PENDING_BYTES,
    **options: Any,
) -> uvicorn.Server:
    """A uvicorn server for ``app``, as ``serve`` runs it (and ``benchmarks.server_throughput``
    measures it); ``options`` go to ``uvicorn.Config`` (``log_level``, ...).

    - A request line and headers over ``max_header_bytes`` (default 32 KiB) get 431, and a
      connection that has not sent them whole within ``header_timeout`` seconds (default 10)
      of opening, or of its next request's first byte, is closed
      (``envkit.server.http_limits``: uvicorn's own protocols cannot, see there). Passing
      ``http=`` in ``options`` replaces that protocol, and these limits with it.
    - The access log prints paths without their query strings (``envkit.server.access_log``,
      on uvicorn's loggers for the whole process): a session id in one is a capability.
    - uvicorn's proxy headers are off: by default it believes ``X-Forwarded-For`` from
      127.0.0.1, so any local client could pick the IP the rate limit counts.
      ``create_app(forwarded_allow_ips=...)`` names the proxies to believe.

    - A WebSocket frame over the app's message limit closes the connection (1009); an app
      without ``app.state.limits`` (not made here, or not FastAPI) gets the default limit.
    - A WebSocket connection is dropped when, after a read from its client, over
      ``max_ws_pending_bytes`` (default 1 MiB) of output waits for that client: pongs to a
      flood of pings it never reads (``envkit.server.ws_limits``: uvicorn writes them whatever
      the buffer holds). It must exceed the largest message the app sends. Any ``ws=`` in
      ``options`` (a name uvicorn knows, or a protocol class) gets the limit too.
    - No per-message compression: deflating every reply of about 1 KB costs a noticeable part
      of a served chess step (for a client that asks for it, as OpenEnv's does by default), and
      saves nothing that matters on the networks an env server runs on.
    - uvicorn's ``auto`` choices take uvloop (in the ``server`` extra) when it is installed,
      and the websockets-sansio WebSocket implementation: per step over one
      connection, faster than asyncio's loop and than the legacy websockets and the wsproto
      implementations.
    """
    limits = getattr(getattr(app, "state", None), "limits", Limits())
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        **{
            "ws_max_size": limits.max_message_bytes,
            "ws_per_message_deflate": False,
            "proxy_headers": False,
            "http": HeaderLimitedProtocol.limited(max_header_bytes, header_timeout),
            **options,
            "ws": limit_pending_output(options.get("ws", "auto"), max_ws_pending_bytes),
        },
    )
    hide_queries()
    return uvicorn.Server(config)
