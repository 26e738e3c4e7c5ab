"""Chess steps per second and per-step latency: in process vs the envkit server over the wire.

The contenders play random chess against the server's default (random) opponent, one step being
the agent's move and the opponent's reply:

- (a) ``in-process ChessAdapter.step``: ``ChessAdapter.reset`` then ``step(ChessAction(move=uci))``
  with a uniformly random move from the observation's ``legal_moves`` -- the baseline.
- (b) ``WebSocket /ws``: the same game over ONE connection to a live uvicorn server on 127.0.0.1
  (``create_chess_app()`` under ``envkit.server.make_server``, as ``python -m chess_env serve``
  runs it, in its own process, busy-polling up to 0.5 ms after each reply to a quick client:
  ``envkit.server.busy_poll``), with the ``websockets`` client: ``{"type": "reset", "data":
  {"seed": ..}}`` and ``{"type": "step", "data": {"move": uci}}``.
- (c) ``HTTP /reset + /step``: one session over one keep-alive ``httpx.Client``: ``POST /reset``
  (naming the session after the first) and ``POST /step`` with ``X-Session-Id``.
- (d) ``OpenEnv create_app``: OpenEnv's own server hosting the same ``ChessAdapter`` (wrapped as
  an OpenEnv ``Environment``: same opponent, same work per step), driven by the same WebSocket
  client as (b) and under the same uvicorn settings -- only when ``import openenv`` works (the
  ``compat`` extra), else skipped.
- (e) and (f): (b) and (d) again with a client that waits for a reply by polling its socket
  (``envkit.client.sync_socket.SyncWebSocket`` with ``spin=inf``): on a VM, a client that sleeps
  through a ~0.3 ms step pays ~0.1 ms more to be woken, which is the client's cost, not the
  server's.
- (g): (a) again, sleeping 0.3 ms (untimed) before each step, as a server process waits for its
  next message: on this VM the same step then runs ~0.1 ms slower (the CPU and its caches wake
  up), a cost every served step pays that a tight loop does not. Reported, not subtracted.
- (h) and (i): the floor, with the blocking and the polling client: a bare ASGI app under the
  same uvicorn that does per message only what (b) must (parse the JSON, validate the action
  with ``ChessAction``, step a ``ChessAdapter`` of its own, answer OpenEnv's frame in the same
  JSON) -- no FastAPI, sessions, limits or error handling -- and busy-polls as (b) does. What
  (b) takes beyond (h) is our server's own cost; what (h) takes beyond (a) is uvicorn's, the
  loopback's, the client's and what is left of the idle CPU's, which no app served this way
  avoids.
- (j) and (k): (b) and (e) with busy polling off (``create_chess_app(busy_poll=0)``): what the
  polling buys, and our server as it would be without it.
- (l) and (m): ours and OpenEnv's server driven by OpenEnv's own ``GenericEnvClient`` through
  its ``.sync()`` wrapper (its event loop on a thread of its own), as the issue's reference
  figure (915 steps/s, 0.79 ms over the in-process step) was measured; (n) and (o): the same
  client awaited on an event loop in the benchmark's thread. Only with the ``compat`` extra.
- (t) and (u): ours and OpenEnv's server driven by this package's own sync client,
  ``envkit.client.WSEnvClient`` (socket I/O in the caller's thread, polling up to 0.5 ms before
  it sleeps; its replay bookkeeping and typed results included).
- (p) to (s) and (v): each client, the blocking, polling, ``.sync()``, awaited and envkit one,
  against a server that does no work: it answers every message at once with the same frame (a
  game's first observation; the client keeps playing from it). That round trip is the client's
  and the stack's own, which a served step pays besides any server work.

Each contender plays ``--steps`` steps a round (resetting, with the next seed, when a game
ends) and we time every step round trip. The contenders take turns in chunks of ``--chunk``
steps, each keeping its connection and game from chunk to chunk, the order rotating every
chunk: this VM drifts by tens of percent within a minute, and a contender that ran all its
steps while the machine was slow would carry the drift into the comparison. Steps/s is steps
over the time spent in the contender's chunks, resets included; p50 and p99 are of the step
latencies alone. A round opens every contender (seeded with the round's seed), warms each up
with one unmeasured chunk, then runs the chunks. The table shows each figure's median over
``--rounds``; the targets are judged per round, on paired figures (the round's served p50 minus
the same round's in-process p50; ours over OpenEnv's steps/s in the same round), and we report
their median and how many rounds met them. Each server runs in its own process, as a served
env does (``--same-process`` serves from a thread of this one instead, client and server then
taking turns on one GIL; there no server busy-polls, since the event loop is not in its
process's main thread). The targets -- the served p50 at most 0.3 ms over (a)'s, and ours
>= 1.5x OpenEnv's steps/s with the same client -- are judged with this package's own client
((t) against (u)) and reported for each of the others ((b) against (d), (e) against (f), ...),
with the floor's figures next to them, not enforced: the exit status is 0 either way.
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
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

import httpx
import numpy as np
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from tqdm import tqdm
from websockets.sync.client import ClientConnection, connect

from benchmarks.machine import machine_line
from chess_env.server import ChessAction, ChessAdapter, create_chess_app
from envkit.client import WSEnvClient
from envkit.client.sync_socket import SyncWebSocket
from envkit.server import StepResult, make_server
from envkit.server.busy_poll import BusyPoll
from envkit.server.jsontext import dumps, loads

HOST = "127.0.0.1"
BASELINE = "a"
# (ours, OpenEnv's) over WebSocket, per client. The targets are judged with the first, this
# package's own client; the others show what other clients make of the same servers.
CLIENTS = {
    "envkit WSEnvClient": ("t", "u"),
    "blocking": ("b", "d"),
    "polling": ("e", "f"),
    "GenericEnvClient .sync()": ("l", "m"),
    "GenericEnvClient awaited": ("n", "o"),
}
JUDGED_CLIENT = next(iter(CLIENTS))
# The bare ASGI app, and ours without busy polling, per client.
FLOORS = {"blocking": "h", "polling": "i"}
UNPOLLED = {"blocking": "j", "polling": "k"}
# The server that does no work, per client.
ZERO_WORK = {
    "blocking": "p",
    "polling": "q",
    "GenericEnvClient .sync()": "r",
    "GenericEnvClient awaited": "s",
    "envkit WSEnvClient": "v",
}
WS_OVERHEAD_TARGET_MS = 0.3
OPENENV_RATE_TARGET = 1.5
# (g): about what a served step's round trip leaves the server process idle between messages.
IDLE_S = 0.3e-3
REPLY_TIMEOUT_S = 30.0

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
    """(a), or with ``idle`` (g): the same steps, each after the CPU sat idle as a server's does."""
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
    """What ``play`` reads of a client's ``StepResult``."""
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


def openenv_app() -> FastAPI:
    """OpenEnv's ``create_app`` hosting our ``ChessAdapter``: the same env and opponent as (b).

    The action and observation types are ours with OpenEnv's base classes mixed in, so OpenEnv
    validates an action once (as our server does) and the adapter gets it as it is; the
    observation is wrapped without validating it again. What differs per step is OpenEnv's
    framework: its WebSocket loop, thread-pool hop and serialisation.
    """
    import uuid

    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    from chess_env.server import ChessObservation

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
        def _observe(result: StepResult) -> OpenEnvChessObservation:
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

    # Five clients hold a session at once, (d), (f), (m), (o) and (u): OpenEnv's default allows
    # one.
    app: FastAPI = create_app(
        ChessOnOpenEnv,
        OpenEnvChessAction,
        OpenEnvChessObservation,
        env_name="chess",
        max_concurrent_envs=len(CLIENTS) + 1,
    )
    return app


def bare_app() -> ASGIApp:
    """(h), (i): a bare ASGI app doing per WebSocket message what (b) must do, and no more,
    busy-polling as (b) does."""
    return _websocket_app(_bare_socket)


def zero_work_app() -> ASGIApp:
    """(p)-(s): answers every WebSocket message at once with the same observation frame (a
    game's first), busy-polling as (b) does: a client's and the stack's own round trip."""
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


NAMES = {
    "a": "in-process ChessAdapter.step",
    "b": "envkit WebSocket /ws (1 connection)",
    "c": "envkit HTTP /reset + /step (keep-alive)",
    "d": "OpenEnv create_app hosting ChessAdapter, WebSocket",
    "e": "envkit WebSocket /ws, polling client",
    "f": "OpenEnv create_app, WebSocket, polling client",
    "g": "in-process ChessAdapter.step, CPU idle 0.3 ms before each step",
    "h": "floor: bare ASGI app, same uvicorn and step, WebSocket",
    "i": "floor: bare ASGI app, WebSocket, polling client",
    "j": "envkit WebSocket /ws, busy polling off",
    "k": "envkit WebSocket /ws, busy polling off, polling client",
    "l": "envkit WebSocket /ws, OpenEnv GenericEnvClient .sync()",
    "m": "OpenEnv create_app, OpenEnv GenericEnvClient .sync()",
    "n": "envkit WebSocket /ws, OpenEnv GenericEnvClient awaited",
    "o": "OpenEnv create_app, OpenEnv GenericEnvClient awaited",
    "p": "zero-work server, WebSocket",
    "q": "zero-work server, polling client",
    "r": "zero-work server, OpenEnv GenericEnvClient .sync()",
    "s": "zero-work server, OpenEnv GenericEnvClient awaited",
    "t": "envkit WebSocket /ws, envkit WSEnvClient",
    "u": "OpenEnv create_app, envkit WSEnvClient",
    "v": "zero-work server, envkit WSEnvClient",
}


def run_rounds(
    contenders: dict[str, Contender], rounds: int, steps: int, chunk: int
) -> dict[str, list[Figures]]:
    results: dict[str, list[Figures]] = {key: [] for key in contenders}
    cycles = math.ceil(steps / chunk)
    with tqdm(total=rounds * cycles, desc="chunks", unit="cycle", file=sys.stderr) as progress:
        for seed in range(rounds):
            progress.set_postfix_str(f"round {seed + 1}/{rounds}")
            for key, round_figures in run_round(contenders, seed, steps, chunk, progress).items():
                results[key].append(round_figures)
    return results


def run_round(
    contenders: dict[str, Contender], seed: int, steps: int, chunk: int, progress: tqdm
) -> dict[str, Figures]:
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


def median_figures(results: dict[str, list[Figures]]) -> dict[str, Figures]:
    return {
        key: Figures(
            statistics.median(f.rate for f in values),
            statistics.median(f.p50 for f in values),
            statistics.median(f.p99 for f in values),
        )
        for key, values in results.items()
    }


def overheads(results: dict[str, list[Figures]], key: str) -> list[float]:
    """Per round: the contender's p50 minus the in-process p50 of the same round (ms)."""
    return [ours.p50 - base.p50 for ours, base in zip(results[key], results[BASELINE], strict=True)]


def rate_ratios(results: dict[str, list[Figures]], ours: str, theirs: str) -> list[float]:
    """Per round: ``ours``' steps/s over ``theirs``' in the same round."""
    pairs = zip(results[ours], results[theirs], strict=True)
    return [mine.rate / other.rate for mine, other in pairs]


def table(results: dict[str, list[Figures]]) -> list[str]:
    median = median_figures(results)
    lines = [
        "| contender | steps/s (median) | min | max | p50 ms | p99 ms "
        "| p50 overhead vs in-process (paired median) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, values in sorted(results.items()):
        rates = [f.rate for f in values]
        overhead = (
            f"{statistics.median(overheads(results, key)):+.3f} ms" if key != BASELINE else "--"
        )
        lines.append(
            f"| ({key}) {NAMES[key]} | {median[key].rate:,.0f} | {min(rates):,.0f} "
            f"| {max(rates):,.0f} | {median[key].p50:.3f} | {median[key].p99:.3f} | {overhead} |"
        )
    return lines


def verdicts(results: dict[str, list[Figures]]) -> list[str]:
    """The two targets, once per client, on per-round paired figures: median, range, rounds met."""
    lines = [f"Targets judged with the {JUDGED_CLIENT} client; the other clients for comparison:"]
    for client, (ours, openenv) in CLIENTS.items():
        if ours not in results:
            lines.append(f"{client} client: ({ours}), ({openenv}): n/a, no OpenEnv")
            continue
        lines.append(
            judged(
                f"{client} client: ({ours}) WS overhead p50 over the in-process step",
                overheads(results, ours),
                lambda overhead: overhead <= WS_OVERHEAD_TARGET_MS,
                f"<= {WS_OVERHEAD_TARGET_MS:g} ms",
                "{:+.3f} ms",
            )
        )
        if openenv in results:
            lines.append(
                judged(
                    f"{client} client: ({ours})/({openenv}) steps/s",
                    rate_ratios(results, ours, openenv),
                    lambda ratio: ratio >= OPENENV_RATE_TARGET,
                    f">= {OPENENV_RATE_TARGET:g}",
                    "{:.2f}x",
                )
            )
        else:
            lines.append(f"{client} client: ({ours})/({openenv}) steps/s: n/a, no OpenEnv")
        if client in FLOORS:
            lines.append(floor_line(results, client))
            lines.append(unpolled_line(results, client))
        lines.append(zero_work_line(results, client))
    return lines


def floor_line(results: dict[str, list[Figures]], client: str) -> str:
    """The floor's own figures against the targets, and how far ours is above it."""
    (ours, openenv), floor = CLIENTS[client], FLOORS[client]
    above = [mine.p50 - bare.p50 for mine, bare in zip(results[ours], results[floor], strict=True)]
    return (
        f"{client} client: the floor {_figures_line(results, floor, openenv)}; "
        f"({ours})'s p50 is {statistics.median(above):+.3f} ms over the floor's"
    )


def unpolled_line(results: dict[str, list[Figures]], client: str) -> str:
    """Ours with busy polling off against the targets, and what the polling takes off a step."""
    (ours, openenv), unpolled = CLIENTS[client], UNPOLLED[client]
    gains = [off.p50 - on.p50 for on, off in zip(results[ours], results[unpolled], strict=True)]
    return (
        f"{client} client: busy polling off, {_figures_line(results, unpolled, openenv)}; "
        f"busy polling takes {statistics.median(gains):.3f} ms off ({ours})'s p50"
    )


def _figures_line(results: dict[str, list[Figures]], key: str, openenv: str) -> str:
    """``key``'s median overhead, and its steps/s over OpenEnv's when OpenEnv ran."""
    line = f"({key}) has overhead {statistics.median(overheads(results, key)):+.3f} ms"
    if openenv in results:
        ratio = statistics.median(rate_ratios(results, key, openenv))
        line += f" and ({key})/({openenv}) steps/s {ratio:.2f}x"
    return line


def zero_work_line(results: dict[str, list[Figures]], client: str) -> str:
    """The client's and the stack's own round trip, against what the overhead target allows."""
    zero = ZERO_WORK[client]
    p50 = statistics.median(figures.p50 for figures in results[zero])
    return (
        f"{client} client: with a server that does no work ({zero}), a round trip takes "
        f"{p50:.3f} ms p50, the client's and the stack's own cost "
        f"({p50 / WS_OVERHEAD_TARGET_MS:.0%} of the {WS_OVERHEAD_TARGET_MS:g} ms target)"
    )


def idle_cost(results: dict[str, list[Figures]]) -> str:
    """How much slower the same step runs after the CPU idled: part of every served overhead."""
    costs = overheads(results, "g")
    return (
        f"(g) - (a): the in-process step after {IDLE_S * 1e3:g} ms idle is "
        f"{statistics.median(costs):+.3f} ms p50 (rounds: {min(costs):+.3f} .. {max(costs):+.3f}); "
        "a served step always follows such a wait, so that much of each overhead above is the "
        "CPU waking up, not the server"
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
    unpolled_app = functools.partial(create_chess_app, busy_poll=0)
    with (
        live_server(create_chess_app, same_process=args.same_process) as address,
        live_server(bare_app, same_process=args.same_process) as bare_address,
        live_server(unpolled_app, same_process=args.same_process) as unpolled_address,
        live_server(zero_work_app, same_process=args.same_process) as zero_work_address,
    ):
        contenders: dict[str, Contender] = {
            "a": in_process,
            "g": functools.partial(in_process, idle=IDLE_S),
            "b": websocket_contender(address),
            "c": http_contender(address),
            "e": websocket_contender(address, polling=True),
            "h": websocket_contender(bare_address),
            "i": websocket_contender(bare_address, polling=True),
            "j": websocket_contender(unpolled_address),
            "k": websocket_contender(unpolled_address, polling=True),
            ZERO_WORK["blocking"]: websocket_contender(zero_work_address),
            ZERO_WORK["polling"]: websocket_contender(zero_work_address, polling=True),
            CLIENTS["envkit WSEnvClient"][0]: envkit_client_contender(address),
            ZERO_WORK["envkit WSEnvClient"]: envkit_client_contender(zero_work_address),
        }
        if not openenv_available():
            results = run_rounds(contenders, args.rounds, args.steps, args.chunk)
            skipped = "openenv not installed: skipped"
        else:
            with live_server(openenv_app, same_process=args.same_process) as openenv_address:
                contenders["d"] = websocket_contender(openenv_address)
                contenders["f"] = websocket_contender(openenv_address, polling=True)
                contenders["u"] = envkit_client_contender(openenv_address)
                for client, awaited in (
                    ("GenericEnvClient .sync()", False),
                    ("GenericEnvClient awaited", True),
                ):
                    ours, theirs = CLIENTS[client]
                    contenders[ours] = generic_client_contender(address, awaited=awaited)
                    contenders[theirs] = generic_client_contender(openenv_address, awaited=awaited)
                    contenders[ZERO_WORK[client]] = generic_client_contender(
                        zero_work_address, awaited=awaited
                    )
                results = run_rounds(contenders, args.rounds, args.steps, args.chunk)
            skipped = ""
    peers = () if skipped else ("openenv",)
    speedups = tuple(package for package in ("uvloop", "httptools") if find_spec(package))
    print(machine_line("chess", "fastapi", "uvicorn", *speedups, "websockets", "httpx", *peers))
    where = "a thread of this process" if args.same_process else "its own process"
    print(f"{server_stack()}; each server in {where}")
    print()
    print("\n".join(table(results)))
    if skipped:
        print(f"(d), (f), (l)-(o), (u) OpenEnv: {skipped}")
    print()
    print("\n".join(verdicts(results)))
    print(idle_cost(results))


if __name__ == "__main__":
    main()
