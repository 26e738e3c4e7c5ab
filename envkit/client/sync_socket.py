"""A WebSocket whose I/O runs in the caller's thread, for ``WSEnvClient``.

Why: a sync client that hands each call to an event loop in another thread (as OpenEnv's
``.sync()`` does, and this package's did) pays thread wake-ups on every reply, and so does
websockets' own sync client (a reader thread). Reading in the caller's thread saves those, and
spinning briefly before it sleeps saves waking a sleeping CPU, which costs a sizeable part of a
served step's few tenths of a millisecond (``benchmarks/server_throughput``'s zero-work server
measures each client's own round trip).

- Handshake and framing: websockets' sans-I/O ``ClientProtocol``; only the socket work is here.
- Waiting for a reply: read the non-blocking socket for up to ``spin`` seconds, then sleep in a
  selector until the reply or the deadline.
- Between calls a daemon thread answers the server's pings every ``keepalive`` seconds, so a
  caller that thinks for minutes (an LLM agent) keeps its connection.
- TCP goes straight to the host (no proxy); ``wss://`` uses TLS (``ssl_context`` or the
  system's default).

Errors are websockets' own, as its other clients raise them: ``ConnectionClosed`` (with the
close frame received), ``InvalidStatus`` / ``InvalidHandshake``, and ``TimeoutError`` and
``OSError`` from the socket.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from types import TracebackType

from typing_extensions import Self
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from envkit.client.session import CLOSE_TIMEOUT_S, SPIN_S

KEEPALIVE_S = 1.0  # servers ping every ~20 s and close after ~20 s without a pong
READ_SIZE = 1 << 20


class SyncWebSocket:
    """One client connection; ``send`` and ``recv`` do their I/O in the calling thread.

    Args:
        url: ``ws://`` or ``wss://host:port/path``.
        headers: extra handshake headers (``Authorization``).
        timeout: seconds for TCP, TLS and the handshake together.
        ssl_context: for ``wss://``; the system's default when None.
        spin: seconds to poll the socket before sleeping while waiting for a reply.
        keepalive: seconds between the background thread's looks for pings.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        spin: float = SPIN_S,
        keepalive: float = KEEPALIVE_S,
    ) -> None:
        uri = parse_uri(url)
        deadline = time.monotonic() + timeout
        self.spin = spin
        self.protocol = ClientProtocol(uri, max_size=None)
        self._messages: deque[str | bytes] = deque()
        self._fragments: list[bytes | bytearray | memoryview] = []  # of a message sent in parts
        self._fragments_text = True
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()  # the socket and the protocol: calls, or the pinger
        self.sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if uri.secure:
                context = ssl_context or ssl.create_default_context()
                self.sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                self.sock = context.wrap_socket(self.sock, server_hostname=uri.host)
            self.sock.setblocking(False)
            self._selector.register(self.sock, selectors.EVENT_READ)
            request = self.protocol.connect()
            for name, value in (headers or {}).items():
                request.headers[name] = value
            self.protocol.send_request(request)
            self._flush(deadline)
            self._wait(self._handshake_done, deadline)
            if self.protocol.handshake_exc is not None:
                raise self.protocol.handshake_exc
        except BaseException:
            self._selector.close()
            self.sock.close()
            raise
        stop = threading.Event()
        self._stop_pinger = stop
        weakref.finalize(self, stop.set)  # a connection nobody closed still ends its thread
        threading.Thread(
            target=_answer_pings,
            args=(weakref.ref(self), stop, keepalive),
            name=f"ws-pings {url}",
            daemon=True,
        ).start()

    def send(self, text: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                self.protocol.send_text(text.encode())
            except InvalidState:  # the server closed: say with what code, once it is done
                self._wait(lambda: self.protocol.state is State.CLOSED, deadline)
                raise self.protocol.close_exc from None
            self._flush(deadline)

    def recv(self, timeout: float) -> str | bytes:
        """The next message (text as ``str``); ``TimeoutError`` if none comes in time."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._wait(lambda: bool(self._messages), deadline)
            return self._messages.popleft()

    def close(self) -> None:
        """The closing handshake (at most ``CLOSE_TIMEOUT_S``), then the socket; idempotent."""
        self._stop_pinger.set()
        with self._lock:
            if self.sock.fileno() == -1:
                return
            try:
                if self.protocol.state is State.OPEN:
                    deadline = time.monotonic() + CLOSE_TIMEOUT_S
                    self.protocol.send_close(1000)
                    self._flush(deadline)
                    self._wait(lambda: self.protocol.state is State.CLOSED, deadline)
            except (OSError, InvalidState):  # TimeoutError included; the socket goes anyway
                pass
            finally:
                self._selector.close()
                self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def answer_pings(self) -> None:
        """Read what has arrived without waiting, so the protocol answers pings (and closes)."""
        if not self._lock.acquire(blocking=False):
            return  # a call is reading the socket: it answers them
        try:
            if self.protocol.state is State.OPEN:
                self._read_ready()
        except OSError:
            pass  # the connection is broken: the next call finds out
        finally:
            self._lock.release()

    def _wait(self, done: Callable[[], bool], deadline: float) -> None:
        """Read until ``done()``: spinning for ``spin`` seconds, then sleeping in the selector."""
        spin_until = time.perf_counter() + self.spin
        while not done():
            if self.protocol.state is State.CLOSED:
                raise self.protocol.close_exc
            if self._read_ready():
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("timed out")
            if time.perf_counter() >= spin_until:
                self._selector.select(remaining)

    def _read_ready(self) -> bool:
        """Feed the protocol what the socket holds now; False when it holds nothing."""
        try:
            data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, ssl.SSLWantReadError):
            return False
        except OSError:  # reset: the stream ends here, after what was read (a close frame?)
            data = b""
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        for event in self.protocol.events_received():
            if isinstance(event, Frame):
                self._take(event)
        try:
            self._flush(time.monotonic() + CLOSE_TIMEOUT_S)  # pongs, the close reply
        except OSError:
            self.protocol.receive_eof()  # the peer is gone; ConnectionClosed says how it left
        return True

    def _handshake_done(self) -> bool:
        return (
            self.protocol.state is not State.CONNECTING or self.protocol.handshake_exc is not None
        )

    def _take(self, frame: Frame) -> None:
        """Whole messages only: fragments are joined (pings and pongs are the protocol's)."""
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._fragments, self._fragments_text = [frame.data], frame.opcode is Opcode.TEXT
        elif frame.opcode is Opcode.CONT:
            self._fragments.append(frame.data)
        else:
            return
        if frame.fin:
            data, self._fragments = b"".join(self._fragments), []
            self._messages.append(data.decode() if self._fragments_text else data)

    def _flush(self, deadline: float) -> None:
        for data in self.protocol.data_to_send():
            if not data:  # the protocol is done writing: half-close
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_WR)
                continue
            try:  # a message fits in the socket's buffer: no switch to blocking (4 syscalls)
                sent = self.sock.send(data)
            except (BlockingIOError, ssl.SSLWantWriteError):
                sent = 0
            if sent == len(data):
                continue
            self.sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            try:
                self.sock.sendall(data[sent:])
            finally:
                self.sock.setblocking(False)


def _answer_pings(
    connection: weakref.ref[SyncWebSocket], stop: threading.Event, interval: float
) -> None:
    while not stop.wait(interval):
        alive = connection()
        if alive is None:
            return
        alive.answer_pings()
        del alive
