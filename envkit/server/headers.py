"""``ReplyHeaders``: what every HTTP reply of a server says about itself, and where it may send a
browser.

- ``X-Content-Type-Options: nosniff`` on every reply: a browser takes a reply for what its
  ``Content-Type`` says, so a PGN text or a JSON error is never run as a script or shown as a
  page.
- ``Content-Security-Policy`` on every reply that has none of its own (the viewer sets its own,
  kept as it is): ``API_POLICY`` (``default-src 'none'; frame-ancestors 'none'``: a reply of an
  API loads nothing and no page may frame it); and for an HTML page, which here is one of
  FastAPI's documentation pages (Swagger UI at ``/docs``, ReDoc at ``/redoc``, the OAuth2
  redirect), ``docs_policy``: scripts and styles from the CDN paths FastAPI loads them from
  (``cdn.jsdelivr.net/npm/swagger-ui-dist@5/`` and ``redoc@2/``), its own inline scripts by
  their hashes (read from the page: they name its OpenAPI URL, which depends on the mount
  point), inline styles, images from itself and ``data:``, fonts from Google's font CDN (ReDoc),
  requests to its own origin only (the OpenAPI document, "Try it out") and workers from
  ``blob:`` (ReDoc's search); no page may frame it.
- Redirects stay on the server: Starlette writes the ``Location`` of its slash redirects
  (``/viewer`` to ``/viewer/``, ``/health/`` to ``/health``) as an absolute URL built from the
  request's ``Host`` header, which would send a request naming ``evil.example`` there. A
  ``Location`` on the request's own scheme and host is made relative: its path and query.

``create_app`` installs it outside every other middleware but the proxy headers' (whose
scheme and client it must see), so refusals by rate limit, token or origin carry the headers
too; its handler of unexpected errors, which Starlette runs outside all middleware, adds
``API_HEADERS`` itself.
"""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["API_HEADERS", "API_POLICY", "ReplyHeaders", "docs_policy"]

API_POLICY = "default-src 'none'; frame-ancestors 'none'"
API_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": API_POLICY}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def docs_policy(page: bytes) -> str:
    """The policy of a documentation page: what FastAPI's pages load, and ``page``'s own
    inline scripts by hash.

    Example:
        >>> print(docs_policy(b"<script>go()</script>").replace("; ", "\\n"))  # doctest: +ELLIPSIS
        default-src 'none'
        script-src https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/ ... 'sha256-...'
        style-src ...
        ...
        frame-ancestors 'none'
    """
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(page)
    )
    return "; ".join(
        (
            "default-src 'none'",
            "script-src https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/ "
            f"https://cdn.jsdelivr.net/npm/redoc@2/ {hashes}".rstrip(),
            "style-src https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/ "
            "https://fonts.googleapis.com/css 'unsafe-inline'",
            "img-src 'self' data: https://fastapi.tiangolo.com/img/",
            "font-src https://fonts.gstatic.com/",
            "connect-src 'self'",
            "worker-src blob:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


class ReplyHeaders:
    """Add ``nosniff`` and a Content-Security-Policy to every HTTP reply of ``app``, and make
    its redirects to its own origin relative (see the module docstring).

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.responses import PlainTextResponse
        >>> from starlette.routing import Route
        >>> from starlette.testclient import TestClient
        >>> app = Starlette(routes=[Route("/pgn", lambda request: PlainTextResponse("1. e4 *"))])
        >>> client = TestClient(ReplyHeaders(app))
        >>> reply = client.get("/pgn/", headers={"Host": "evil.example"}, follow_redirects=False)
        >>> reply.status_code, reply.headers["location"], reply.headers["x-content-type-options"]
        (307, '/pgn', 'nosniff')
        >>> client.get("/pgn").headers["content-security-policy"]
        "default-src 'none'; frame-ancestors 'none'"
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        page_start: Message | None = None
        page: list[bytes] = []

        async def with_headers(message: Message) -> None:
            nonlocal page_start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                if message["status"] in _REDIRECTS and "location" in headers:
                    headers["Location"] = _relative(headers["location"], scope)
                if "content-security-policy" in headers:
                    await send(message)
                elif headers.get("content-type", "").startswith("text/html"):
                    page_start = message  # its policy needs its inline scripts: read it all
                else:
                    headers["Content-Security-Policy"] = API_POLICY
                    await send(message)
                return
            if page_start is None or message["type"] != "http.response.body":
                await send(message)
                return
            page.append(message.get("body", b""))
            if not message.get("more_body", False):
                body = b"".join(page)
                MutableHeaders(scope=page_start)["Content-Security-Policy"] = docs_policy(body)
                await send(page_start)
                await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, with_headers)


def _relative(location: str, scope: Scope) -> str:
    """``location`` without its scheme and host when they are the request's own (as Starlette
    writes them, from the ``Host`` header or the server's address); else as it is. The path
    keeps one leading slash: ``//evil.example`` would name a host again."""
    own = _own_prefix(scope)
    if own is None or not location.startswith(own):
        return location
    rest = location[len(own) :]
    if rest and rest[0] != "/":
        return location  # the host went on (a longer name, another port) or no path follows
    return "/" + rest.lstrip("/\\")


def _own_prefix(scope: Scope) -> str | None:
    """``scheme://host`` as Starlette's ``URL(scope=...)`` starts an absolute URL."""
    scheme = scope.get("scheme", "http")
    for name, value in scope["headers"]:
        if name == b"host":
            return f"{scheme}://{value.decode('latin-1')}"
    server = scope.get("server")
    if server is None:
        return None
    host, port = server
    if port == _DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"
