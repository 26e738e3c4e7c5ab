"""What a web page the user visits may not make a local server do: the cross-site refusals.

A server without a token trusts whoever can reach it, and a browser reaches 127.0.0.1 for any
page it shows. Browsers say which page asks (``Origin``) on every WebSocket handshake and every
request but GET and HEAD; and the requests a page may send without asking first (a CORS
preflight) cannot say ``Content-Type: application/json``. So:

- ``OriginCheck``: a WebSocket handshake or a POST, PUT, PATCH or DELETE whose ``Origin`` is not
  allowed gets 403 ``{"detail", "code": "FORBIDDEN_ORIGIN"}`` (a handshake: before it is
  accepted). Allowed: the server's own origin (the scheme, host and port the request was sent
  to, from its ``Host``), those named in ``allow_origins`` (``--allow-origin``), and requests
  without an ``Origin``, as curl, SDKs and OpenEnv's clients send them.
- ``JsonBodies``: a POST whose body is not declared ``application/json`` gets 415 ``{"detail",
  "code": "UNSUPPORTED_MEDIA_TYPE"}``; an empty body without a ``Content-Type`` passes (``curl
  -X POST /reset``: the route decides whether it needs a body). And as every body FastAPI reads
  as JSON is read by ``json``, which takes NaN, Infinity and 1e309 (infinity) for numbers that
  would then be stored and written back as ``null``, ``JsonBodies`` reads each one first with
  ``envkit.server.jsontext.loads``: one with a number JSON cannot hold gets 400 ``{"detail",
  "code": "INVALID_JSON", "reason": "non_finite_number", "errors"}`` naming where, e.g.
  ``body.white.timeout_seconds: 1e309 is too large ...``. Other malformed JSON is the route's
  to refuse, as before. Install it inside a body size limit, which bounds what it reads.

GET requests stay open to any origin: no reply carries CORS headers, so a page cannot read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from envkit.server.access import route_path
from envkit.server.errors import ErrorCode, ErrorDetail, InvalidJsonError, error_payload
from envkit.server.jsontext import NonFiniteNumberError, loads
from envkit.server.limits import replay_body

__all__ = ["ANY_ORIGIN", "JsonBodies", "OriginCheck", "check_origins", "normalize_origin"]

ANY_ORIGIN = "*"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_WEB_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, without a default port or a trailing ``/``;
    ValueError if ``origin`` is not an http(s) origin (``null``, a path, credentials, another
    scheme).

    Example:
        >>> normalize_origin("HTTP://LocalHost:80"), normalize_origin("https://a.example:8443")
        ('http://localhost', 'https://a.example:8443')
        >>> normalize_origin("http://a.example/page")
        Traceback (most recent call last):
        ...
        ValueError: not an origin (scheme://host[:port]): 'http://a.example/page'
    """
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ValueError(f"not an origin (scheme://host[:port]): {origin!r}")
    return _origin(parts.scheme.lower(), parts.hostname, port)


def check_origins(allow_origins: Iterable[str]) -> tuple[str, ...]:
    """``allow_origins`` normalized (``"*"`` kept as it is), or ValueError naming a bad one:
    ``create_app`` checks them at once, not when the server builds its middleware.

    Example:
        >>> check_origins(["HTTPS://Viewer.Example:443/", "*"])
        ('https://viewer.example', '*')
    """
    return tuple(o if o == ANY_ORIGIN else normalize_origin(o) for o in allow_origins)


def _origin(scheme: str, host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


class OriginCheck:
    """Refuse browser WebSocket handshakes and state-changing requests from other origins.

    Args:
        app: the app behind the check.
        allow_origins: origins allowed besides the server's own (``"*"``: every origin, which
            turns the check off); each must be ``scheme://host[:port]``, else ValueError.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(OriginCheck(Starlette(), ["http://viewer.example"]))
        >>> client.post("/reset", headers={"Origin": "http://evil.example"}).json()["code"]
        'FORBIDDEN_ORIGIN'
        >>> [client.post("/reset", headers=h).status_code  # 404: allowed, no such route
        ...  for h in ({}, {"Origin": "http://testserver"}, {"Origin": "http://viewer.example"})]
        [404, 404, 404]
    """

    def __init__(self, app: ASGIApp, allow_origins: Iterable[str] = ()) -> None:
        allowed = check_origins(allow_origins)
        self.app, self.any_origin = app, ANY_ORIGIN in allowed
        self.allowed = frozenset(allowed) - {ANY_ORIGIN}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any_origin or not _checked(scope):
            await self.app(scope, receive, send)
            return
        origin = dict(scope["headers"]).get(b"origin")
        if origin is None or self._allows(origin.decode("latin-1"), scope):
            await self.app(scope, receive, send)
            return
        message = (
            "cross-origin requests are refused: this request's Origin is neither the server's "
            "own nor one the server allows (serve --allow-origin ORIGIN)"
        )
        body = {"detail": message, "code": ErrorCode.FORBIDDEN_ORIGIN.value}
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
            "extensions", {}
        ):
            await send({"type": "websocket.close", "code": 1008})  # the server answers 403
            return
        await JSONResponse(body, status_code=403)(scope, receive, send)

    def _allows(self, origin: str, scope: Scope) -> bool:
        try:
            normalized = normalize_origin(origin)
        except ValueError:
            return False  # "null" (sandboxed frames, file: pages) or garbage
        return normalized in self.allowed or normalized == _own_origin(scope)


def _checked(scope: Scope) -> bool:
    """Whether the check applies: a WebSocket handshake, or a request that changes state."""
    return scope["type"] == "websocket" or (
        scope["type"] == "http" and scope["method"] in STATE_CHANGING
    )


def _own_origin(scope: Scope) -> str | None:
    """The origin the request was sent to: its scheme and its ``Host`` header."""
    host = dict(scope["headers"]).get(b"host")
    scheme = _WEB_SCHEMES.get(scope.get("scheme", "http"))
    if host is None or scheme is None:
        return None
    try:
        return normalize_origin(f"{scheme}://{host.decode('latin-1')}")
    except ValueError:
        return None


class JsonBodies:
    """Answer 415 to a POST whose body is not declared ``application/json``, and 400 to a JSON
    body holding a number JSON cannot (NaN, Infinity, 1e309).

    Args:
        app: the app behind the check.
        own_parsers: paths (below the app's mount point) whose routes read their bodies with
            ``jsontext.loads`` themselves, to answer bad JSON in their own protocol (MCP's
            JSON-RPC parse error); their bodies are not read here.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(JsonBodies(Starlette()))
        >>> reply = client.post("/mcp", content=b"{}", headers={"Content-Type": "text/plain"})
        >>> reply.status_code, reply.json()["code"]
        (415, 'UNSUPPORTED_MEDIA_TYPE')
        >>> client.post("/mcp", json={}).status_code, client.post("/reset").status_code
        (404, 404)
        >>> json_type = {"Content-Type": "application/json"}
        >>> reply = client.post("/reset", content=b'{"seed": NaN}', headers=json_type)
        >>> reply.status_code, reply.json()["detail"]
        (400, 'body.seed: NaN is not valid JSON')
    """

    def __init__(self, app: ASGIApp, own_parsers: Iterable[str] = ()) -> None:
        self.app, self.own_parsers = app, frozenset(own_parsers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and not _declares_json(scope):
            message = "a request body must be JSON, sent with Content-Type: application/json"
            body = {"detail": message, "code": ErrorCode.UNSUPPORTED_MEDIA_TYPE.value}
            await JSONResponse(body, status_code=415)(scope, receive, send)
            return
        if not _read_as_json(scope) or route_path(scope) in self.own_parsers:
            await self.app(scope, receive, send)
            return
        scope[_CHECKED] = True  # an app mounted inside reads no body twice
        content = await _read_body(receive)
        if content is None:
            return  # the client left
        try:
            loads(content)
        except NonFiniteNumberError as error:
            await _refuse_number(error, scope, receive, send)
            return
        except ValueError:
            pass  # not JSON at all: the route refuses it in its own words
        await self.app(scope, replay_body(content, receive), send)


_CHECKED = "envkit.json_checked"


def _read_as_json(scope: Scope) -> bool:
    """Whether the request has a body, not checked yet, that FastAPI reads as JSON: declared
    JSON (``application/json`` or ``application/*+json``), or not declared at all."""
    headers = dict(scope["headers"])
    if scope.get(_CHECKED) or _no_body(headers):
        return False
    declared = headers.get(b"content-type")
    if declared is None:
        return True
    media_type = declared.split(b";", 1)[0].strip().lower()
    return media_type == b"application/json" or (
        media_type.startswith(b"application/") and media_type.endswith(b"+json")
    )


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None if the client disconnected first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse_number(
    error: NonFiniteNumberError, scope: Scope, receive: Receive, send: Send
) -> None:
    loc = ("body", *error.loc)
    where = ".".join(map(str, loc))
    detail = ErrorDetail(loc=loc, msg=error.problem, type="non_finite_number")
    refusal = InvalidJsonError(
        f"{where}: {error.problem}", reason="non_finite_number", errors=[detail]
    )
    status, body = error_payload(refusal)
    reply = JSONResponse({"detail": body.pop("message"), **body}, status_code=status)
    await reply(scope, receive, send)


def _declares_json(scope: Scope) -> bool:
    """Whether the body is declared JSON, or is empty and declares nothing."""
    headers = dict(scope["headers"])
    declared = headers.get(b"content-type")
    if declared is None:
        return _no_body(headers)
    media_type = declared.split(b";", 1)[0].strip().lower()
    return media_type == b"application/json"


def _no_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the request says it has no body (no length, or 0, and not chunked)."""
    no_length = headers.get(b"content-length", b"0").strip() == b"0"
    return no_length and b"transfer-encoding" not in headers
