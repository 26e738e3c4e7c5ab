"""Limits on a request's line and headers, which uvicorn's httptools protocol does not have.

- ``HeaderLimitedProtocol``: uvicorn's ``HttpToolsProtocol`` (what its ``auto`` choice takes when
  httptools is installed, as the ``server`` extra has it) with two limits added:
  a request line and headers over ``max_header_bytes`` get 431 (with the headers of
  ``envkit.server.headers.API_HEADERS``, as every reply) and the connection is closed, and
  a connection that has not sent a whole request line and headers within ``header_timeout``
  seconds of opening (or, on a kept-alive connection, of the next request's first byte) is
  closed without a reply. ``make_server`` serves with it.

Why here: uvicorn's options do not cover this for httptools. ``h11_max_incomplete_event_size``
is for h11 only (which answers 400, not 431, and is slower per request), ``timeout_keep_alive``
only runs between two requests (a byte of the next one cancels it, and nothing is armed before
the first), and ``limit_concurrency`` refuses everyone once a flood holds the connections.
httptools itself has no size limit: it gathers a header value in memory until its end, so one
unfinished 50 MB header was held whole. The bytes are therefore counted as they are read, in
``data_received``: a refusal comes at most one read (256 KiB) past the limit. Pipelined requests
may be counted a read early, which only matters for requests already near the limit.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from envkit.server.errors import ErrorCode
from envkit.server.headers import API_HEADERS

__all__ = ["HEADER_TIMEOUT_S", "MAX_HEADER_BYTES", "HeaderLimitedProtocol"]

MAX_HEADER_BYTES = 32 * 1024  # twice h11's and Node's default: room for a browser's cookies
HEADER_TIMEOUT_S = 10.0


class HeaderLimitedProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` refusing oversized (431) and unfinished (closed) request headers.

    ``limited(max_header_bytes, header_timeout)`` makes the subclass with other limits that
    uvicorn's ``Config(http=...)`` takes (uvicorn builds the protocol, so it takes a class).

    Example:
        >>> protocol = HeaderLimitedProtocol.limited(4096, 2.5)
        >>> protocol.max_header_bytes, protocol.header_timeout
        (4096, 2.5)
    """

    max_header_bytes: ClassVar[int] = MAX_HEADER_BYTES
    header_timeout: ClassVar[float] = HEADER_TIMEOUT_S

    @classmethod
    def limited(cls, max_header_bytes: int, header_timeout: float) -> type[HeaderLimitedProtocol]:
        if max_header_bytes < 1 or not header_timeout > 0:
            raise ValueError(
                f"need max_header_bytes >= 1 and header_timeout > 0, "
                f"got {max_header_bytes} and {header_timeout}"
            )
        limits = {"max_header_bytes": max_header_bytes, "header_timeout": header_timeout}
        return type(cls.__name__, (cls,), limits)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading_headers = False
        self._header_bytes = 0
        self._refused = False
        self._deadline: asyncio.TimerHandle | None = None

    # uvicorn's own signature, which narrows asyncio's BaseTransport (hence the ignore)
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_headers()  # a connection that never sends a byte is timed out too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # read and dropped until the client or the deadline closes the connection
        super().data_received(data)
        if self._reading_headers and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.max_header_bytes:
                self._refuse()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._reading_headers:  # the next request on a kept-alive connection
            self._start_headers()

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        self._cancel_deadline()
        super().on_headers_complete()

    def _start_headers(self) -> None:
        self._reading_headers, self._header_bytes = True, 0
        self._set_deadline(self.header_timeout)

    def _refuse(self) -> None:
        """Answer 431, then drop what the client still sends for a while before closing: a
        close with unread bytes resets the connection, which can lose the reply on its way."""
        self._refused, self._reading_headers = True, False
        message = (
            f"the request line and headers are over the limit of {self.max_header_bytes} bytes"
        )
        body = json.dumps({"detail": message, "code": ErrorCode.VALIDATION_ERROR.value}).encode()
        head = [
            STATUS_LINE[431],
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            *(
                b"%s: %s\r\n" % (name.encode(), value.encode())
                for name, value in API_HEADERS.items()
            ),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join([*head, body]))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._set_deadline(self.header_timeout)

    def _set_deadline(self, seconds: float) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(seconds, self._close)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _close(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()
