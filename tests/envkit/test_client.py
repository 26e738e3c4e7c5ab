"""``envkit.client`` against real uvicorn servers on 127.0.0.1: a counter env and the chess env.

The counter server has a middleware a test can plan faults with: it closes a WebSocket instead of
sending a chosen reply (a server dropping the connection mid-call), and it records every request's
headers. ``Proxy`` stands between a client and a server and cuts their TCP connections at once,
as a flaky network does.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chess_env.serving.app import ChessObservation, create_chess_app
from envkit.client import (
    AsyncEnvClient,
    Backoff,
    EnvClient,
    ReconnectError,
    ReplayError,
    ServerError,
    StepResult,
    WSEnvClient,
)
from envkit.client.session import Sleep
from envkit.server import (
    MAX_MESSAGE_BYTES,
    AdapterResult,
    EpisodeState,
    EpisodeStateError,
    InvalidInputError,
    ToolSpec,
    create_app,
)
from envkit.server.access import RateLimit, RateLimiter

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from live_server import live_address

FAST = Backoff(retries=3, first_delay=0.01, max_delay=0.05)


class CounterAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delta: int = Field(1, strict=True)
    sleep: float = Field(0.0, ge=0, description="Seconds the step takes (to outlast timeouts)")


class CounterObservation(BaseModel):
    count: int
    noise: float = Field(description="From the seeded RNG: a replay matches only with the seed")


class CounterAdapter:
    """Counts up to ``target``; ``unstable=True`` ignores the seed, as a nondeterministic env."""

    name = "counter"
    description = "A counter"
    version = "1"
    action_model = CounterAction
    observation_model = CounterObservation
    state_model = EpisodeState

    def __init__(self) -> None:
        self.count: int | None = None
        self.target = 0
        self.rng = random.Random()

    def reset(
        self, *, seed: int | None = None, target: int = 5, unstable: bool = False
    ) -> AdapterResult:
        self.rng = random.Random(None if unstable else seed)
        self.count, self.target = 0, target
        return self._result(None)

    def step(self, action: CounterAction) -> AdapterResult:
        if self.count is None:
            raise EpisodeStateError("reset first", reason="not_reset")
        if self.count >= self.target:
            raise EpisodeStateError("the episode is over", reason="episode_over")
        if action.delta < 0:
            raise InvalidInputError("the counter only goes up", reason="negative_delta")
        time.sleep(action.sleep)
        self.count += action.delta
        return self._result(float(action.delta))

    def state(self) -> dict[str, Any]:
        return {} if self.count is None else {"count": self.count}

    def tools(self) -> list[ToolSpec]:
        return []

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _result(self, reward: float | None) -> AdapterResult:
        assert self.count is not None
        observation = CounterObservation(count=self.count, noise=self.rng.random())
        return AdapterResult(observation, reward, self.count >= self.target)


class Faults:
    """What the counter server does wrong, as the running test planned it."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """No faults planned, no headers recorded."""
        self.headers: list[dict[str, str]] = []
        self.drop_at: int | None = None
        self.drops = 0
        self.code = 1011

    def plan(self, *, drop_at: int, drops: int = 1, code: int = 1011) -> None:
        """Close the WebSocket instead of replying with count ``drop_at``, ``drops`` times."""
        self.drop_at, self.drops, self.code = drop_at, drops, code

    def take_drop(self, text: str | None) -> bool:
        frame = json.loads(text or "{}")
        if frame.get("type") != "observation" or self.drops <= 0:
            return False
        if frame["data"]["observation"]["count"] != self.drop_at:
            return False
        self.drops -= 1
        return True


class FaultMiddleware:
    def __init__(self, app: ASGIApp, faults: Faults) -> None:
        self.app, self.faults = app, faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {name.decode(): value.decode() for name, value in scope["headers"]}
            self.faults.headers.append(headers)

        async def send_or_drop(message: Message) -> None:
            if message["type"] == "websocket.send" and self.faults.take_drop(message.get("text")):
                message = {"type": "websocket.close", "code": self.faults.code, "reason": "drop"}
            await send(message)

        await self.app(scope, receive, send_or_drop if scope["type"] == "websocket" else send)


class Proxy:
    """A TCP proxy whose connections ``cut`` closes at once; ``close`` also stops listening."""

    def __init__(self, target: str) -> None:
        self.target = int(target.rsplit(":", 1)[1])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def cut(self) -> None:
        sockets, self.sockets = self.sockets, []
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        with suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.cut()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on a free port of 127.0.0.1, in a thread; yields its base URL."""
    with live_address(app) as address:
        yield f"http://{address}"


FAULTS = Faults()


@pytest.fixture(scope="module")
def counter_app() -> FastAPI:
    app = create_app(CounterAdapter)
    app.add_middleware(FaultMiddleware, faults=FAULTS)
    return app


@pytest.fixture(scope="module")
def counter_url(counter_app: FastAPI) -> Iterator[str]:
    with serving(counter_app) as base_url:
        yield base_url


@pytest.fixture
def counter(counter_url: str) -> str:
    """The counter server's URL, with no faults planned and no headers recorded yet."""
    FAULTS.clear()
    return counter_url


@pytest.fixture(scope="module")
def chess() -> Iterator[str]:
    with serving(create_chess_app()) as base_url:
        yield base_url


@pytest.fixture
def proxy(counter: str) -> Iterator[Proxy]:
    proxy = Proxy(counter)
    yield proxy
    proxy.close()


class ThreadedWSEnvClient:
    """``WSEnvClient`` behind ``AsyncEnvClient``'s interface, each call in a worker thread, so that
    one scenario tests both WebSocket clients."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.client: WSEnvClient = WSEnvClient(*args, **kwargs)

    @property
    def restored(self) -> int:
        return self.client.restored

    async def connect(self) -> None:
        await asyncio.to_thread(self.client.connect)

    async def reset(self, **options: Any) -> StepResult:
        return await asyncio.to_thread(self.client.reset, **options)

    async def step(self, action: dict[str, Any]) -> StepResult:
        return await asyncio.to_thread(self.client.step, action)

    async def state(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.client.state)

    async def close(self) -> None:
        await asyncio.to_thread(self.client.close)

    async def __aenter__(self) -> ThreadedWSEnvClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


@pytest.fixture(params=["async", "sync"])
def ws_client(request: pytest.FixtureRequest) -> Any:
    """``AsyncEnvClient``, or ``WSEnvClient`` (its calls in threads): the class to make one."""
    return AsyncEnvClient if request.param == "async" else ThreadedWSEnvClient


def counts(results: list[StepResult]) -> list[tuple[int, float]]:
    return [(r.observation["count"], r.observation["noise"]) for r in results]


async def play(client: Any, steps: int, **options: Any) -> list[StepResult]:
    results = [await client.reset(**options)]
    for _ in range(steps):
        results.append(await client.step({"delta": 1}))
    return results


# --- HTTP ---------------------------------------------------------------------------------------


def test_http_episode_in_one_session_with_the_token(counter: str, counter_app: FastAPI) -> None:
    store = counter_app.state.env_service.store
    with EnvClient(counter, token="s3cret") as client:
        assert client.health() == {"status": "healthy"}
        assert client.metadata()["name"] == "counter"
        assert set(client.schema()) == {"action", "observation", "state"}
        first = client.reset(seed=1, target=3, episode_id="ep-1")
        assert isinstance(first.observation, dict) and first.observation["count"] == 0
        assert (first.reward, first.done) == (None, False)
        session = client.session_id
        results = [client.step({"delta": 1}) for _ in range(3)]
        assert [r.reward for r in results] == [1.0, 1.0, 1.0] and results[-1].done
        state = client.state()
        assert state == {"episode_id": "ep-1", "step_count": 3, "count": 3}
        client.reset(seed=1, target=3)
        assert client.session_id == session  # reset again in the same session
        assert len(store) == 1
    assert len(store) == 0  # close freed the slot
    assert len(FAULTS.headers) == 10
    assert {h["authorization"] for h in FAULTS.headers} == {"Bearer s3cret"}
    assert {h["x-session-id"] for h in FAULTS.headers[4:]} == {session}


def test_http_errors_carry_the_servers_code(counter: str) -> None:
    with EnvClient(counter) as client:
        client.reset(seed=0, target=1)
        with pytest.raises(ServerError) as refused:
            client.step({"delta": -1})
        assert (refused.value.code, refused.value.status) == ("VALIDATION_ERROR", 422)
        assert refused.value.reason == "negative_delta"
        assert refused.value.message == "the counter only goes up"
        with pytest.raises(ServerError, match="delta") as malformed:
            client.step({"delta": "one"})
        assert malformed.value.code == "VALIDATION_ERROR"
        client.step({"delta": 1})
        with pytest.raises(ServerError) as over:
            client.step({"delta": 1})
        assert (over.value.code, over.value.status, over.value.reason) == (
            "EXECUTION_ERROR",
            409,
            "episode_over",
        )
    with EnvClient(counter + "/nowhere") as client, pytest.raises(ServerError) as missing:
        client.health()
    assert (missing.value.code, missing.value.message) == ("NOT_FOUND", "Not Found")


def test_http_reset_replaces_an_expired_session(counter: str) -> None:
    with EnvClient(counter) as client:
        client.reset(seed=0)
        gone = client.session_id
        assert httpx.delete(f"{counter}/sessions/{gone}").status_code == 204
        with pytest.raises(ServerError) as expired:
            client.step({"delta": 1})
        assert expired.value.code == "SESSION_ERROR"
        assert client.reset(seed=0).observation["count"] == 0
        assert client.session_id not in (None, gone)


def test_http_transport_failures_are_builtin_errors() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        client = EnvClient(f"http://127.0.0.1:{port}", timeout=0.2)
        with client, pytest.raises(TimeoutError, match="no reply"):
            client.health()
    with EnvClient(f"http://127.0.0.1:{port}") as client, pytest.raises(ConnectionError):
        client.health()


def test_typed_observations(counter: str) -> None:
    with EnvClient(counter, observation_model=CounterObservation) as client:
        result = client.reset(seed=2)
        assert isinstance(result.observation, CounterObservation)
        assert isinstance(result, StepResult) and result.observation.count == 0
    with pytest.raises(TypeError, match="pydantic model"):
        EnvClient(counter, observation_model=dict)


# --- WebSocket ----------------------------------------------------------------------------------


def test_ws_episode_errors_and_token(counter: str, ws_client: Any) -> None:
    async def scenario() -> None:
        async with ws_client(counter, token="s3cret", backoff=FAST) as client:
            first = await client.reset(seed=3, target=2, episode_id="ws-1")
            assert first.observation["count"] == 0 and first.reward is None
            with pytest.raises(ServerError) as refused:
                await client.step({"delta": -1})
            assert (refused.value.code, refused.value.reason) == (
                "VALIDATION_ERROR",
                "negative_delta",
            )
            assert refused.value.status is None
            await client.step({"delta": 1})
            last = await client.step({"delta": 1})
            assert last.done and last.reward == 1.0
            with pytest.raises(ServerError) as over:
                await client.step({"delta": 1})
            assert over.value.code == "EXECUTION_ERROR"
            state = await client.state()
            assert state == {"episode_id": "ws-1", "step_count": 2, "count": 2}
            assert client.restored == 0

    asyncio.run(scenario())
    (handshake,) = FAULTS.headers
    assert handshake["authorization"] == "Bearer s3cret"


def test_ws_drop_mid_call_is_replayed_with_identical_observations(
    counter: str, ws_client: Any
) -> None:
    async def scenario() -> tuple[list[StepResult], list[StepResult], dict[str, Any]]:
        async with ws_client(counter, backoff=FAST) as client:
            reference = await play(client, 5, seed=7, target=10)
        FAULTS.plan(drop_at=3)
        async with ws_client(counter, backoff=FAST) as client:
            dropped = await play(client, 5, seed=7, target=10)
            assert client.restored == 1
            return reference, dropped, await client.state()

    reference, dropped, state = asyncio.run(scenario())
    assert FAULTS.drops == 0, "the planned drop did not happen"
    assert counts(dropped) == counts(reference)
    assert state["step_count"] == 5 and state["count"] == 5
    assert state["episode_id"] is not None
    assert len(FAULTS.headers) == 3  # two clients, one reconnection


def test_ws_cut_connection_between_calls_keeps_the_episode_id(proxy: Proxy, ws_client: Any) -> None:
    async def scenario() -> None:
        async with ws_client(proxy.url, backoff=FAST) as client:
            reference = await play(client, 6, seed=11, target=10)
            results = await play(client, 2, seed=11, target=10)
            before = await client.state()
            for _ in range(2):
                proxy.cut()
                results.append(await client.step({"delta": 1}))
                results.append(await client.step({"delta": 1}))
            assert counts(results) == counts(reference)
            after = await client.state()
            assert after["episode_id"] == before["episode_id"] and after["step_count"] == 6
            assert client.restored == 2

    asyncio.run(scenario())


def test_ws_drop_after_a_reset_without_seed_is_a_replay_error(counter: str, ws_client: Any) -> None:
    async def scenario() -> None:
        async with ws_client(counter, backoff=FAST) as client:
            await client.reset(target=10)
            FAULTS.plan(drop_at=2)
            await client.step({"delta": 1})
            with pytest.raises(ReplayError, match="without a seed"):
                await client.step({"delta": 1})
            # the episode is forgotten; a new one starts on a new connection
            assert (await client.reset(seed=1)).observation["count"] == 0
            assert (await client.step({"delta": 1})).observation["count"] == 1

    asyncio.run(scenario())


def test_ws_replay_that_goes_another_way_is_a_replay_error(counter: str, ws_client: Any) -> None:
    async def scenario() -> None:
        async with ws_client(counter, backoff=FAST) as client:
            await client.reset(seed=5, unstable=True, target=10)
            FAULTS.plan(drop_at=1)
            with pytest.raises(ReplayError, match="another reply at the reset"):
                await client.step({"delta": 1})
            with pytest.raises(ServerError, match="reset first"):
                await client.step({"delta": 1})  # a fresh connection, no episode

    asyncio.run(scenario())


def test_ws_gives_up_after_the_bounded_retries_and_keeps_the_episode(
    counter: str, ws_client: Any
) -> None:
    async def scenario() -> None:
        backoff = Backoff(retries=2, first_delay=0.01, max_delay=0.01)
        async with ws_client(counter, backoff=backoff) as client:
            reference = await play(client, 3, seed=9, target=10)
            await play(client, 2, seed=9, target=10)
            FAULTS.plan(drop_at=3, drops=3)  # the first try and both retries
            started = time.monotonic()
            with pytest.raises(ReconnectError, match="after 2 retries") as gave_up:
                await client.step({"delta": 1})
            assert time.monotonic() - started < 2
            assert isinstance(gave_up.value, ConnectionError)
            assert "1011" in str(gave_up.value.__cause__)
            third = await client.step({"delta": 1})  # the drops are used up: replay, go on
            assert counts([third]) == counts(reference[3:])

    asyncio.run(scenario())


def test_ws_server_gone_is_a_reconnect_error(proxy: Proxy, ws_client: Any) -> None:
    async def scenario() -> None:
        async with ws_client(proxy.url, backoff=FAST) as client:
            await client.reset(seed=1)
            proxy.close()
            with pytest.raises(ReconnectError, match="cannot connect"):
                await client.step({"delta": 1})

    asyncio.run(scenario())
    with pytest.raises(ValueError, match="base_url"):
        ws_client("127.0.0.1:8000")


def test_ws_handshake_without_reply_is_retried_then_a_reconnect_error(ws_client: Any) -> None:
    async def scenario(port: int) -> None:
        backoff = Backoff(retries=1, first_delay=0.01)
        client = ws_client(f"http://127.0.0.1:{port}", timeout=0.2, backoff=backoff)
        with pytest.raises(ReconnectError, match="after 1 retries: cannot connect: timed out"):
            await client.reset(seed=0)

    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        asyncio.run(scenario(silent.getsockname()[1]))


def test_ws_refused_handshake_is_not_retried(counter: str, ws_client: Any) -> None:
    async def scenario() -> None:
        client = ws_client(counter + "/nowhere", backoff=Backoff(retries=50))
        with pytest.raises(ServerError) as refused:
            await client.connect()
        assert refused.value.code == "HTTP_403" and refused.value.status == 403

    asyncio.run(asyncio.wait_for(scenario(), 5))


def test_ws_message_too_big_closes_then_the_episode_is_restored(
    counter: str, ws_client: Any
) -> None:
    async def scenario() -> None:
        async with ws_client(counter, backoff=FAST) as client:
            await play(client, 2, seed=4, target=10)
            with pytest.raises(ServerError) as closed:
                await client.step({"delta": 1, "pad": "x" * MAX_MESSAGE_BYTES})
            assert closed.value.code == "CONNECTION_CLOSED" and "1009" in closed.value.message
            assert (await client.step({"delta": 1})).observation["count"] == 3
            assert client.restored == 1

    asyncio.run(scenario())


def test_ws_a_reply_too_late_loses_only_the_connection(counter: str, ws_client: Any) -> None:
    async def scenario() -> None:
        backoff = Backoff(retries=1, first_delay=0.01)
        async with ws_client(counter, timeout=0.3, backoff=backoff) as client:
            await play(client, 1, seed=6, target=10)
            with pytest.raises(ReconnectError, match=r"no reply within 0\.3 s"):
                await client.step({"delta": 1, "sleep": 0.6})
            # the slow step was not accepted: the restored episode is at count 1
            assert (await client.step({"delta": 1})).observation["count"] == 2
            assert (await client.state())["step_count"] == 2

    asyncio.run(scenario())


def test_ws_a_cancelled_call_loses_only_the_connection(counter: str) -> None:
    async def scenario() -> None:
        async with AsyncEnvClient(counter, timeout=5, backoff=FAST) as client:
            await play(client, 1, seed=6, target=10)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(client.step({"delta": 1, "sleep": 0.2}), 0.05)
            # the cancelled step was not accepted: the restored episode is at count 1
            assert (await client.step({"delta": 1})).observation["count"] == 2
            assert (await client.state())["step_count"] == 2
            assert client.restored == 1

    asyncio.run(scenario())


def test_ws_over_tls_trusting_a_private_authority(ws_client: Any, tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme", reason="the dev extra: pip install -e .[dev]")
    authority = trustme.CA()
    pem = tmp_path / "server.pem"
    authority.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
    context = ssl.create_default_context()
    authority.configure_trust(context)

    async def scenario(base_url: str) -> None:
        async with ws_client(base_url, ssl_context=context, backoff=FAST) as client:
            await client.reset(seed=2, target=2)
            assert (await client.step({"delta": 2})).done
        untrusting = ws_client(base_url, backoff=Backoff(retries=0))
        with pytest.raises(ReconnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await untrusting.reset(seed=2)

    app = create_app(CounterAdapter)
    with live_address(app, ssl_certfile=str(pem)) as address:
        asyncio.run(scenario(f"https://{address}"))
    with pytest.raises(ValueError, match="ssl_context is for https"):
        ws_client("http://127.0.0.1:1", ssl_context=context)


def test_ws_sync_client_with_typed_observations(counter: str) -> None:
    FAULTS.plan(drop_at=2, code=1012)
    with WSEnvClient(counter, backoff=FAST, observation_model=CounterObservation) as client:
        first = client.reset(seed=8, target=3)
        assert isinstance(first.observation, CounterObservation)
        results = [client.step({"delta": 1}) for _ in range(3)]
        assert [r.observation.count for r in results] == [1, 2, 3] and results[-1].done
        assert client.state()["step_count"] == 3 and client.restored == 1
    client.close()  # a second close does nothing


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    delays = Backoff(retries=6, first_delay=1.0, max_delay=10.0, jitter=0.1).delays()
    assert delays[0] == 0.0 and len(delays) == 7
    for delay, nominal in zip(delays[1:], [1, 2, 4, 8, 10, 10], strict=True):
        assert 0.9 * nominal <= delay <= 1.1 * nominal
    assert Backoff(retries=0).delays() == [0.0]


def test_importing_the_client_loads_neither_fastapi_nor_websockets() -> None:
    code = "import sys, envkit.client; print(sorted({'fastapi', 'websockets'} & set(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


# --- rate limits --------------------------------------------------------------------------------


class FakeClock:
    """The server's clock (its rate limit's), moved on by the clients' waits instead of time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds:  # not the Backoff's first try, which waits 0 s
            self.slept.append(seconds)
        self.now += seconds


def on_clock(client: Any, clock: FakeClock) -> Any:
    """``client`` (or the ``WSEnvClient`` behind it), its ``Sleep`` done on ``clock``."""
    target = client.client if isinstance(client, ThreadedWSEnvClient) else client
    perform = target._perform
    if asyncio.iscoroutinefunction(perform):

        async def perform_async(io: Any) -> Any:
            return clock.sleep(io.seconds) if isinstance(io, Sleep) else await perform(io)

        target._perform = perform_async
    else:
        target._perform = lambda io: (
            clock.sleep(io.seconds) if isinstance(io, Sleep) else perform(io)
        )
    return client


@pytest.fixture
def limited() -> Iterator[tuple[str, FakeClock]]:
    """A counter server allowing 3 calls a minute (Retry-After: 20 s) on a fake clock."""
    FAULTS.clear()
    clock = FakeClock()
    app = create_app(CounterAdapter, rate_limit=3, clock=clock)
    app.add_middleware(FaultMiddleware, faults=FAULTS)
    with serving(app) as base_url:
        yield base_url, clock


def test_http_waits_out_the_rate_limit_as_retry_after_says(
    limited: tuple[str, FakeClock],
) -> None:
    base_url, clock = limited
    with on_clock(EnvClient(base_url), clock) as client:
        client.reset(seed=1, target=5)
        results = [client.step({"delta": 1}) for _ in range(3)]
        assert [r.observation["count"] for r in results] == [1, 2, 3]
        assert client.state()["step_count"] == 3  # each refused step was played once
    assert clock.slept == [20.0, 20.0, 20.0]  # the third step, the state, the closing DELETE


def test_ws_waits_out_the_rate_limit_and_sends_the_refused_message_again(
    limited: tuple[str, FakeClock], ws_client: Any
) -> None:
    base_url, clock = limited

    async def scenario() -> tuple[list[StepResult], dict[str, Any]]:
        async with ws_client(base_url, backoff=FAST) as client:
            on_clock(client, clock)
            return await play(client, 4, seed=3, target=10), await client.state()

    results, state = asyncio.run(scenario())
    assert [r.observation["count"] for r in results] == [0, 1, 2, 3, 4]
    assert state["step_count"] == 4  # each refused step was played once, when sent again
    # The handshake is one of the 3 calls: the second, third and fourth steps, the state wait.
    assert clock.slept == [20.0, 20.0, 20.0, 20.0]


def test_ws_replay_after_a_drop_waits_out_the_rate_limit(
    limited: tuple[str, FakeClock], counter: str, ws_client: Any
) -> None:
    base_url, clock = limited

    async def scenario() -> tuple[list[StepResult], list[StepResult]]:
        async with ws_client(counter, backoff=FAST) as client:
            reference = await play(client, 3, seed=7, target=10)
        FAULTS.plan(drop_at=2)
        async with ws_client(base_url, backoff=FAST) as client:
            on_clock(client, clock)
            dropped = await play(client, 3, seed=7, target=10)
            assert client.restored == 1
        return reference, dropped

    reference, dropped = asyncio.run(scenario())
    assert FAULTS.drops == 0, "the planned drop did not happen"
    assert counts(dropped) == counts(reference)  # every replayed reply matched its digest
    # Waits of 20 s (besides the reconnection's): the replayed reset and step, the step sent again
    # on the new connection, and the last one.
    assert clock.slept.count(20.0) == 6  # and the two handshakes


def test_a_wait_past_rate_limit_wait_is_not_begun(
    limited: tuple[str, FakeClock], ws_client: Any
) -> None:
    base_url, clock = limited

    async def scenario() -> None:
        async with ws_client(base_url, backoff=FAST, rate_limit_wait=10) as client:
            on_clock(client, clock)
            await play(client, 1, seed=3, target=10)  # the handshake was the first call
            with pytest.raises(ServerError) as refused:
                await client.step({"delta": 1})
            assert (refused.value.code, refused.value.retry_after) == ("RATE_LIMITED", 20)
            assert "the 20 s asked for would pass rate_limit_wait=10 s" in refused.value.message
            clock.now += 20  # the connection and the episode are still there
            assert (await client.step({"delta": 1})).observation["count"] == 2

    asyncio.run(scenario())
    assert clock.slept == []
    with EnvClient(base_url, rate_limit_wait=10) as client, pytest.raises(ServerError) as refused:
        client.health()  # exempt from the limit
        client.reset(seed=1)
    assert refused.value.status == 429 and "rate_limit_wait=10 s" in refused.value.message
    with pytest.raises(ValueError, match="rate_limit_wait must be seconds >= 0"):
        ws_client(base_url, rate_limit_wait=-1)


def test_the_clients_sleep_through_a_real_retry_after() -> None:
    """A limiter whose minute lasts a second: each client is refused once, sleeps 1 s, goes on."""
    app = RateLimit(create_app(CounterAdapter), RateLimiter(3, period=1.0))

    async def scenario(base_url: str) -> list[StepResult]:
        async with AsyncEnvClient(base_url, backoff=FAST) as client:
            return await play(client, 3, seed=1)

    with serving(app) as base_url:
        with WSEnvClient(base_url, backoff=FAST) as client:
            played = [client.reset(seed=1)] + [client.step({"delta": 1}) for _ in range(3)]
        with EnvClient(base_url) as http:
            played += [http.reset(seed=1)] + [http.step({"delta": 1}) for _ in range(3)]
        played += asyncio.run(scenario(base_url))
    assert [r.observation["count"] for r in played] == [0, 1, 2, 3] * 3


# --- chess --------------------------------------------------------------------------------------


def test_a_chess_game_to_the_end_over_http(chess: str) -> None:
    rng = random.Random(0)
    with EnvClient(chess, observation_model=ChessObservation) as client:
        result = client.reset(seed=0, opponent="greedy", include_tensor=True)
        assert result.observation.board_tensor is not None
        assert len(result.observation.legal_moves) == 20
        while not result.done:
            result = client.step({"move": rng.choice(result.observation.legal_moves)})
        assert result.reward in (-1.0, 0.0, 1.0) and result.observation.legal_moves == []
        assert client.state()["done"] is True
        with pytest.raises(ServerError) as over:
            client.step({"move": "e4"})
        assert (over.value.code, over.value.reason) == ("EXECUTION_ERROR", "episode_over")


def test_a_chess_game_to_the_end_over_a_websocket_cut_every_20_moves(
    chess: str, ws_client: Any
) -> None:
    async def game(client: Any, proxy: Proxy | None) -> list[StepResult]:
        rng = random.Random(1)
        results = [await client.reset(seed=1, opponent="random", agent_color="black")]
        with pytest.raises(ServerError) as illegal:
            await client.step({"move": "e2e5"})
        assert illegal.value.code == "VALIDATION_ERROR" and illegal.value.reason
        while not results[-1].done:
            if proxy is not None and len(results) % 20 == 0:
                proxy.cut()
            move = rng.choice(results[-1].observation["legal_moves"])
            results.append(await client.step({"move": move}))
        return results

    async def scenario() -> None:
        async with ws_client(chess) as client:
            reference = await game(client, None)
        proxy = Proxy(chess)
        try:
            async with ws_client(proxy.url, backoff=FAST) as client:
                cut = await game(client, proxy)
                assert client.restored == (len(cut) - 1) // 20
        finally:
            proxy.close()
        assert [r.observation for r in cut] == [r.observation for r in reference]
        assert cut[-1].done and cut[-1].reward in (-1.0, 0.0, 1.0)

    asyncio.run(scenario())
