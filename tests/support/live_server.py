"""An ASGI app under a real uvicorn server on 127.0.0.1, for live tests.

``live_address(app)`` yields the address; ``live_server(app)`` also yields the uvicorn server,
for tests that stop it themselves (``server.should_exit = True``) while requests are in flight;
``live_command("chess_env", ...)`` runs ``python -m chess_env serve ...`` as users do, in a
subprocess, and yields its address; ``live_process`` yields the process too (to read its memory:
``rss_kib(process.pid)``).

pytest runs with ``--import-mode=importlib``, so a test module puts ``tests/support`` on
``sys.path`` before importing this (as with ``chat_server``).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from envkit.server import make_server

__all__ = ["live_address", "live_command", "live_process", "live_server", "rss_kib"]


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


@contextmanager
def live_command(module: str, *flags: str) -> Iterator[str]:
    """Run ``python -m MODULE serve --port PORT FLAGS...`` on a free port of 127.0.0.1 until its
    ``/health`` answers; yields ``"127.0.0.1:PORT"``. On exit the server is terminated."""
    with live_process(module, *flags) as (_, address):
        yield address


@contextmanager
def live_process(module: str, *flags: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``live_command``, yielding the server's process and its address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", module, "serve", "--port", str(port), *flags]
    with tempfile.TemporaryFile() as errors:
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            _wait_for_health(server, port, errors)
            yield server, f"127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=10)


def _wait_for_health(server: subprocess.Popen[bytes], port: int, errors: Any) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).raise_for_status()
            return
        except httpx.TransportError:
            if server.poll() is not None:
                errors.seek(0)
                raise AssertionError(f"the server exited: {errors.read().decode()}") from None
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid`` in KiB (``VmRSS`` of ``/proc/PID/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise LookupError(f"no VmRSS for process {pid}")
