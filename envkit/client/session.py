"""The WebSocket clients' logic, without I/O: one env's episode that survives dropped connections.

A connection owns its env, so after a drop the session opens a new one (per ``Backoff``) and
replays the episode on it: the last reset's message, then each action the server accepted since.
``AsyncEnvClient`` and ``WSEnvClient`` share this logic and differ only in how they do I/O: each
method here is a generator that yields the I/O it needs (``Open``, ``Send``, ``Receive``,
``Sleep``, ``Close``); the client performs it and sends back the result, or throws in the error.

A message refused over the server's rate limit was dropped unread, so ``_exchange`` sends it again
after the wait the refusal asked for (``waiting_out_rate_limits``, which ``EnvClient`` runs for its
HTTP requests too): the call returns the one reply the server gave to an accepted message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import random
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import Field

from envkit.client.contract import (
    CONNECTION_CLOSED,
    INVALID_REPLY,
    ReconnectError,
    ReplayError,
    ServerError,
    http_error,
    json_object,
    retry_seconds,
)
from envkit.dto import FrozenDTO

logger = logging.getLogger("envkit.client")

# Close codes saying the message itself was refused (1009: too big): sending it again cannot help.
FATAL_CLOSE_CODES = frozenset({1002, 1003, 1007, 1008, 1009})
REPLY_TYPES = {"reset": "observation", "step": "observation", "state": "state"}
CLOSE_TIMEOUT_S = 1.0  # a close handshake takes milliseconds; a dead peer must not stall a retry
# How long a sync client polls for a reply before it sleeps: longer than a served step's round
# trip, so most replies land while it polls (waking a sleeping CPU is expensive on a VM).
SPIN_S = 0.5e-3
# The clients' default for how long one message waits out a server's rate limit in all: a minute,
# the window of a per-minute limit, covers any single wait such a server asks for.
RATE_LIMIT_WAIT_S = 60.0
RATE_WAIT_S = 1.0  # when a refusal names no wait: Retry-After counts whole seconds
MIN_RATE_WAIT_S = 0.1  # a refusal saying "retry at once" must not become a busy loop


class Backoff(FrozenDTO):
    """How the WebSocket clients retry a connection.

    A call that finds no connection tries one at once; when a connection fails (or drops), it
    tries up to ``retries`` more times, waiting ``first_delay`` doubled each time (at most
    ``max_delay``). Each wait is scaled by a random factor within ``jitter`` of 1, so that the
    many clients of a restarted server do not all come back at once.

    Example:
        >>> Backoff(retries=4, first_delay=0.5, max_delay=2.0, jitter=0).delays()
        [0.0, 0.5, 1.0, 2.0, 2.0]
    """

    retries: int = Field(default=5, ge=0, description="Tries after the first one")
    first_delay: float = Field(default=0.5, ge=0, description="Seconds before the first retry")
    max_delay: float = Field(
        default=8.0, ge=0, description="The longest wait between tries, in seconds"
    )
    jitter: float = Field(default=0.1, ge=0, le=1, description="Spread of each wait, as a fraction")

    def delays(self) -> list[float]:
        """The seconds to wait before each try (the first: 0)."""
        return list(self.waits())

    def waits(self) -> Iterator[float]:
        """``delays()``, drawn one at a time: a call that needs no retry draws only the first."""
        yield 0.0
        wait = self.first_delay
        for _ in range(self.retries):
            yield min(wait, self.max_delay) * random.uniform(1 - self.jitter, 1 + self.jitter)
            wait = min(wait * 2, self.max_delay)


@dataclass(frozen=True)
class Open:
    """Open a connection to ``Session.url``; the result is the connection."""


@dataclass(frozen=True)
class Send:
    connection: Any
    text: str


@dataclass(frozen=True)
class Receive:
    """The next message on ``connection``; ``TimeoutError`` after ``Session.timeout``."""

    connection: Any


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Close:
    connection: Any


Io = Open | Send | Receive | Sleep | Close
Steps = Generator[Io, Any, Any]
IoT = TypeVar("IoT")  # what else a rate-limited attempt asks for: Io here, an HTTP request there


@dataclass
class Episode:
    """What a replay needs: each message sent (the reset first) and a digest of its reply;
    ``sent`` stays empty when the reset had no seed."""

    seeded: bool
    sent: list[tuple[str, bytes]]


class Session:
    """One env over a WebSocket: the connection, the episode to replay, the retries.

    The connection errors it expects from the I/O are websockets' (``ConnectionClosed``,
    ``InvalidStatus``, ``InvalidHandshake``), ``TimeoutError`` and ``OSError``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        backoff: Backoff | None,
        rate_limit_wait: float = RATE_LIMIT_WAIT_S,
    ) -> None:
        self.url = ws_url(base_url)
        self.timeout = timeout
        self.backoff = backoff or Backoff()
        self.rate_limit_wait = check_rate_limit_wait(rate_limit_wait)
        self.restored = 0
        self.connection: Any = None
        self.episode: Episode | None = None

    @staticmethod
    def reset_message(options: dict[str, Any]) -> dict[str, Any]:
        """A reset that names its episode (a new UUID4 unless given), so a replay keeps the id."""
        return {"type": "reset", "data": {"episode_id": str(uuid.uuid4()), **options}}

    def call(self, message: dict[str, Any] | None) -> Steps:
        """The reply's data to ``message`` (None: just connect), reconnecting as allowed."""
        kind, text = (message or {}).get("type"), json.dumps(message)
        cause: DropError | None = None
        for delay in self.backoff.waits():
            try:
                if self.connection is None:
                    yield Sleep(delay)
                    self.connection = yield from self._open(restore=kind != "reset")
                if message is None:
                    return {}
                data = yield from self._exchange(self.connection, text, message["type"])
            except DropError as drop:
                logger.warning("%s: %s; reconnecting", self.url, drop)
                cause = drop
                yield from self._discard()
                continue
            except (ServerError, ReplayError) as error:
                if isinstance(error, ServerError) and error.code == CONNECTION_CLOSED:
                    yield from self._discard()
                raise
            except BaseException:  # cancelled: a late reply would answer the next call
                yield from self._discard()
                raise
            self._remember(message, text, data)
            return data
        raise ReconnectError(
            f"gave up connecting to {self.url} after {self.backoff.retries} retries: {cause}"
        ) from cause

    def close(self) -> Steps:
        """Say goodbye (the server frees the env), close the connection, forget the episode."""
        from websockets.exceptions import ConnectionClosed

        self.episode = None
        if self.connection is not None:
            with contextlib.suppress(ConnectionClosed, OSError):
                yield Send(self.connection, json.dumps({"type": "close"}))
            yield from self._discard()

    def _open(self, *, restore: bool) -> Steps:
        """A new connection, with the episode replayed on it when ``restore``."""
        episode = self.episode if restore else None
        if episode is not None and not episode.seeded:
            self.episode = None
            raise ReplayError(
                "the connection dropped mid-episode and the episode was reset without a seed, so "
                "replaying it could not give the same episode; reset to start a new one"
            )
        wait = self.rate_limit_wait
        connection = yield from waiting_out_rate_limits(self._connect, wait, self.url)
        if episode is None:
            return connection
        try:
            yield from self._replay(connection, episode)
        except BaseException:
            yield Close(connection)
            raise
        self.restored += 1
        logger.info("%s: episode restored (%d steps replayed)", self.url, len(episode.sent) - 1)
        return connection

    @staticmethod
    def _connect() -> Steps:
        """A new connection; a handshake refused over the rate limit raises its 429 (with its
        Retry-After), which ``_open`` waits out as it would a refused message."""
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        try:
            return (yield Open())
        except InvalidStatus as error:
            response = error.response
            if response.status_code < 500:  # refused (a bad token, over the rate limit), not down
                body = response.body.decode(errors="replace")
                retry_after = response.headers.get("Retry-After")
                raise http_error(response.status_code, body, retry_after) from None
            raise DropError(f"the handshake got HTTP {response.status_code}") from error
        except (InvalidHandshake, OSError) as error:  # TimeoutError is an OSError
            raise DropError(f"cannot connect: {str(error) or type(error).__name__}") from error

    def _replay(self, connection: Any, episode: Episode) -> Steps:
        steps = len(episode.sent) - 1
        for number, (text, digest) in enumerate(episode.sent):
            where = f"step {number} of {steps}" if number else "the reset"
            try:
                data = yield from self._exchange(connection, text, "step" if number else "reset")
            except ServerError as error:
                self.episode = None
                raise ReplayError(
                    f"replaying {where} after reconnecting failed: {error}"
                ) from error
            if reply_digest(data) != digest:
                self.episode = None
                raise ReplayError(
                    f"replaying the episode after reconnecting gave another reply at {where}: the "
                    "env is not deterministic given its seed, or the server changed; reset to "
                    "start a new episode"
                )

    def _exchange(self, connection: Any, text: str, kind: str) -> Steps:
        """Send one message and read its reply: the frame's data, or ``ServerError``; sent again
        while the server refuses it over its rate limit, as ``rate_limit_wait`` allows."""
        return (
            yield from waiting_out_rate_limits(
                lambda: self._exchange_once(connection, text, kind), self.rate_limit_wait, self.url
            )
        )

    def _exchange_once(self, connection: Any, text: str, kind: str) -> Steps:
        from websockets.exceptions import ConnectionClosed

        try:
            yield Send(connection, text)
            raw = yield Receive(connection)
        except ConnectionClosed as error:
            if error.rcvd is not None and error.rcvd.code in FATAL_CLOSE_CODES:
                raise ServerError(
                    CONNECTION_CLOSED, f"the server closed the connection: {error}"
                ) from None
            raise DropError(f"the connection closed ({error})") from error
        except TimeoutError:
            raise DropError(f"no reply within {self.timeout:g} s") from None
        except OSError as error:
            raise DropError(f"the connection failed: {error}") from error
        frame = json_object(raw, f"the reply to {kind}")
        data = frame.get("data", {})
        if not isinstance(data, dict):
            raise ServerError(INVALID_REPLY, f"the reply to {kind} has no data object")
        if frame.get("type") == "error":
            refusal = ServerError(
                str(data.get("code", "ERROR")),
                str(data.get("message", "")),
                reason=data.get("reason"),
                retry_after=retry_seconds(data.get("retry_after")),
            )
            if refusal.code == "CAPACITY_REACHED":  # the server closes; a slot may free up soon
                raise DropError(str(refusal)) from refusal
            raise refusal
        if frame.get("type") != REPLY_TYPES[kind]:
            raise ServerError(INVALID_REPLY, f"the reply to {kind} has type {frame.get('type')!r}")
        return data

    def _remember(self, message: dict[str, Any], text: str, data: dict[str, Any]) -> None:
        """Keep what a replay needs: the reset's message, then each accepted action's (nothing
        for an episode reset without a seed, which is never replayed)."""
        if message["type"] == "reset":
            seeded = message["data"].get("seed") is not None
            self.episode = Episode(seeded, [(text, reply_digest(data))] if seeded else [])
        elif message["type"] == "step" and self.episode is not None and self.episode.seeded:
            self.episode.sent.append((text, reply_digest(data)))

    def _discard(self) -> Steps:
        connection, self.connection = self.connection, None
        if connection is not None:
            yield Close(connection)


def run_steps(steps: Generator[Any, Any, Any], perform: Callable[[Any], Any]) -> Any:
    """Drive ``steps`` in this thread: ``perform`` each I/O it yields and send back the result, or
    throw in the error for it to handle; its return value. (``AsyncEnvClient`` awaits instead.)"""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            io = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        try:
            reply, error = perform(io), None
        except BaseException as caught:  # KeyboardInterrupt too: the steps clean up, then raise
            reply, error = None, caught


def waiting_out_rate_limits(
    attempt: Callable[[], Generator[IoT, Any, Any]], max_wait: float, where: str
) -> Generator[IoT | Sleep, Any, Any]:
    """``attempt()``'s result, run again after each refusal over the rate limit it raises.

    Each wait is the refusal's ``retry_after`` (``RATE_WAIT_S`` when it names none, at least
    ``MIN_RATE_WAIT_S``). A wait that would take the waits past ``max_wait`` seconds in all is not
    begun: the refusal is raised instead, its message naming the waits.
    """
    waited = 0.0
    while True:
        try:
            return (yield from attempt())
        except ServerError as error:
            if not error.rate_limited:
                raise
            asked = RATE_WAIT_S if error.retry_after is None else error.retry_after
            wait = max(asked, MIN_RATE_WAIT_S)
            if waited + wait > max_wait:
                raise ServerError(
                    error.code,
                    f"{error.message} (gave up waiting: the {wait:g} s asked for would pass "
                    f"rate_limit_wait={max_wait:g} s, with {waited:g} s waited already)",
                    status=error.status,
                    reason=error.reason,
                    retry_after=error.retry_after,
                ) from error
            logger.info("%s: over the rate limit; sending again in %g s", where, wait)
            yield Sleep(wait)
            waited += wait


def check_rate_limit_wait(value: float) -> float:
    """A client's ``rate_limit_wait``, else ``ValueError``."""
    if not 0 <= value < math.inf:
        raise ValueError(f"rate_limit_wait must be seconds >= 0, got {value!r}")
    return value


class DropError(Exception):
    """The connection is gone (or was never made): worth another try."""


def reply_digest(data: dict[str, Any]) -> bytes:
    """What a replayed reply must match: observation, reward and done (metadata may vary)."""
    key = [data.get("observation"), data.get("reward"), data.get("done")]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).digest()


def ws_url(base_url: str) -> str:
    """The WebSocket route of a server.

    Example:
        >>> ws_url("https://envs.example.org/chess/")
        'wss://envs.example.org/chess/ws'
    """
    scheme, _, rest = base_url.partition("://")
    schemes = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
    if scheme not in schemes or not rest:
        raise ValueError(
            f"base_url must start with http://, https://, ws:// or wss://: {base_url!r}"
        )
    return f"{schemes[scheme]}://{rest.rstrip('/')}/ws"
