"""Chess steps per second and per-step latency, served and in process: a grid of servers x clients.

Each set-up is a server (ours, OpenEnv's, a bare floor, a zero-work server, or none: the step in
process) driven by a client (websockets, a polling socket, WSEnvClient, OpenEnv's
GenericEnvClient, HTTP). What each one measures, how the rounds are run and judged, and why:
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import itertools
import json
import math
import multiprocessing
import multiprocessing.process
import random
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, NamedTuple

import httpx
import numpy as np
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from tqdm import tqdm
from websockets.sync.client import ClientConnection, connect

from benchmarks.machine import machine_line
from chess_env.serving.app import ChessAction, ChessAdapter, create_chess_app
from envkit.client import WSEnvClient
from envkit.client.sync_socket import SyncWebSocket
from envkit.server import AdapterResult, make_server
from envkit.server.busy_poll import BusyPoll
from envkit.server.jsontext import dumps, loads

HOST = "127.0.0.1"

# The servers (IN_PROCESS: none, the step called directly).
IN_PROCESS = "in process"
ENVKIT = "envkit"
UNPOLLED = "envkit, busy polling off"
OPENENV = "OpenEnv create_app"
FLOOR = "floor (bare ASGI app)"
ZERO_WORK = "zero-work server"
# The clients.
DIRECT = "ChessAdapter.step"
AFTER_IDLE = "ChessAdapter.step, CPU idle 0.3 ms before"
BLOCKING = "websockets (blocking)"
POLLING = "polling socket"
HTTP = "HTTP /reset + /step (keep-alive)"
WSENV = "envkit WSEnvClient"
GENERIC_SYNC = "GenericEnvClient .sync()"
GENERIC_AWAITED = "GenericEnvClient awaited"
# WebSocket clients: the targets are judged with the first, this package's own; the others show
# what other clients make of the same servers.
WS_CLIENTS = (WSENV, BLOCKING, POLLING, GENERIC_SYNC, GENERIC_AWAITED)
JUDGED_CLIENT = WS_CLIENTS[0]
FLOOR_CLIENTS = (BLOCKING, POLLING)  # the clients the floor and busy polling off are run with
OPENENV_CLIENTS = (GENERIC_SYNC, GENERIC_AWAITED)  # need the compat extra, as OpenEnv's server
WS_OVERHEAD_TARGET_MS = 0.3
OPENENV_RATE_TARGET = 1.5
# The in-process step after idling: about what a served step's round trip leaves the server
# process idle between messages.
IDLE_S = 0.3e-3
REPLY_TIMEOUT_S = 30.0


class Setup(NamedTuple):
    """One contender: a server and the client that drives it."""

    server: str
    client: str

    def __str__(self) -> str:
        return f"{self.server} x {self.client}"


BASELINE = Setup(IN_PROCESS, DIRECT)
IDLE = Setup(IN_PROCESS, AFTER_IDLE)
# Every set-up, in the table's order.
SETUPS = (
    BASELINE,
    IDLE,
    *(Setup(ENVKIT, client) for client in (*WS_CLIENTS, HTTP)),
    *(Setup(OPENENV, client) for client in WS_CLIENTS),
    *(Setup(FLOOR, client) for client in FLOOR_CLIENTS),
    *(Setup(UNPOLLED, client) for client in FLOOR_CLIENTS),
    *(Setup(ZERO_WORK, client) for client in WS_CLIENTS),
)

# A contender: the round's seed -> an endless game, one step's latency (seconds) per item; closing
# the stream closes the contender's connection.
Contender = Callable[[int], Iterator[float]]


@dataclass(frozen=True)
class Figures:
    """One contender's figures in one round."""

    rate: float  # steps / s
    p50: float  # ms
    p99: float  # ms


def figures(latencies: list[float], elapsed: float) -> Figures:
    p50, p99 = np.percentile(np.asarray(latencies) * 1e3, [50, 99])
    return Figures(len(latencies) / elapsed, float(p50), float(p99))


def play(
    reset: Callable[[int], dict[str, Any]],
    step: Callable[[str], dict[str, Any]],
    seed: int,
    *,
    idle: float = 0.0,
) -> Iterator[float]:
    """Random legal moves from observations ``{"legal_moves", ..}`` with ``"done"``, for ever.

    ``reset(seed)`` and ``step(uci)`` return OpenEnv's payload (observation, reward, done).
    With ``idle``, sleep that many seconds before each step (untimed).
    """
    rng = random.Random(seed)
    episode = 0
    payload = reset(seed * 100_000 + episode)
    while True:
        if payload["done"]:
            episode += 1
            payload = reset(seed * 100_000 + episode)
        move = rng.choice(payload["observation"]["legal_moves"])
        if idle:
            time.sleep(idle)
        before = time.perf_counter()
        payload = step(move)
        yield time.perf_counter() - before


def in_process(seed: int, *, idle: float = 0.0) -> Iterator[float]:
    """The baseline, or with ``idle`` the same steps, each after the CPU sat idle as a server's
    does."""
    adapter = ChessAdapter()

    def reset(episode_seed: int) -> dict[str, Any]:
        result = adapter.reset(seed=episode_seed)
        return {"observation": {"legal_moves": result.observation.legal_moves}, "done": False}

    def step(move: str) -> dict[str, Any]:
        result = adapter.step(ChessAction(move=move))
        return {"observation": {"legal_moves": result.observation.legal_moves}, "done": result.done}

    try:
        yield from play(reset, step, seed, idle=idle)
    finally:
        adapter.close()


@contextmanager
def live_server(app_factory: Callable[[], ASGIApp], *, same_process: bool) -> Iterator[str]:
    """The app under ``envkit.server.make_server``; yields its address.

    By default the server runs in its own process, as ``python -m chess_env serve`` does, so the
    client (this process) and the server do not take turns on one GIL; ``same_process`` serves
    from a thread of this process instead. OpenEnv's app gets the very settings ours does (the
    event loop, HTTP parser and WebSocket implementation uvicorn picks, no per-message
    compression), but for the log level (a log line per request would be timed).
    """
    if same_process:
        with _thread_server(app_factory()) as address:
            yield address
        return
    port = _free_port()
    context = multiprocessing.get_context("spawn")
    process = context.Process(target=_serve, args=(app_factory, port), daemon=True)
    process.start()
    try:
        _wait_for(port, process)
        yield f"{HOST}:{port}"
    finally:
        process.terminate()
        process.join(timeout=10)


def _serve(app_factory: Callable[[], ASGIApp], port: int) -> None:
    make_server(app_factory(), host=HOST, port=port, log_level="warning").run()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for(port: int, process: multiprocessing.process.BaseProcess) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not process.is_alive():
            raise RuntimeError(f"the server process exited ({process.exitcode})")
        try:
            httpx.get(f"http://{HOST}:{port}/health", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the server did not start on {HOST}:{port}")


@contextmanager
def _thread_server(app: ASGIApp) -> Iterator[str]:
    server = make_server(app, host=HOST, port=0, log_level="warning")
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start on {HOST}")
        time.sleep(0.01)
    try:
        yield f"{HOST}:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def server_stack() -> str:
    """What uvicorn runs both servers on (its ``auto`` choices, as ``make_server`` leaves them)."""
    config = make_server(FastAPI()).config
    config.load()
    loop = "uvloop" if find_spec("uvloop") else "asyncio"
    http, ws = config.http_protocol_class.__name__, config.ws_protocol_class.__name__
    deflate = "on" if config.ws_per_message_deflate else "off"
    return f"uvicorn: loop {loop}, http {http}, ws {ws}, per-message deflate {deflate}"


def ws_request(
    connection: ClientConnection | SyncWebSocket, kind: str, data: dict[str, Any]
) -> dict[str, Any]:
    connection.send(json.dumps({"type": kind, "data": data}))
    frame = json.loads(connection.recv(REPLY_TIMEOUT_S))
    if frame["type"] != "observation":
        raise RuntimeError(f"{kind} answered {frame}")
    payload: dict[str, Any] = frame["data"]
    return payload


def websocket_contender(address: str, *, polling: bool = False) -> Contender:
    """``websockets``' blocking client, or with ``polling`` a ``SyncWebSocket`` that polls until
    the reply comes."""

    def run(seed: int) -> Iterator[float]:
        url = f"ws://{address}/ws"
        opened = (
            SyncWebSocket(url, spin=math.inf)
            if polling
            else connect(url, max_size=None, compression=None)
        )
        with opened as connection:
            yield from play(
                lambda episode_seed: ws_request(connection, "reset", {"seed": episode_seed}),
                lambda move: ws_request(connection, "step", {"move": move}),
                seed,
            )

    return run


def generic_client_contender(address: str, *, awaited: bool) -> Contender:
    """OpenEnv's ``GenericEnvClient``: ``.sync()`` (its calls cross to its loop's thread), or
    with ``awaited`` each call awaited on an event loop of this thread."""
    from openenv.core import GenericEnvClient

    def run(seed: int) -> Iterator[float]:
        client = GenericEnvClient(base_url=f"http://{address}")
        loop = asyncio.new_event_loop() if awaited else None
        target = client if awaited else client.sync()

        async def awaiting(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return await method(*args, **kwargs)

        def call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            if loop is None:
                return method(*args, **kwargs)
            return loop.run_until_complete(awaiting(method, *args, **kwargs))

        call(target.connect)
        try:
            yield from play(
                lambda episode_seed: result_payload(call(target.reset, seed=episode_seed)),
                lambda move: result_payload(call(target.step, {"move": move})),
                seed,
            )
        finally:
            call(target.close)
            if loop is not None:
                loop.close()

    return run


def envkit_client_contender(address: str) -> Contender:
    """This package's ``WSEnvClient``, as a user steps it."""

    def run(seed: int) -> Iterator[float]:
        with WSEnvClient(f"http://{address}") as client:
            yield from play(
                lambda episode_seed: result_payload(client.reset(seed=episode_seed)),
                lambda move: result_payload(client.step({"move": move})),
                seed,
            )

    return run


def result_payload(result: Any) -> dict[str, Any]:
    """What ``play`` reads of a client's ``AdapterResult``."""
    return {"observation": result.observation, "done": result.done}


def http_contender(address: str) -> Contender:
    def run(seed: int) -> Iterator[float]:
        with httpx.Client(base_url=f"http://{address}") as client:
            session: dict[str, str] = {}

            def reset(episode_seed: int) -> dict[str, Any]:
                response = client.post("/reset", json={"seed": episode_seed, **session})
                response.raise_for_status()
                payload: dict[str, Any] = response.json()
                session["session_id"] = payload["session_id"]
                return payload

            def step(move: str) -> dict[str, Any]:
                headers = {"X-Session-Id": session["session_id"]}
                response = client.post("/step", json={"action": {"move": move}}, headers=headers)
                response.raise_for_status()
                payload: dict[str, Any] = response.json()
                return payload

            try:
                yield from play(reset, step, seed)
            finally:
                if session:
                    client.delete(f"/sessions/{session['session_id']}")

    return run


def contender(client: str, address: str) -> Contender:
    """``client`` driving the server at ``address``."""
    if client in (BLOCKING, POLLING):
        return websocket_contender(address, polling=client == POLLING)
    if client in OPENENV_CLIENTS:
        return generic_client_contender(address, awaited=client == GENERIC_AWAITED)
    if client == WSENV:
        return envkit_client_contender(address)
    if client == HTTP:
        return http_contender(address)
    raise ValueError(f"no such client: {client}")


def openenv_app() -> FastAPI:
    """OpenEnv's ``create_app`` hosting our ``ChessAdapter``: the same env and opponent as ours.

    The action and observation types are ours with OpenEnv's base classes mixed in, so OpenEnv
    validates an action once (as our server does) and the adapter gets it as it is; the
    observation is wrapped without validating it again. What differs per step is OpenEnv's
    framework: its WebSocket loop, thread-pool hop and serialisation.
    """
    import uuid

    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    from chess_env.serving.app import ChessObservation

    class OpenEnvChessAction(ChessAction, Action):  # type: ignore[misc]
        """``ChessAction`` as an OpenEnv ``Action``."""

    class OpenEnvChessObservation(ChessObservation, Observation):  # type: ignore[misc]
        """``ChessObservation`` as an OpenEnv ``Observation`` (with its reward and done)."""

    class ChessOnOpenEnv(Environment):  # type: ignore[misc]
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.adapter = ChessAdapter()
            self._state = State(episode_id=None, step_count=0)

        def reset(
            self, seed: int | None = None, episode_id: str | None = None, **options: Any
        ) -> OpenEnvChessObservation:
            result = self.adapter.reset(seed=seed, **options)
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return self._observe(result)

        def step(self, action: OpenEnvChessAction, **_: Any) -> OpenEnvChessObservation:
            result = self.adapter.step(action)
            self._state.step_count += 1
            return self._observe(result)

        @staticmethod
        def _observe(result: AdapterResult) -> OpenEnvChessObservation:
            return OpenEnvChessObservation.model_construct(
                result.observation.model_fields_set | {"reward", "done", "metadata"},
                **dict(result.observation),
                reward=result.reward,
                done=result.done,
                metadata=result.metadata,
            )

        @property
        def state(self) -> State:
            return State(**self.adapter.state(), **self._state.model_dump())

        def close(self) -> None:
            self.adapter.close()

    # Every WebSocket client holds a session at once: OpenEnv's default allows one.
    app: FastAPI = create_app(
        ChessOnOpenEnv,
        OpenEnvChessAction,
        OpenEnvChessObservation,
        env_name="chess",
        max_concurrent_envs=len(WS_CLIENTS) + 1,
    )
    return app


def bare_app() -> ASGIApp:
    """The floor: a bare ASGI app doing per WebSocket message what our server must do, and no
    more, busy-polling as ours does."""
    return _websocket_app(_bare_socket)


def zero_work_app() -> ASGIApp:
    """Answers every WebSocket message at once with the same observation frame (a game's first),
    busy-polling as ours does: a client's and the stack's own round trip."""
    return _websocket_app(_zero_work_socket)


def _websocket_app(serve_socket: Callable[[Receive, Send], Any]) -> ASGIApp:
    """An ASGI app serving ``serve_socket`` on every WebSocket path; any HTTP path answers 200 (as
    ``_wait_for`` asks /health)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        else:
            await serve_socket(receive, send)

    return BusyPoll(app)


async def _zero_work_socket(receive: Receive, send: Send) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    adapter = ChessAdapter()
    frame = dumps({"type": "observation", "data": adapter.reset(seed=0).to_wire()})
    adapter.close()
    while (await receive())["type"] == "websocket.receive":
        await send({"type": "websocket.send", "text": frame})


async def _bare_socket(receive: Receive, send: Send) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    adapter = ChessAdapter()
    try:
        while (message := await receive())["type"] == "websocket.receive":
            request = loads(message["text"])
            data = request.get("data", {})
            if request["type"] == "reset":
                result = adapter.reset(**data)
            else:
                result = adapter.step(ChessAction.model_validate(data))
            reply = {"type": "observation", "data": result.to_wire()}
            await send({"type": "websocket.send", "text": dumps(reply)})
    finally:
        adapter.close()


def openenv_available() -> bool:
    try:
        import openenv  # noqa: F401
    except ImportError:
        return False
    return True


def run_rounds(
    contenders: dict[Setup, Contender], rounds: int, steps: int, chunk: int
) -> dict[Setup, list[Figures]]:
    results: dict[Setup, list[Figures]] = {key: [] for key in contenders}
    cycles = math.ceil(steps / chunk)
    with tqdm(total=rounds * cycles, desc="chunks", unit="cycle", file=sys.stderr) as progress:
        for seed in range(rounds):
            progress.set_postfix_str(f"round {seed + 1}/{rounds}")
            for key, round_figures in run_round(contenders, seed, steps, chunk, progress).items():
                results[key].append(round_figures)
    return results


def run_round(
    contenders: dict[Setup, Contender], seed: int, steps: int, chunk: int, progress: tqdm
) -> dict[Setup, Figures]:
    """Every contender ``steps`` steps, in chunks taken in turn, the first turn rotating."""
    streams = {key: contender(seed) for key, contender in contenders.items()}
    try:
        for stream in streams.values():  # connects, starts the first game, warms the caches
            collections.deque(itertools.islice(stream, chunk), maxlen=0)
        latencies: dict[str, list[float]] = {key: [] for key in streams}
        elapsed = dict.fromkeys(streams, 0.0)
        order = list(streams)
        for cycle in range(math.ceil(steps / chunk)):
            first = cycle % len(order)
            for key in order[first:] + order[:first]:
                size = min(chunk, steps - len(latencies[key]))
                start = time.perf_counter()
                latencies[key].extend(itertools.islice(streams[key], size))
                elapsed[key] += time.perf_counter() - start
            progress.update()
        return {key: figures(latencies[key], elapsed[key]) for key in streams}
    finally:
        for stream in streams.values():
            stream.close()


def median_figures(results: dict[Setup, list[Figures]]) -> dict[Setup, Figures]:
    return {
        key: Figures(
            statistics.median(f.rate for f in values),
            statistics.median(f.p50 for f in values),
            statistics.median(f.p99 for f in values),
        )
        for key, values in results.items()
    }


def overheads(results: dict[Setup, list[Figures]], setup: Setup) -> list[float]:
    """Per round: the set-up's p50 minus the in-process p50 of the same round (ms)."""
    pairs = zip(results[setup], results[BASELINE], strict=True)
    return [ours.p50 - base.p50 for ours, base in pairs]


def rate_ratios(results: dict[Setup, list[Figures]], ours: Setup, theirs: Setup) -> list[float]:
    """Per round: ``ours``' steps/s over ``theirs``' in the same round."""
    pairs = zip(results[ours], results[theirs], strict=True)
    return [mine.rate / other.rate for mine, other in pairs]


def table(results: dict[Setup, list[Figures]]) -> list[str]:
    median = median_figures(results)
    lines = [
        "| server | client | steps/s (median) | min | max | p50 ms | p99 ms "
        "| p50 overhead vs in-process (paired median) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for setup in (setup for setup in SETUPS if setup in results):
        rates = [f.rate for f in results[setup]]
        overhead = (
            f"{statistics.median(overheads(results, setup)):+.3f} ms" if setup != BASELINE else "--"
        )
        lines.append(
            f"| {setup.server} | {setup.client} | {median[setup].rate:,.0f} "
            f"| {min(rates):,.0f} | {max(rates):,.0f} | {median[setup].p50:.3f} "
            f"| {median[setup].p99:.3f} | {overhead} |"
        )
    return lines


def verdicts(results: dict[Setup, list[Figures]]) -> list[str]:
    """The two targets, once per client, on per-round paired figures: median, range, rounds met."""
    lines = [f"Targets judged with the {JUDGED_CLIENT} client; the other clients for comparison:"]
    for client in WS_CLIENTS:
        ours, openenv = Setup(ENVKIT, client), Setup(OPENENV, client)
        if ours not in results:
            lines.append(f"{client} client: n/a, no OpenEnv")
            continue
        lines.append(
            judged(
                f"{client} client: {ENVKIT}'s p50 overhead over the in-process step",
                overheads(results, ours),
                lambda overhead: overhead <= WS_OVERHEAD_TARGET_MS,
                f"<= {WS_OVERHEAD_TARGET_MS:g} ms",
                "{:+.3f} ms",
            )
        )
        if openenv in results:
            lines.append(
                judged(
                    f"{client} client: {ENVKIT} / {OPENENV} steps/s",
                    rate_ratios(results, ours, openenv),
                    lambda ratio: ratio >= OPENENV_RATE_TARGET,
                    f">= {OPENENV_RATE_TARGET:g}",
                    "{:.2f}x",
                )
            )
        else:
            lines.append(f"{client} client: {ENVKIT} / {OPENENV} steps/s: n/a, no OpenEnv")
        if client in FLOOR_CLIENTS:
            lines.append(floor_line(results, client))
            lines.append(unpolled_line(results, client))
        lines.append(zero_work_line(results, client))
    return lines


def floor_line(results: dict[Setup, list[Figures]], client: str) -> str:
    """The floor's own figures against the targets, and how far ours is above it."""
    ours, floor = Setup(ENVKIT, client), Setup(FLOOR, client)
    above = [mine.p50 - bare.p50 for mine, bare in zip(results[ours], results[floor], strict=True)]
    return (
        f"{client} client: {_figures_line(results, floor)}; "
        f"{ENVKIT}'s p50 is {statistics.median(above):+.3f} ms over the floor's"
    )


def unpolled_line(results: dict[Setup, list[Figures]], client: str) -> str:
    """Ours with busy polling off against the targets, and what the polling takes off a step."""
    ours, unpolled = Setup(ENVKIT, client), Setup(UNPOLLED, client)
    gains = [off.p50 - on.p50 for on, off in zip(results[ours], results[unpolled], strict=True)]
    return (
        f"{client} client: {_figures_line(results, unpolled)}; "
        f"busy polling takes {statistics.median(gains):.3f} ms off {ENVKIT}'s p50"
    )


def _figures_line(results: dict[Setup, list[Figures]], setup: Setup) -> str:
    """The set-up's median overhead, and its steps/s over OpenEnv's when OpenEnv ran."""
    line = f"{setup.server} has overhead {statistics.median(overheads(results, setup)):+.3f} ms"
    openenv = Setup(OPENENV, setup.client)
    if openenv in results:
        ratio = statistics.median(rate_ratios(results, setup, openenv))
        line += f" and {ratio:.2f}x {OPENENV}'s steps/s"
    return line


def zero_work_line(results: dict[Setup, list[Figures]], client: str) -> str:
    """The client's and the stack's own round trip, against what the overhead target allows."""
    p50 = statistics.median(figures.p50 for figures in results[Setup(ZERO_WORK, client)])
    return (
        f"{client} client: with a server that does no work, a round trip takes "
        f"{p50:.3f} ms p50, the client's and the stack's own cost "
        f"({p50 / WS_OVERHEAD_TARGET_MS:.0%} of the {WS_OVERHEAD_TARGET_MS:g} ms target)"
    )


def idle_cost(results: dict[Setup, list[Figures]]) -> str:
    """How much slower the same step runs after the CPU idled: part of every served overhead."""
    costs = overheads(results, IDLE)
    return (
        f"The in-process step after {IDLE_S * 1e3:g} ms idle is "
        f"{statistics.median(costs):+.3f} ms p50 slower (rounds: {min(costs):+.3f} .. "
        f"{max(costs):+.3f}); a served step always follows such a wait, so that much of each "
        "overhead above is the CPU waking up, not the server"
    )


def judged(
    what: str, values: list[float], meets: Callable[[float], bool], target: str, shown: str
) -> str:
    middle = statistics.median(values)
    spread = f"{shown.format(min(values))} .. {shown.format(max(values))}"
    met = sum(map(meets, values))
    verdict = "PASS" if meets(middle) else "MISSED"
    return (
        f"{what} = {shown.format(middle)} (rounds: {spread}; {met}/{len(values)} rounds meet "
        f"{target}): {verdict}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2000, help="steps per contender and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument(
        "--chunk", type=int, default=100, help="steps a contender plays before the next one's turn"
    )
    parser.add_argument(
        "--same-process",
        action="store_true",
        help="serve from a thread of the benchmark's process (client and server share a GIL)",
    )
    args = parser.parse_args(argv)
    if min(args.rounds, args.steps, args.chunk) < 1:
        parser.error("--rounds, --steps and --chunk must be at least 1")
    apps = {
        ENVKIT: create_chess_app,
        FLOOR: bare_app,
        UNPOLLED: functools.partial(create_chess_app, busy_poll=0),
        ZERO_WORK: zero_work_app,
    }
    skipped = "" if openenv_available() else "openenv not installed: skipped"
    if not skipped:
        apps[OPENENV] = openenv_app
    with ExitStack() as stack:
        served = {
            server: stack.enter_context(live_server(app, same_process=args.same_process))
            for server, app in apps.items()
        }
        contenders = {
            BASELINE: in_process,
            IDLE: functools.partial(in_process, idle=IDLE_S),
            **{
                setup: contender(setup.client, served[setup.server])
                for setup in SETUPS
                if setup.server in served and (not skipped or setup.client not in OPENENV_CLIENTS)
            },
        }
        results = run_rounds(contenders, args.rounds, args.steps, args.chunk)
    peers = () if skipped else ("openenv",)
    speedups = tuple(package for package in ("uvloop", "httptools") if find_spec(package))
    print(machine_line("chess", "fastapi", "uvicorn", *speedups, "websockets", "httpx", *peers))
    where = "a thread of this process" if args.same_process else "its own process"
    print(f"{server_stack()}; each server in {where}")
    print()
    print("\n".join(table(results)))
    if skipped:
        print(f"{OPENENV} and its clients: {skipped}")
    print()
    print("\n".join(verdicts(results)))
    print(idle_cost(results))


if __name__ == "__main__":
    main()
