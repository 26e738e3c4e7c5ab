"""Who may call the server, and how often: checked before any route or env sees a request.

- ``RateLimiter``: a token bucket per client IP (``rate`` calls per ``period`` seconds, as a burst
  or spread out); forgets clients whose bucket has refilled, so memory stays bounded.
- ``RateLimit``: ASGI middleware that counts each HTTP request, each WebSocket handshake and
  each incoming WebSocket message. Over the limit, HTTP gets 429 with ``Retry-After`` and
  ``{detail, code: "RATE_LIMITED"}``; so does a WebSocket handshake, refused before it is
  accepted (where the server cannot send an HTTP reply to a handshake, ASGI's
  ``websocket.http.response`` extension, it closes 1008 instead, which uvicorn answers 403); a
  WebSocket message is dropped and answered with an error frame of that code (the connection
  stays open, as after any error frame).
- ``ClientAddress``: ASGI middleware that names the client to ``envkit.server.sessions``
  (``current_client``), which caps the sessions one client may hold.
- ``BearerAuth``: ASGI middleware requiring ``Authorization: Bearer <token>`` (compared in
  constant time); without it HTTP gets 401 with ``WWW-Authenticate: Bearer`` and a WebSocket
  handshake is refused (close 1008 before accept; uvicorn answers 403).
- ``SessionTokens``: ASGI middleware that hands the request's ``X-Session-Token`` header to the
  session store (``current_token``), whose owner check compares it with the session's.

``/health`` is exempt from both, so load balancers and probes need neither a token nor a budget.
The client IP is the connection's peer (``scope["client"]``), never a header: behind a proxy,
``create_app(forwarded_allow_ips=...)`` (``--forwarded-allow-ips``) rewrites it from
``X-Forwarded-For`` for requests from those proxies only, before these middlewares run.
"""

from __future__ import annotations

import hmac
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envkit.server.errors import ErrorCode
from envkit.server.sessions import current_client, current_token

__all__ = [
    "EXEMPT_PATHS",
    "SESSION_TOKEN_HEADER",
    "BearerAuth",
    "ClientAddress",
    "RateLimit",
    "RateLimiter",
    "SessionTokens",
    "route_path",
]

EXEMPT_PATHS = frozenset({"/health"})
SESSION_TOKEN_HEADER = "X-Session-Token"
CLOSE_POLICY_VIOLATION = 1008


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per key: ``rate`` calls at once, refilled at ``rate / period`` per second.

    A bucket that has refilled completely is the same as no bucket, so those are dropped (the
    least recently used first, kept in order of use); ``max_clients`` caps the rest, dropping the
    least recently used beyond it (which forgives its debt: better than unbounded memory).

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(2, period=60.0, clock=lambda: now[0])
        >>> [limiter.acquire("1.2.3.4") for _ in range(3)]
        [0, 0, 30]
        >>> now[0] = 30.0
        >>> limiter.acquire("1.2.3.4"), limiter.acquire("5.6.7.8")
        (0, 0)
    """

    def __init__(
        self,
        rate: int,
        *,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = 10_000,
    ) -> None:
        if rate < 1 or period <= 0 or max_clients < 1:
            raise ValueError(
                f"need rate >= 1, period > 0 and max_clients >= 1, "
                f"got {rate}, {period}, {max_clients}"
            )
        self.rate, self.period, self.clock, self.max_clients = rate, period, clock, max_clients
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()  # TestClient and thread pools may call from several threads

    def __len__(self) -> int:
        return len(self._buckets)

    def acquire(self, key: str) -> int:
        """Take one call from ``key``'s budget: 0 if allowed, else whole seconds to wait."""
        now = self.clock()
        with self._lock:
            self._forget_stale(now)
            bucket = self._buckets.pop(key, None) or _Bucket(float(self.rate), now)
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(float(self.rate), bucket.tokens + elapsed * self.rate / self.period)
            bucket.updated = now
            self._buckets[key] = bucket  # the most recently used go last
            if len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0
            wait = (1.0 - bucket.tokens) * self.period / self.rate
            return max(1, math.ceil(round(wait, 6)))  # round: 1.0000000000000009 s is 1 s

    def _forget_stale(self, now: float) -> None:
        """Drop buckets untouched for a whole period: they are full again."""
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            if now - oldest.updated < self.period:
                return
            del self._buckets[key]


class RateLimit:
    """Refuse HTTP requests and WebSocket messages of a client IP over its ``limiter`` budget.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(RateLimit(Starlette(), RateLimiter(1)))  # an app without routes
        >>> [client.get("/state").status_code for _ in range(2)]
        [404, 429]
        >>> client.get("/state").headers["Retry-After"]
        '60'
    """

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app, self.limiter = app, limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or route_path(scope) in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        key = _client_ip(scope)
        wait = self.limiter.acquire(key)  # a WebSocket's handshake counts as one request
        if wait:
            await self._refuse(scope, receive, send, wait)
        elif scope["type"] == "websocket":
            await self.app(scope, self._counted(key, receive, send), send)
        else:
            await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, wait: int) -> None:
        body = {"detail": _over(self.limiter, wait), "code": ErrorCode.RATE_LIMITED.value}
        response = JSONResponse(body, status_code=429, headers={"Retry-After": str(wait)})
        if scope["type"] == "http":
            await response(scope, receive, send)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await _deny_handshake(response, send)
        else:
            await send({"type": "websocket.close", "code": CLOSE_POLICY_VIOLATION})

    def _counted(self, key: str, receive: Receive, send: Send) -> Receive:
        """A ``receive`` that answers messages over the budget itself and waits for the next."""

        async def counted() -> Message:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                wait = self.limiter.acquire(key)
                if not wait:
                    return message
                data = {
                    "code": ErrorCode.RATE_LIMITED.value,
                    "message": _over(self.limiter, wait),
                    "retry_after": wait,
                }
                frame = json.dumps({"type": "error", "data": data})
                await send({"type": "websocket.send", "text": frame})

        return counted


class ClientAddress:
    """Name the client (its IP, as ``RateLimit`` keys it) to the session store while its request
    or WebSocket is served, so that ``SessionStore.create`` counts the session as the client's.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.responses import PlainTextResponse
        >>> from starlette.routing import Route
        >>> from starlette.testclient import TestClient
        >>> whose = Route("/", lambda request: PlainTextResponse(current_client.get()))
        >>> TestClient(ClientAddress(Starlette(routes=[whose]))).get("/").text
        'testclient'
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = current_client.set(_client_ip(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            current_client.reset(token)


class SessionTokens:
    """Present the request's ``X-Session-Token`` header (a WebSocket's: its handshake's) to the
    session store while the request or WebSocket is served, as ``current_token``.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.responses import PlainTextResponse
        >>> from starlette.routing import Route
        >>> from starlette.testclient import TestClient
        >>> shown = Route("/", lambda request: PlainTextResponse(str(current_token.get())))
        >>> client = TestClient(SessionTokens(Starlette(routes=[shown])))
        >>> client.get("/", headers={"X-Session-Token": "t0ken"}).text, client.get("/").text
        ('t0ken', 'None')
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(SESSION_TOKEN_HEADER.lower().encode())
        token = current_token.set(None if header is None else header.decode("latin-1"))
        try:
            await self.app(scope, receive, send)
        finally:
            current_token.reset(token)


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every route but ``EXEMPT_PATHS``.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(BearerAuth(Starlette(), token="s3cret"))  # an app without routes
        >>> client.get("/state").json()
        {'detail': 'a bearer token is required', 'code': 'UNAUTHORIZED'}
        >>> client.get("/state", headers={"Authorization": "Bearer s3cret"}).status_code
        404
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or route_path(scope) in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization")
        if header is not None and self._matches(header):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": CLOSE_POLICY_VIOLATION})
            return
        challenge = "Bearer" if header is None else 'Bearer error="invalid_token"'
        message = "a bearer token is required" if header is None else "the token is not valid"
        body = {"detail": message, "code": ErrorCode.UNAUTHORIZED.value}
        headers = {"WWW-Authenticate": challenge}
        await JSONResponse(body, status_code=401, headers=headers)(scope, receive, send)

    def _matches(self, header: bytes) -> bool:
        scheme, _, credentials = header.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.token)


def route_path(scope: Scope) -> str:
    """The path the app's routes match: without the ``root_path`` it is mounted under."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _client_ip(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else "unknown"


async def _deny_handshake(response: JSONResponse, send: Send) -> None:
    """Answer a WebSocket handshake with ``response`` instead of accepting it."""
    start = {"status": response.status_code, "headers": response.raw_headers}
    await send({"type": "websocket.http.response.start", **start})
    await send({"type": "websocket.http.response.body", "body": response.body})


def _over(limiter: RateLimiter, wait: int) -> str:
    return f"over the limit of {limiter.rate} requests per {limiter.period:g} s; retry in {wait} s"
