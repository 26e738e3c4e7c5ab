"""``EndpointGate``: at most ``limit`` chat requests in flight per endpoint, across threads.

An evaluation asks the LLM seats of a turn at once, one thread and one ``ChatClient`` per seat;
clients that share a gate wait for a free slot of their endpoint (keyed by ``base_url``) before
they send, so a local model server or a rate-limited API sees at most ``limit`` requests at a
time. ``ChatClient`` holds its slot only while the HTTP request is in flight, never while it
sleeps before a retry: one seat's 429 backoff leaves the slot to the others.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EndpointGate"]


class EndpointGate:
    """A counting semaphore per endpoint, made on first use; safe to share between threads.

    Args:
        limit: requests in flight at once per endpoint (at least 1).

    Example:
        >>> gate = EndpointGate(2)
        >>> with gate.hold("http://localhost:11434/v1"):
        ...     gate.in_flight("http://localhost:11434/v1")
        1
        >>> gate.in_flight("http://localhost:11434/v1")
        0
    """

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit: must be an int of at least 1, got {limit!r}")
        self.limit = limit
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._in_flight: dict[str, int] = {}

    @contextmanager
    def hold(self, endpoint: str) -> Iterator[None]:
        """Wait for a free slot of ``endpoint`` and keep it for the ``with`` block."""
        key = _key(endpoint)
        with self._lock:
            slots = self._slots.setdefault(key, threading.BoundedSemaphore(self.limit))
        with slots:
            with self._lock:
                self._in_flight[key] = self._in_flight.get(key, 0) + 1
            try:
                yield
            finally:
                with self._lock:
                    self._in_flight[key] -= 1

    def in_flight(self, endpoint: str) -> int:
        """How many slots of ``endpoint`` are held now."""
        with self._lock:
            return self._in_flight.get(_key(endpoint), 0)


def _key(endpoint: str) -> str:
    """``http://host/v1/`` and ``http://host/v1`` are one endpoint."""
    return endpoint.rstrip("/")
