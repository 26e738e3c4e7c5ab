"""A WebSocket client that waits for a reply by polling its socket instead of sleeping in ``recv``.

Why: on a VM, a process that sleeps longer than the hypervisor's halt-polling window (a few
hundred microseconds) while the server computes a step has its idle vCPU descheduled, and being
woken costs it ~0.1 ms more per reply. Measured on this project's 2-vCPU machine with a bare
ASGI server that busy-waits before it echoes a 1 KB reply, blocking client (``websockets.sync``)
against this one, p50 round trip minus the busy wait:

| server busy | 0 | 0.1 ms | 0.2 ms | 0.3 ms | 0.5 ms |
|---|---:|---:|---:|---:|---:|
| blocking client | 0.18 ms | 0.16 | 0.14-0.23 | 0.23-0.24 | 0.22-0.26 |
| polling client | 0.10-0.13 ms | 0.08-0.10 | 0.10-0.12 | 0.11 | 0.19 |

A served chess step takes ~0.3 ms, right where the blocking client starts paying. The polling
client keeps its vCPU awake, so what it measures is the server and the loopback, not its own
wake-up; ``benchmarks.server_throughput`` runs both. The handshake, framing and masking are
``websockets``' own sans-I/O ``ClientProtocol``; only the socket I/O is here.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from types import TracebackType

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

__all__ = ["PollingConnection"]

READ_SIZE = 1 << 20


class PollingConnection:
    """One WebSocket connection whose ``recv`` spins on a non-blocking socket.

    Args:
        url: ``ws://host:port/path`` (no TLS: loopback benchmarks only).
        timeout: seconds to wait for the handshake or a reply before ``TimeoutError``.
    """

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        uri = parse_uri(url)
        if uri.secure:
            raise ValueError(f"{url}: the polling client speaks plain ws:// only")
        self.timeout = timeout
        self.protocol = ClientProtocol(uri, max_size=None)
        self.sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self._texts: list[str] = []
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        self._wait(lambda: self.protocol.state is not State.CONNECTING)
        if self.protocol.handshake_exc is not None:
            self.sock.close()
            raise self.protocol.handshake_exc

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    def recv(self) -> str:
        """The next text message."""
        self._wait(lambda: bool(self._texts))
        return self._texts.pop(0)

    def close(self) -> None:
        if self.protocol.state is State.OPEN:
            self.protocol.send_close()
            self._flush()
        self.sock.close()

    def __enter__(self) -> PollingConnection:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _wait(self, done: Callable[[], bool]) -> None:
        """Read until ``done()``: spinning, checking the clock every thousand empty reads."""
        deadline, spins = time.monotonic() + self.timeout, 0
        while not done():
            try:
                data = self.sock.recv(READ_SIZE)
            except BlockingIOError:
                spins += 1
                if spins % 1000 == 0 and time.monotonic() > deadline:
                    raise TimeoutError(f"no reply within {self.timeout:g} s") from None
                continue
            if data:
                self.protocol.receive_data(data)
            else:
                self.protocol.receive_eof()
            self._take_events()
            self._flush()
            if self.protocol.state is State.CLOSED and not done():
                closed = self.protocol.close_exc
                raise ConnectionError(f"the server closed the connection ({closed})")

    def _take_events(self) -> None:
        for event in self.protocol.events_received():
            if isinstance(event, Frame) and event.opcode is Opcode.TEXT and event.fin:
                self._texts.append(event.data.decode())
            elif isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.CONT):
                raise NotImplementedError("fragmented messages: the servers measured send none")
            elif not isinstance(event, (Frame, Response)):  # pings are answered by the protocol
                raise TypeError(f"unexpected WebSocket event {event!r}")

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.setblocking(True)
                try:
                    self.sock.sendall(data)
                finally:
                    self.sock.setblocking(False)
