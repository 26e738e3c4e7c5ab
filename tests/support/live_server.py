"""An ASGI app under a real uvicorn server on 127.0.0.1, for live tests.

``live_address(app)`` yields the address; ``live_server(app)`` also yields the uvicorn server,
for tests that stop it themselves (``server.should_exit = True``) while requests are in flight.

pytest runs with ``--import-mode=importlib``, so a test module puts ``tests/support`` on
``sys.path`` before importing this (as with ``chat_server``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from envkit.server import make_server

__all__ = ["live_address", "live_server"]


@contextmanager
def live_server(app: Any, **options: Any) -> Iterator[tuple[uvicorn.Server, str]]:
    """Serve ``app`` on a free port of 127.0.0.1 in a thread; yields the server and
    ``"127.0.0.1:PORT"``. On exit the server is stopped (if it is still running) and joined.
    ``options`` go to uvicorn's config (``ssl_certfile``, ...)."""
    server = make_server(app, host="127.0.0.1", port=0, **options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield server, f"127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def live_address(app: Any, **options: Any) -> Iterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 in a thread; yields ``"127.0.0.1:PORT"``."""
    with live_server(app, **options) as (_, address):
        yield address
