"""What keeps the viewer's pages self-contained, and its one large body within bounds.

- ``ViewerHeaders``: ASGI middleware giving every reply of the viewer a Content-Security-Policy
  (``content_security_policy``: the page may load and connect to its own origin only, its
  WebSockets included; images also from ``data:`` URLs; no inline script or style, no plugin,
  no framing), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer`` and
  ``Cache-Control: no-cache`` unless the route set one
- ``RouteBodyLimits``: ``envkit.server.limits.BodySizeLimit`` with larger limits for named paths
- ``allow_larger_body(app, path, max_bytes)``: swap an app's ``BodySizeLimit`` for a
  ``RouteBodyLimits`` that lets ``path`` take ``max_bytes`` (the replay of a file), every other
  route keeping the app's limit
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envkit.server.access import route_path
from envkit.server.limits import MAX_BODY_BYTES, BodySizeLimit

__all__ = ["RouteBodyLimits", "ViewerHeaders", "allow_larger_body", "content_security_policy"]

# A Host header the policy may repeat: a name or IPv4 address, or a bracketed IPv6 one, and a port.
_HOST = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$")
_FIXED_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def content_security_policy(host: str | None) -> str:
    """The viewer's policy for a page served to ``host`` (the request's ``Host`` header): its
    own origin for everything, its WebSockets named too (``'self'`` covers them only in newer
    browsers), ``data:`` images; a host that is not one is left out, never echoed.

    Example:
        >>> print(content_security_policy("127.0.0.1:8000").replace("; ", "\\n"))
        default-src 'self'
        connect-src 'self' ws://127.0.0.1:8000 wss://127.0.0.1:8000
        img-src 'self' data:
        object-src 'none'
        base-uri 'none'
        form-action 'self'
        frame-ancestors 'none'
        >>> "evil" in content_security_policy("x; script-src evil")
        False
    """
    sockets = f" ws://{host} wss://{host}" if host and _HOST.match(host) else ""
    return "; ".join(
        (
            "default-src 'self'",
            f"connect-src 'self'{sockets}",
            "img-src 'self' data:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


class ViewerHeaders:
    """Add the viewer's security headers (see the module docstring) to every HTTP reply."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        policy = content_security_policy(host)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = policy
                for name, value in _FIXED_HEADERS.items():
                    headers[name] = value
                if "cache-control" not in headers:
                    headers["Cache-Control"] = "no-cache"  # revalidate: a new package shows
            await send(message)

        await self.app(scope, receive, with_headers)


class RouteBodyLimits:
    """``BodySizeLimit`` at ``max_bytes``, except for the paths of ``larger`` (a path relative
    to the app this wraps, as its routes see it), each with its own limit.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> app = RouteBodyLimits(Starlette(), max_bytes=4, larger={"/big": 64})
        >>> client = TestClient(app)
        >>> [client.post(path, content=b"0123456789").status_code for path in ("/small", "/big")]
        [413, 404]
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = MAX_BODY_BYTES,
        larger: Mapping[str, int] | None = None,
    ) -> None:
        self.default = BodySizeLimit(app, max_bytes)
        self.larger = {path: BodySizeLimit(app, limit) for path, limit in (larger or {}).items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.larger.get(route_path(scope), self.default)(scope, receive, send)


def allow_larger_body(app: FastAPI, path: str, max_bytes: int) -> None:
    """Let ``path`` of ``app`` take bodies up to ``max_bytes``: the app's ``BodySizeLimit``
    (``envkit.server.create_app`` adds one) becomes a ``RouteBodyLimits`` with the same limit
    for every other path. An app without one is left as it is; one that has started serving
    cannot change its middleware (RuntimeError).
    """
    if app.middleware_stack is not None:
        raise RuntimeError("allow_larger_body must be called before the app serves a request")
    for index, entry in enumerate(app.user_middleware):
        # starlette types an entry's class and keyword arguments by a ParamSpec that is bound
        # only in Middleware.__init__, so mypy sees them as unrelated to BodySizeLimit's
        factory: object = entry.cls
        if factory is BodySizeLimit:
            default = cast(int, entry.kwargs.get("max_bytes", MAX_BODY_BYTES))  # its int arg
            larger = {path: max(default, max_bytes)}
            app.user_middleware[index] = Middleware(
                RouteBodyLimits, max_bytes=default, larger=larger
            )
