"""Size limits: what the server refuses before any env sees it.

- ``BodySizeLimit``: ASGI middleware answering 413 to an HTTP body over ``max_bytes``, from its
  Content-Length or, without one (chunked), as soon as the bytes read so far exceed it; the rest
  is never read. A body within the limit is read whole and replayed to the app
  (``replay_body``, which middleware inside it that read the body use too).

The WebSocket counterpart of the body limit (close code 1009) is in ``envkit.server.routers.ws``.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from envkit.server.errors import ErrorCode

__all__ = ["MAX_BODY_BYTES", "MAX_MESSAGE_BYTES", "BodySizeLimit", "Limits", "replay_body"]

MAX_BODY_BYTES = 64 * 1024
MAX_MESSAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """An app's size limits in bytes (``app.state.limits``).

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> from envkit.server import create_app
        >>> create_app(ChessAdapter, max_body_bytes=1024).state.limits
        Limits(max_body_bytes=1024, max_message_bytes=65536)
    """

    max_body_bytes: int = MAX_BODY_BYTES
    max_message_bytes: int = MAX_MESSAGE_BYTES


class BodySizeLimit:
    """Answer 413 to an HTTP request body over ``max_bytes`` without reading the rest of it.

    Example:
        >>> from starlette.applications import Starlette
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(BodySizeLimit(Starlette(), max_bytes=16))
        >>> response = client.post("/step", content=b'{"action": {"move": "e2e4"}}')
        >>> response.status_code, response.json()["detail"]
        (413, 'the request body is over the limit of 16 bytes')
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay_body(b"".join(chunks), receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over the limit of {self.max_bytes} bytes"
        body = {"detail": message, "code": ErrorCode.VALIDATION_ERROR.value}
        await JSONResponse(body, status_code=413, headers={"Connection": "close"})(
            scope, receive, send
        )


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body``, read whole already, once, then waits on ``receive``."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
