"""Clients of an OpenEnv server (``envkit.server``, or OpenEnv's own): HTTP sessions, and a
WebSocket that survives dropped connections.

- ``EnvClient``: sync, over HTTP. ``reset`` opens a server session and later calls name it.
- ``AsyncEnvClient``: asyncio, over ``/ws``, where each connection owns one env instance. When
  the connection drops it reconnects with exponential backoff (``Backoff``) and restores the
  episode by replaying it: the last reset, then every action accepted since. That gives the same
  episode only if the env is deterministic given its seed, so a replay needs a seed at reset and
  checks every replayed reply against the one first seen (``ReplayError`` otherwise).
- ``WSEnvClient``: ``AsyncEnvClient`` for sync code, on an event loop in a thread of its own.
- ``StepResult``: what ``reset`` and ``step`` return; its ``observation`` is a dict, or an
  instance of the client's ``observation_model``.
- ``ServerError``: the server refused a call (``code``, ``message``); ``ReplayError``: the episode
  could not be restored; ``ReconnectError``: no connection after every try ``Backoff`` allows.

A failed HTTP transport raises ``ConnectionError`` (``TimeoutError`` for no reply in time), so
callers need not import httpx. websockets (the ``server`` extra) is imported on the first
connection: ``EnvClient`` works without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import threading
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

import httpx
from pydantic import BaseModel, Field
from typing_extensions import Self, TypeVar

from envkit.dto import FrozenDTO

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

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

logger = logging.getLogger(__name__)

ObservationT = TypeVar("ObservationT", default=dict[str, Any])
ResultT = TypeVar("ResultT")

BODY_EXCERPT_CHARS = 300  # of a non-JSON error body: enough to read, short enough for a log line
CONNECTION_CLOSED = "CONNECTION_CLOSED"  # ServerError.code when the server closed the WebSocket
INVALID_REPLY = "INVALID_REPLY"  # ServerError.code of a reply that breaks the contract
# Close codes saying the message itself was refused (1009: too big): sending it again cannot help.
_FATAL_CLOSE_CODES = frozenset({1002, 1003, 1007, 1008, 1009})
_CLOSE_TIMEOUT = 1.0  # a close handshake takes milliseconds; a dead peer must not stall a retry
_REPLY_TYPES = {"reset": "observation", "step": "observation", "state": "state"}


class StepResult(FrozenDTO, Generic[ObservationT]):
    """What ``reset`` and ``step`` return: OpenEnv's payload, without the session id.

    Example:
        >>> from pydantic import BaseModel
        >>> class Board(BaseModel):
        ...     fen: str
        >>> result = StepResult[Board](observation={"fen": "8/8/8/8/8/8/8/K6k w - - 0 1"})
        >>> result.observation, result.reward, result.done
        (Board(fen='8/8/8/8/8/8/8/K6k w - - 0 1'), None, False)
    """

    observation: ObservationT = Field(
        description="The env's observation: a dict, or the client's observation_model"
    )
    reward: float | None = Field(None, description="Reward of the last action (None at reset)")
    done: bool = Field(False, description="Whether the episode has ended")
    metadata: dict[str, Any] = Field(default_factory=dict, description="The env's extra data")


class ServerError(RuntimeError):
    """The server refused a call, or broke the contract.

    ``code`` is OpenEnv's (VALIDATION_ERROR, EXECUTION_ERROR, SESSION_ERROR, ...),
    ``HTTP_<status>`` for an error body without one, ``CONNECTION_CLOSED`` when the server closed
    the WebSocket over the message (too big) or ``INVALID_REPLY``. ``reason`` is the server's finer
    code when it gives one (why a move is illegal); ``status`` the HTTP status, if any.
    """

    def __init__(
        self, code: str, message: str, *, status: int | None = None, reason: str | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status, self.reason = code, message, status, reason


class ReplayError(RuntimeError):
    """The WebSocket dropped mid-episode and the episode could not be restored.

    The reset had no seed, or replaying it gave other replies than the first time (the env is not
    deterministic, or the server changed). The client forgets the episode: reset to go on.
    """


class ReconnectError(ConnectionError):
    """No working connection to the server after every try the client's ``Backoff`` allows."""


class Backoff(FrozenDTO):
    """How ``AsyncEnvClient`` retries a connection.

    A call that finds no connection tries one at once; when a connection fails (or drops), it
    tries up to ``retries`` more times, waiting ``first_delay`` doubled each time (at most
    ``max_delay``). Each wait is scaled by a random factor within ``jitter`` of 1, so that the
    many clients of a restarted server do not all come back at once.

    Example:
        >>> Backoff(retries=4, first_delay=0.5, max_delay=2.0, jitter=0).delays()
        [0.0, 0.5, 1.0, 2.0, 2.0]
    """

    retries: int = Field(5, ge=0, description="Tries after the first one")
    first_delay: float = Field(0.5, ge=0, description="Seconds before the first retry")
    max_delay: float = Field(8.0, ge=0, description="The longest wait between tries, in seconds")
    jitter: float = Field(0.1, ge=0, le=1, description="Spread of each wait, as a fraction")

    def delays(self) -> list[float]:
        """The seconds to wait before each try (the first: 0)."""
        waits, wait = [0.0], self.first_delay
        for _ in range(self.retries):
            waits.append(
                min(wait, self.max_delay) * random.uniform(1 - self.jitter, 1 + self.jitter)
            )
            wait = min(wait * 2, self.max_delay)
        return waits


class EnvClient(Generic[ObservationT]):
    """A sync client of one server session, over HTTP.

    ``reset`` opens a session, and resets it again later rather than opening more (a session that
    expired while idle is replaced). ``step`` and ``state`` name it in the ``X-Session-Id`` header;
    before any reset they act on a fresh env each call, as OpenEnv's stateless HTTP does.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000``.
        token: sent as ``Authorization: Bearer <token>``.
        timeout: seconds to wait for each reply.
        observation_model: a pydantic model each observation is parsed into.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        observation_model: type[ObservationT] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id: str | None = None
        self.timeout = timeout
        self._result_type = _result_type(observation_model)
        self._http = httpx.Client(base_url=self.base_url, headers=_auth(token), timeout=timeout)

    def reset(self, **options: Any) -> StepResult[ObservationT]:
        """Start an episode; ``options`` are the reset request's (seed, episode_id, the env's)."""
        try:
            payload = self._request("POST", "/reset", options)
        except ServerError as error:
            if error.code != "SESSION_ERROR" or self.session_id is None:
                raise
            self.session_id = None  # it expired while idle: open a new one
            payload = self._request("POST", "/reset", options)
        self.session_id = payload.get("session_id")
        return _result(self._result_type, payload)

    def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        """Play ``action``, shaped as the env's action schema says (``schema()["action"]``)."""
        return _result(self._result_type, self._request("POST", "/step", {"action": action}))

    def state(self) -> dict[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and the env's own fields."""
        return self._request("GET", "/state")

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def metadata(self) -> dict[str, Any]:
        return self._request("GET", "/metadata")

    def schema(self) -> dict[str, Any]:
        """JSON Schemas of the env's ``action``, ``observation`` and ``state``."""
        return self._request("GET", "/schema")

    def close(self) -> None:
        """Free the session's slot now rather than when it expires (best effort), and the pool."""
        if self.session_id is not None:
            with contextlib.suppress(ServerError, ConnectionError):
                self._request("DELETE", f"/sessions/{self.session_id}")
            self.session_id = None
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        headers = {"X-Session-Id": self.session_id} if self.session_id else {}
        try:
            response = self._http.request(method, path, json=body, headers=headers)
        except httpx.TimeoutException as error:
            raise TimeoutError(
                f"no reply from {self.base_url}{path} within {self.timeout:g} s"
            ) from error
        except httpx.TransportError as error:
            raise ConnectionError(f"{method} {self.base_url}{path} failed: {error}") from error
        if response.is_error:
            raise _http_error(response.status_code, response.text)
        if not response.content:
            return {}
        return _json_object(response.text, f"{method} {path}")


class AsyncEnvClient(Generic[ObservationT]):
    """An asyncio client of one env over the server's WebSocket, which survives dropped connections.

    A connection owns its env, so after a drop the client opens a new one (per ``backoff``) and
    replays the episode on it: the last reset's message, then each action the server accepted
    since. That restores the episode only for an env that is deterministic given its seed:

    - a drop in an episode reset without ``seed`` raises ``ReplayError`` (the episode is lost);
    - each replayed reply (observation, reward, done) must equal the one first seen, else
      ``ReplayError`` says at which step the replay went another way.

    The reset also sends an ``episode_id`` (a new UUID4 unless given), so the restored episode
    keeps its id; ``state()["step_count"]`` is restored by the replay. A call that is cancelled or
    gets no reply within ``timeout`` loses its connection too (a late reply would answer the next
    call); the next call restores the episode without it. Calls run one at a time. After
    ``ReconnectError`` the episode is kept: a later call tries again. ``restored`` counts the
    episodes restored so far.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000`` (``ws://`` works too; ``/ws`` is
            added).
        token: sent as ``Authorization: Bearer <token>`` in the WebSocket handshake.
        timeout: seconds to wait for the handshake and for each reply.
        backoff: how connections are retried.
        observation_model: a pydantic model each observation is parsed into.

    Example:
        >>> client = AsyncEnvClient("https://envs.example.org/chess/", backoff=Backoff(retries=3))
        >>> client.url, client.restored  # nothing is sent before the first call
        ('wss://envs.example.org/chess/ws', 0)
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        backoff: Backoff | None = None,
        observation_model: type[ObservationT] | None = None,
    ) -> None:
        self.url = _ws_url(base_url)
        self.timeout = timeout
        self.backoff = backoff or Backoff()
        self.restored = 0
        self._headers = _auth(token)
        self._result_type = _result_type(observation_model)
        self._ws: ClientConnection | None = None
        self._episode: _Episode | None = None
        self._lock = asyncio.Lock()

    async def connect(self) -> None:
        """Connect now (calls connect when they need to), restoring the episode if there is one."""
        await self._call(None)

    async def reset(self, **options: Any) -> StepResult[ObservationT]:
        """Start an episode; ``options`` are the reset message's (seed, episode_id, the env's)."""
        data = {"episode_id": str(uuid.uuid4()), **options}
        return _result(self._result_type, await self._call({"type": "reset", "data": data}))

    async def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        """Play ``action``, shaped as the env's action schema says."""
        return _result(self._result_type, await self._call({"type": "step", "data": action}))

    async def state(self) -> dict[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and the env's own fields."""
        return await self._call({"type": "state"})

    async def close(self) -> None:
        """Close the connection (the server frees the env) and forget the episode."""
        from websockets.exceptions import ConnectionClosed

        async with self._lock:
            self._episode = None
            if self._ws is not None:
                with contextlib.suppress(ConnectionClosed, OSError):
                    await self._ws.send(json.dumps({"type": "close"}))
                await self._discard()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _call(self, message: dict[str, Any] | None) -> dict[str, Any]:
        """The reply to ``message`` (None: just connect), reconnecting as ``backoff`` allows."""
        kind, text = (message or {}).get("type"), json.dumps(message)
        async with self._lock:
            cause: _DropError | None = None
            for delay in self.backoff.delays():
                try:
                    if self._ws is None:
                        await asyncio.sleep(delay)
                        self._ws = await self._open(restore=kind != "reset")
                    if message is None:
                        return {}
                    data = await self._exchange(self._ws, text, message["type"])
                except _DropError as drop:
                    logger.warning("%s: %s; reconnecting", self.url, drop)
                    cause = drop
                    await self._discard()
                    continue
                except (ServerError, ReplayError) as error:
                    if isinstance(error, ServerError) and error.code == CONNECTION_CLOSED:
                        await self._discard()
                    raise
                except BaseException:  # cancelled: a late reply would answer the next call
                    await self._discard()
                    raise
                self._remember(message, text, data)
                return data
            raise ReconnectError(
                f"gave up connecting to {self.url} after {self.backoff.retries} retries: {cause}"
            ) from cause

    async def _open(self, *, restore: bool) -> ClientConnection:
        """A new connection, with the episode replayed on it when ``restore``."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        episode = self._episode if restore else None
        if episode is not None and not episode.seeded:
            self._episode = None
            raise ReplayError(
                "the connection dropped mid-episode and the episode was reset without a seed, so "
                "replaying it could not give the same episode; reset to start a new one"
            )
        try:
            ws = await connect(
                self.url,
                additional_headers=self._headers,
                open_timeout=self.timeout,
                close_timeout=_CLOSE_TIMEOUT,
                max_size=None,  # observations (images) may be large; the server is trusted
            )
        except InvalidStatus as error:
            response = error.response
            if response.status_code < 500:  # refused (a bad token), not down: retrying won't help
                body = response.body.decode(errors="replace")
                raise _http_error(response.status_code, body) from None
            raise _DropError(f"the handshake got HTTP {response.status_code}") from error
        except (InvalidHandshake, OSError, asyncio.TimeoutError) as error:
            raise _DropError(f"cannot connect: {str(error) or type(error).__name__}") from error
        if episode is None:
            return ws
        try:
            await self._replay(ws, episode)
        except BaseException:
            await ws.close()
            raise
        self.restored += 1
        logger.info("%s: episode restored (%d steps replayed)", self.url, len(episode.sent) - 1)
        return ws

    async def _replay(self, ws: ClientConnection, episode: _Episode) -> None:
        steps = len(episode.sent) - 1
        for number, (text, digest) in enumerate(episode.sent):
            where = f"step {number} of {steps}" if number else "the reset"
            try:
                data = await self._exchange(ws, text, "step" if number else "reset")
            except ServerError as error:
                self._episode = None
                raise ReplayError(
                    f"replaying {where} after reconnecting failed: {error}"
                ) from error
            if _digest(data) != digest:
                self._episode = None
                raise ReplayError(
                    f"replaying the episode after reconnecting gave another reply at {where}: the "
                    "env is not deterministic given its seed, or the server changed; reset to "
                    "start a new episode"
                )

    async def _exchange(self, ws: ClientConnection, text: str, kind: str) -> dict[str, Any]:
        """Send one message and read its reply: the frame's data, or ``ServerError``."""
        from websockets.exceptions import ConnectionClosed

        try:
            await ws.send(text)
            raw = await asyncio.wait_for(ws.recv(), self.timeout)
        except ConnectionClosed as error:
            if error.rcvd is not None and error.rcvd.code in _FATAL_CLOSE_CODES:
                raise ServerError(
                    CONNECTION_CLOSED, f"the server closed the connection: {error}"
                ) from None
            raise _DropError(f"the connection closed ({error})") from error
        except asyncio.TimeoutError:
            raise _DropError(f"no reply within {self.timeout:g} s") from None
        except OSError as error:
            raise _DropError(f"the connection failed: {error}") from error
        frame = _json_object(raw, f"the reply to {kind}")
        data = frame.get("data", {})
        if not isinstance(data, dict):
            raise ServerError(INVALID_REPLY, f"the reply to {kind} has no data object")
        if frame.get("type") == "error":
            error = ServerError(
                str(data.get("code", "ERROR")),
                str(data.get("message", "")),
                reason=data.get("reason"),
            )
            if error.code == "CAPACITY_REACHED":  # the server closes; a slot may free up soon
                raise _DropError(str(error)) from error
            raise error
        if frame.get("type") != _REPLY_TYPES[kind]:
            raise ServerError(INVALID_REPLY, f"the reply to {kind} has type {frame.get('type')!r}")
        return data

    def _remember(self, message: dict[str, Any], text: str, data: dict[str, Any]) -> None:
        """Keep what a replay needs: the reset's message, then each accepted action's."""
        if message["type"] == "reset":
            seeded = message["data"].get("seed") is not None
            self._episode = _Episode(seeded, [(text, _digest(data))])
        elif message["type"] == "step" and self._episode is not None:
            self._episode.sent.append((text, _digest(data)))

    async def _discard(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()


class WSEnvClient(Generic[ObservationT]):
    """``AsyncEnvClient`` for sync code: its calls run on an event loop in a thread of its own.

    Takes the same arguments; ``restored`` and the errors are the async client's.

    Example:
        >>> client = WSEnvClient("http://127.0.0.1:8000", token="s3cret")
        >>> client.client.url, client.restored  # it connects on the first call
        ('ws://127.0.0.1:8000/ws', 0)
        >>> client.close()  # stops the loop thread
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        backoff: Backoff | None = None,
        observation_model: type[ObservationT] | None = None,
    ) -> None:
        self.client: AsyncEnvClient[ObservationT] = AsyncEnvClient(
            base_url,
            token=token,
            timeout=timeout,
            backoff=backoff,
            observation_model=observation_model,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    @property
    def restored(self) -> int:
        return self.client.restored

    def connect(self) -> None:
        self._run(self.client.connect())

    def reset(self, **options: Any) -> StepResult[ObservationT]:
        return self._run(self.client.reset(**options))

    def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        return self._run(self.client.step(action))

    def state(self) -> dict[str, Any]:
        return self._run(self.client.state())

    def close(self) -> None:
        """Close the connection, then stop the loop thread (a second call does nothing)."""
        if self._loop.is_closed():
            return
        try:
            self._run(self.client.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, coroutine: Coroutine[Any, Any, ResultT]) -> ResultT:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()


class _DropError(Exception):
    """The connection is gone (or was never made): worth another try."""


@dataclass
class _Episode:
    """What a replay needs: each message sent (the reset first) and a digest of its reply."""

    seeded: bool
    sent: list[tuple[str, bytes]]


def _result_type(model: type[Any] | None) -> type[StepResult[Any]]:
    """``StepResult``, or ``StepResult[model]``: its validation parses the observation."""
    if model is None:
        return StepResult
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"observation_model must be a pydantic model class, got {model!r}")
    return StepResult[model]  # type: ignore[valid-type]


def _result(
    result_type: type[StepResult[ObservationT]], payload: dict[str, Any]
) -> StepResult[ObservationT]:
    """The ``StepResult`` of a reply (whose other fields, like ``session_id``, are left out)."""
    return result_type(
        observation=payload.get("observation"),
        reward=payload.get("reward"),
        done=payload.get("done", False),
        metadata=payload.get("metadata") or {},
    )


def _digest(data: dict[str, Any]) -> bytes:
    """What a replayed reply must match: observation, reward and done (metadata may vary)."""
    key = [data.get("observation"), data.get("reward"), data.get("done")]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).digest()


def _json_object(text: str | bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServerError(
            INVALID_REPLY, f"{what}: not a JSON object: {text[:BODY_EXCERPT_CHARS]!r}"
        )
    return value


def _http_error(status: int, text: str) -> ServerError:
    """An error reply as ``ServerError``, with the server's code and message when it sent them."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    message = body.get("message", body.get("detail"))
    if message is None:
        message = text[:BODY_EXCERPT_CHARS] or f"HTTP {status}"
    elif not isinstance(message, str):
        message = json.dumps(message)  # FastAPI's own validation errors: a list
    code = body.get("code")
    return ServerError(
        code if isinstance(code, str) else f"HTTP_{status}",
        message,
        status=status,
        reason=body.get("reason"),
    )


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _ws_url(base_url: str) -> str:
    """The WebSocket route of a server.

    Example:
        >>> _ws_url("https://envs.example.org/chess/")
        'wss://envs.example.org/chess/ws'
    """
    scheme, _, rest = base_url.partition("://")
    schemes = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
    if scheme not in schemes or not rest:
        raise ValueError(
            f"base_url must start with http://, https://, ws:// or wss://: {base_url!r}"
        )
    return f"{schemes[scheme]}://{rest.rstrip('/')}/ws"
