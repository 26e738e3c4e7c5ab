"""A bound on what a WebSocket connection may leave the server holding for a client that does
not read, which uvicorn's WebSocket protocols do not have.

- ``limit_pending_output(protocol, max_pending_bytes)``: the subclass of one of uvicorn's
  WebSocket protocols (a class, or its name in ``uvicorn.Config(ws=...)``) that drops a
  connection whose output waiting to be sent is over ``max_pending_bytes`` after a read from
  its client. ``make_server`` serves with it.

Why: a message the app sends waits until the transport's write buffer drains (backpressure),
but uvicorn answers each ping with a pong written to the transport at once, whatever the
buffer holds. Without a bound, a client that sends pings and never reads has the server buffer
every pong, hundreds of MB on one socket, on routes that need no session slot (a game's
spectator events) as on the others. The check runs after each read, where pongs are written:
a read of at most 256 KiB of pings adds about as much to the buffer, so a connection holds at
most that much over the limit before it goes. It is aborted, not closed: a close waits for the
buffer to drain, which a client that does not read never lets happen; an abort frees it at once.

uvicorn's WebSocket protocols: "auto" takes websockets-sansio (websockets is in the ``server``
extra), which like wsproto writes pongs at once; the deprecated legacy "websockets" waits for
each pong to drain before it reads on, so its buffer stays small and the limit never comes into
play there (the connection stays open, unread).
"""

from __future__ import annotations

import asyncio
import logging
from typing import ClassVar

from uvicorn.config import WS_PROTOCOLS
from uvicorn.importer import import_from_string

__all__ = ["MAX_WS_PENDING_BYTES", "PendingOutputLimit", "limit_pending_output"]

logger = logging.getLogger(__name__)

MAX_WS_PENDING_BYTES = 1024 * 1024


class PendingOutputLimit(asyncio.Protocol):
    """Mixed into a uvicorn WebSocket protocol: abort the connection when, after a read, its
    transport holds over ``max_pending_bytes`` of output for the client."""

    max_pending_bytes: ClassVar[int] = MAX_WS_PENDING_BYTES
    transport: asyncio.Transport  # set by uvicorn's protocol when the connection is made

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # the uvicorn protocol's, next in the MRO
        pending = self.transport.get_write_buffer_size()
        if pending > self.max_pending_bytes and not self.transport.is_closing():
            peer = self.transport.get_extra_info("peername")
            logger.warning(
                "WebSocket from %s dropped: %d bytes of output wait for a client that does not "
                "read them (the limit is %d)",
                peer,
                pending,
                self.max_pending_bytes,
            )
            self.transport.abort()


def limit_pending_output(
    protocol: str | type[asyncio.Protocol], max_pending_bytes: int = MAX_WS_PENDING_BYTES
) -> str | type[asyncio.Protocol]:
    """``protocol`` (a class, or a name uvicorn knows: "auto", "websockets-sansio",
    "wsproto", "websockets") with the limit; "none" (no WebSockets) as it is.

    Example:
        >>> limited = limit_pending_output("auto", 4096)
        >>> limited.__name__, limited.max_pending_bytes
        ('WebSocketsSansIOProtocol', 4096)
        >>> limit_pending_output("none")
        'none'
    """
    if max_pending_bytes < 1:
        raise ValueError(f"max_pending_bytes must be at least 1, got {max_pending_bytes}")
    base: type[asyncio.Protocol] | None
    if isinstance(protocol, str):
        path = WS_PROTOCOLS.get(protocol, protocol)  # a name, or "module:attribute"
        base = None if path is None else import_from_string(path)
    else:
        base = protocol
    if base is None:  # "none", or "auto" without a WebSocket library installed
        return protocol
    attributes = {"max_pending_bytes": max_pending_bytes, "__module__": __name__}
    limited: type[asyncio.Protocol] = type(base.__name__, (PendingOutputLimit, base), attributes)
    return limited
