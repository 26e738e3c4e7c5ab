"""Clients of an OpenEnv server (``envkit.server``, or OpenEnv's own): HTTP sessions, and a
WebSocket that survives dropped connections.

- ``EnvClient``: sync, over HTTP. ``reset`` opens a server session and later calls name it.
- ``AsyncEnvClient``: asyncio, over ``/ws``, where each connection owns one env instance. When
  the connection drops it reconnects with exponential backoff (``Backoff``) and restores the
  episode by replaying it: the last reset, then every action accepted since. That gives the same
  episode only if the env is deterministic given its seed, so a replay needs a seed at reset and
  checks every replayed reply against the one first seen (``ReplayError`` otherwise).
- ``WSEnvClient``: the same for sync code, its socket I/O in the calling thread (no thread
  hand-off per step).
- ``StepResult``: what ``reset`` and ``step`` return; its ``observation`` is a dict, or an
  instance of the client's ``observation_model``.
- ``ServerError``: the server refused a call (``code``, ``message``); ``ReplayError``: the episode
  could not be restored; ``ReconnectError``: no connection after every try ``Backoff`` allows.

A call refused over the server's rate limit (HTTP 429, or a ``RATE_LIMITED`` error frame) is
sent again after the wait the server asked for (``Retry-After``), for up to ``rate_limit_wait``
seconds (60 by default) per request or message; past that it raises ``ServerError``.

A failed HTTP transport raises ``ConnectionError`` (``TimeoutError`` for no reply in time), so
callers need not import httpx. websockets (the ``server`` extra) is imported on the first
connection: ``EnvClient`` works without it.
"""

from envkit.client.contract import (
    ReconnectError,
    ReplayError,
    ServerError,
    StepResult,
)
from envkit.client.http import EnvClient
from envkit.client.session import Backoff
from envkit.client.websocket import AsyncEnvClient, WSEnvClient

__all__ = [
    "AsyncEnvClient",
    "Backoff",
    "EnvClient",
    "ReconnectError",
    "ReplayError",
    "ServerError",
    "StepResult",
    "WSEnvClient",
]
