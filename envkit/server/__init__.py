"""An OpenEnv-compatible server for any env behind an ``EnvAdapter``, so OpenEnv's clients can
drive it (needs the ``server`` extra: FastAPI, uvicorn).

- ``create_app(adapter_factory, ...)``: the FastAPI app; ``make_server(app)``: uvicorn for it.
- Routes: ``POST /reset`` (opens a session: ``session_id``), ``POST /step``, ``GET /state``,
  ``DELETE /sessions/{id}``, ``GET /health``, ``/metadata``, ``/schema``, ``WS /ws`` (one session
  per connection; ``?session_id=`` attaches it to an HTTP session) and ``POST /mcp`` (JSON-RPC
  tools/list and tools/call).
- ``EnvAdapter``, ``AdapterResult``, ``ToolSpec``, ``EpisodeState``: what an env implements.
- ``SessionStore``: sessions by UUID4, with a cap (CAPACITY_REACHED) and an idle expiry.
- Errors an adapter raises: ``InvalidInputError`` (VALIDATION_ERROR, 422) and
  ``EpisodeStateError`` (EXECUTION_ERROR, 409); ``ErrorCode`` lists OpenEnv's codes.
- Limits: HTTP bodies over 64 KB get 413 unread; WebSocket messages over 64 KB close with 1009;
  a WebSocket with over 1 MiB of output waiting for a client that does not read it (pongs to a
  ping flood) is dropped (``make_server(max_ws_pending_bytes=...)``).
- Strict JSON: a body or message holding NaN, Infinity or a number over a float's range (1e309)
  is refused (400 INVALID_JSON naming the field; an INVALID_JSON frame).
- Replies: every one says ``X-Content-Type-Options: nosniff`` and has a Content-Security-Policy;
  redirects stay relative whatever the ``Host`` header says (``envkit.server.headers``).
- Access (``create_app(rate_limit=..., token=...)``, both off by default): a rate limit per client
  IP (429 RATE_LIMITED with Retry-After; a RATE_LIMITED error frame per WebSocket message over
  it) and a bearer token (401; WebSocket handshakes close 1008); ``/health`` is exempt from both.
- Session ids are capabilities: ``make_server``'s access log prints paths without their query
  strings, and ``create_app(session_owner_check=True)`` (off by default) gives each session a
  secret token that every later use must send in ``X-Session-Token`` (403 without it).
- Secrets handed out once and kept only as SHA-256 digests (seat tokens):
  ``envkit.server.secret_tokens``.
- ``create_app(on_shutdown=...)``: called once at shutdown, after every session's env is closed.
- ``create_app(busy_poll=0.5e-3)``: after a WebSocket reply to a client that steps quickly, the
  event loop polls its sockets for that long instead of sleeping (``envkit.server.busy_poll``).
"""

from __future__ import annotations

from envkit.server.adapter import AdapterResult, EnvAdapter, EpisodeState, ToolSpec
from envkit.server.app import create_app, make_server
from envkit.server.errors import (
    CapacityError,
    EpisodeStateError,
    ErrorCode,
    InvalidInputError,
    ServiceError,
    UnknownSessionError,
)
from envkit.server.limits import MAX_BODY_BYTES, MAX_MESSAGE_BYTES
from envkit.server.sessions import Session, SessionStore

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_MESSAGE_BYTES",
    "AdapterResult",
    "CapacityError",
    "EnvAdapter",
    "EpisodeState",
    "EpisodeStateError",
    "ErrorCode",
    "InvalidInputError",
    "ServiceError",
    "Session",
    "SessionStore",
    "ToolSpec",
    "UnknownSessionError",
    "create_app",
    "make_server",
]
