"""``CodedErrors``: every HTTP error reply is a JSON object with a ``code``, whoever made it.

``create_app``'s own handlers give its errors a code; an app mounted in it (the chess service
under ``/service``) answers with its own handlers, and Starlette's defaults (``{"detail": "Not
Found"}``, a plain-text ``Internal Server Error``) have none. This middleware reads an error
reply (status 400 and above) that is not a JSON object with a ``code`` (nor a JSON-RPC reply,
which has its code in ``error``) and sends instead
``{"detail": <its detail, or its text>, "code": code_for_status(status)}``, with the same status
and headers. Successful replies, and error replies that have a code, pass through unread.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envkit.server.errors import MAX_MESSAGE_CHARS, code_for_status

__all__ = ["CodedErrors"]


class CodedErrors:
    """Give every HTTP error reply of ``app`` a JSON body with a ``code``.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> TestClient(CodedErrors(Starlette())).get("/nowhere").json()
        {'detail': 'Not Found', 'code': 'NOT_FOUND'}
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def coded(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message  # held until the whole body is in
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await _send_coded(start, b"".join(chunks), send)

        await self.app(scope, receive, coded)


async def _send_coded(start: Message, body: bytes, send: Send) -> None:
    headers = MutableHeaders(raw=list(start.get("headers", [])))
    replaced = _coded_body(start["status"], body, headers.get("content-type", ""))
    if replaced is not None:
        body = replaced
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(body))
    await send({**start, "headers": headers.raw})
    await send({"type": "http.response.body", "body": body})


def _coded_body(status: int, body: bytes, content_type: str) -> bytes | None:
    """The body to send instead of ``body``, or None when it already has a code."""
    parsed: Any = None
    if content_type.startswith("application/json"):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
    if isinstance(parsed, dict) and ("code" in parsed or parsed.get("jsonrpc") == "2.0"):
        return None  # coded already, or a JSON-RPC error, whose code is in its "error"
    if isinstance(parsed, dict) and "detail" in parsed:
        detail = parsed["detail"]
    else:
        detail = body.decode("utf-8", "replace")[:MAX_MESSAGE_CHARS]
    coded = {"detail": detail, "code": code_for_status(status).value}
    return json.dumps(coded).encode()
