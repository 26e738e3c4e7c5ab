"""The WebSocket clients: ``AsyncEnvClient`` (asyncio) and ``WSEnvClient`` (sync).

Both run ``session.Session``'s logic (reconnect, replay, reply checks) and differ only in their
I/O: websockets' asyncio client for one, ``SyncWebSocket`` in the caller's thread for the other.
"""

from __future__ import annotations

import asyncio
import threading
import time
from ssl import SSLContext
from types import TracebackType
from typing import Any, Generic

from typing_extensions import Self

from envkit.client.contract import (
    ObservationT,
    StepResult,
    auth_headers,
    result,
    result_type,
)
from envkit.client.session import (
    CLOSE_TIMEOUT_S,
    RATE_LIMIT_WAIT_S,
    SPIN_S,
    Backoff,
    Close,
    Io,
    Open,
    Receive,
    Send,
    Session,
    Sleep,
    Steps,
    run_steps,
)


class _WebSocketClient(Generic[ObservationT]):
    """What both clients hold: the session, the handshake headers, the observation's type."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        timeout: float,
        backoff: Backoff | None,
        rate_limit_wait: float,
        observation_model: type[ObservationT] | None,
        ssl_context: SSLContext | None,
    ) -> None:
        self.session = Session(
            base_url, timeout=timeout, backoff=backoff, rate_limit_wait=rate_limit_wait
        )
        if ssl_context is not None and not self.session.url.startswith("wss://"):
            raise ValueError(f"ssl_context is for https:// or wss:// servers, not {base_url!r}")
        self._ssl_context = ssl_context
        self._headers = auth_headers(token)
        self._result_type = result_type(observation_model)

    @property
    def url(self) -> str:
        return self.session.url

    @property
    def timeout(self) -> float:
        return self.session.timeout

    @property
    def backoff(self) -> Backoff:
        return self.session.backoff

    @property
    def rate_limit_wait(self) -> float:
        return self.session.rate_limit_wait

    @property
    def restored(self) -> int:
        """Episodes restored so far by replaying them on a new connection."""
        return self.session.restored

    def _result(self, data: dict[str, Any]) -> StepResult[ObservationT]:
        return result(self._result_type, data)


class AsyncEnvClient(_WebSocketClient[ObservationT]):
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

    A message the server refuses over its rate limit (an error frame coded ``RATE_LIMITED``) was
    dropped unread: the client waits the frame's ``retry_after`` seconds and sends it again, on
    the same connection, for up to ``rate_limit_wait`` seconds in all per message (a replay's
    messages too); past that the refusal is raised as ``ServerError`` naming the wait.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000`` (``ws://`` works too; ``/ws`` is
            added).
        token: sent as ``Authorization: Bearer <token>`` in the WebSocket handshake.
        timeout: seconds to wait for the handshake and for each reply.
        backoff: how connections are retried.
        rate_limit_wait: the most seconds one message waits out the server's rate limit, in
            all, before ``ServerError`` ``RATE_LIMITED`` (default 60, a per-minute limit's
            window; 0: raise at the first refusal).
        observation_model: a pydantic model each observation is parsed into.
        ssl_context: TLS settings for an ``https://`` / ``wss://`` server (the system's default
            when None), e.g. to trust a private certificate authority.

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
        rate_limit_wait: float = RATE_LIMIT_WAIT_S,
        observation_model: type[ObservationT] | None = None,
        ssl_context: SSLContext | None = None,
    ) -> None:
        super().__init__(
            base_url,
            token=token,
            timeout=timeout,
            backoff=backoff,
            rate_limit_wait=rate_limit_wait,
            observation_model=observation_model,
            ssl_context=ssl_context,
        )
        self._lock = asyncio.Lock()

    async def connect(self) -> None:
        """Connect now (calls connect when they need to), restoring the episode if there is one."""
        await self._run(self.session.call(None))

    async def reset(self, **options: Any) -> StepResult[ObservationT]:
        """Start an episode; ``options`` are the reset message's (seed, episode_id, the env's)."""
        return self._result(await self._run(self.session.call(Session.reset_message(options))))

    async def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        """Play ``action``, shaped as the env's action schema says."""
        return self._result(await self._run(self.session.call({"type": "step", "data": action})))

    async def state(self) -> dict[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and the env's own fields."""
        state: dict[str, Any] = await self._run(self.session.call({"type": "state"}))
        return state

    async def close(self) -> None:
        """Close the connection (the server frees the env) and forget the episode."""
        await self._run(self.session.close())

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

    async def _run(self, steps: Steps) -> Any:
        """Do the I/O ``steps`` asks for until it returns; errors go back to it to handle."""
        async with self._lock:
            reply: Any = None
            error: BaseException | None = None
            while True:
                try:
                    io = steps.send(reply) if error is None else steps.throw(error)
                except StopIteration as done:
                    return done.value
                try:
                    reply, error = await self._perform(io), None
                except BaseException as caught:  # cancellation too: the session drops the socket
                    reply, error = None, caught

    async def _perform(self, io: Io) -> Any:
        match io:
            case Open():
                from websockets.asyncio.client import connect

                # Extra keywords go to loop.create_connection; ssl=None is refused for wss://.
                tls: dict[str, Any] = (
                    {} if self._ssl_context is None else {"ssl": self._ssl_context}
                )
                return await connect(
                    self.url,
                    additional_headers=self._headers,
                    open_timeout=self.timeout,
                    close_timeout=CLOSE_TIMEOUT_S,
                    max_size=None,  # observations (images) may be large; the server is trusted
                    **tls,
                )
            case Send(connection, text):
                await connection.send(text)
            case Receive(connection):
                return await asyncio.wait_for(connection.recv(), self.timeout)
            case Sleep(seconds):
                await asyncio.sleep(seconds)
            case Close(connection):
                await connection.close()
        return None


class WSEnvClient(_WebSocketClient[ObservationT]):
    """``AsyncEnvClient`` for sync code: the same reconnection and replay, with the socket I/O in
    the calling thread (``envkit.client.sync_socket``), so a step costs no thread hand-offs.

    Takes the same arguments (``rate_limit_wait`` too: a message refused over the server's rate
    limit is sent again after the wait it asked for), and ``spin``: seconds to poll the socket for
    a reply before sleeping (a served step usually answers within it; 0 sleeps at once). A daemon
    thread answers the server's pings between calls, and while a call waits out a rate limit.
    Calls run one at a time (a lock); the TCP connection goes straight to the host, without a
    proxy.

    Example:
        >>> client = WSEnvClient("http://127.0.0.1:8000", token="s3cret")
        >>> client.url, client.restored  # it connects on the first call
        ('ws://127.0.0.1:8000/ws', 0)
        >>> client.close()  # nothing to close yet
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        backoff: Backoff | None = None,
        rate_limit_wait: float = RATE_LIMIT_WAIT_S,
        observation_model: type[ObservationT] | None = None,
        ssl_context: SSLContext | None = None,
        spin: float = SPIN_S,
    ) -> None:
        super().__init__(
            base_url,
            token=token,
            timeout=timeout,
            backoff=backoff,
            rate_limit_wait=rate_limit_wait,
            observation_model=observation_model,
            ssl_context=ssl_context,
        )
        if not spin >= 0:
            raise ValueError(f"spin must be seconds >= 0, got {spin!r}")
        self.spin = spin
        self._lock = threading.Lock()

    def connect(self) -> None:
        """Connect now (calls connect when they need to), restoring the episode if there is one."""
        self._run(self.session.call(None))

    def reset(self, **options: Any) -> StepResult[ObservationT]:
        """Start an episode; ``options`` are the reset message's (seed, episode_id, the env's)."""
        return self._result(self._run(self.session.call(Session.reset_message(options))))

    def step(self, action: dict[str, Any]) -> StepResult[ObservationT]:
        """Play ``action``, shaped as the env's action schema says."""
        return self._result(self._run(self.session.call({"type": "step", "data": action})))

    def state(self) -> dict[str, Any]:
        """The episode's state: ``episode_id``, ``step_count`` and the env's own fields."""
        state: dict[str, Any] = self._run(self.session.call({"type": "state"}))
        return state

    def close(self) -> None:
        """Close the connection (the server frees the env) and forget the episode."""
        self._run(self.session.close())

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

    def _run(self, steps: Steps) -> Any:
        """Do the I/O ``steps`` asks for until it returns; errors go back to it to handle."""
        with self._lock:  # KeyboardInterrupt goes back to the steps too: they drop the socket
            return run_steps(steps, self._perform)

    def _perform(self, io: Io) -> Any:
        match io:
            case Open():
                from envkit.client.sync_socket import SyncWebSocket

                return SyncWebSocket(
                    self.url,
                    headers=self._headers,
                    timeout=self.timeout,
                    ssl_context=self._ssl_context,
                    spin=self.spin,
                )
            case Send(connection, text):
                connection.send(text, self.timeout)
            case Receive(connection):
                return connection.recv(self.timeout)
            case Sleep(seconds):
                time.sleep(seconds)
            case Close(connection):
                connection.close()
        return None
