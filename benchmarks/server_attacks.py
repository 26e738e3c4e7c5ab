"""Four attacks on a chess server hosted for others, each against a fresh server, with an honest
client's latency and the server's memory before, during and after the attack.

1. engines: an attacker starts games of deep Stockfish against itself; a victim plays random.
2. evictions: an attacker creates games in a burst; does the victim's game survive it?
3. ping flood: WebSocket pings sent as fast as a socket takes them, the pongs never read.
4. engine start-up: many OpenEnv sessions with a Stockfish opponent stepped at once.

The server is ``python -m chess_env serve --service`` in a process of its own, so the attacker
and the victim (from different loopback addresses: the server counts clients by IP) are clients
like any other. What each attack measures and why: benchmarks/README.md.

Usage: ``python -m benchmarks.server_attacks [--attacks 1,2,3,4] [--scale small|full]
[--seconds 3] [--server-arg=--flag=value ...]``.
"""

from __future__ import annotations

import argparse
import base64
import collections
import functools
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from benchmarks.machine import load_line, machine_line

__all__ = ["main"]

HOST = "127.0.0.1"  # where the server listens
ATTACKER = "127.0.0.2"  # Linux routes all of 127/8 to the loopback: one address per client
VICTIM = "127.0.0.3"
PHASES = ("before", "during", "after")
SAMPLE_S = 0.1  # how often the server's RSS and engines are read
REPLY_TIMEOUT_S = 120.0  # a victim's move may wait behind engines (the server's own limit: 30 s)
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0  # SIGTERM, then SIGKILL: abandoned engine threads may hold the exit up
VICTIM_THINK_S = 0.05  # between two of the victim's moves
# Attack 2's victim thinks as an LLM agent does, so that the burst lands between two of its moves:
# a game moved every few milliseconds stays the most recently updated and is evicted last.
SLOW_THINK_S = 1.0
ENGINE_PLAYER = "stockfish?depth=30&movetime=60"  # as deep and long as a client may ask
PING_PAYLOAD = 125  # the most a control frame carries
PING_FRAMES_PER_WRITE = 512


@dataclass(frozen=True)
class Scale:
    """How hard each attack pushes."""

    engine_games: int  # attack 1: games of ENGINE_PLAYER against itself
    creates: int  # attack 2: POST /service/games in the burst
    max_games: int | None  # attack 2: the server's --max-games (None: its default)
    flood_sockets: int  # attack 3: per route (/ws and the spectator socket)
    engine_sessions: int  # attack 4: OpenEnv sessions against Stockfish


SCALES = {
    "small": Scale(engine_games=8, creates=100, max_games=20, flood_sockets=1, engine_sessions=16),
    "full": Scale(
        engine_games=30, creates=100, max_games=None, flood_sockets=4, engine_sessions=32
    ),
}


# -- the server and what is read off it ----------------------------------------------------------


class ServerFailedError(RuntimeError):
    """The server did not start (an unknown flag, a port taken): the attack is reported, not run."""


@dataclass
class Server:
    """A ``python -m chess_env serve --service`` process and its log."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    command: list[str]
    _read: int = 0

    def new_log(self) -> str:
        """The log written since the last call."""
        with self.log.open("rb") as file:
            file.seek(self._read)
            text = file.read()
        self._read += len(text)
        return text.decode(errors="replace")


@contextmanager
def served(flags: Sequence[str]) -> Iterator[Server]:
    """A fresh server on a free port of ``HOST`` with ``flags``, stopped on leaving."""
    port = _free_port()
    command = [sys.executable, "-m", "chess_env", "serve", "--service", "--host", HOST]
    command += ["--port", str(port), *flags]
    with tempfile.TemporaryDirectory(prefix="server_attacks_") as directory:
        log = Path(directory) / "server.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        server = Server(process, f"http://{HOST}:{port}", log, command)
        try:
            _wait_until_up(server)
            yield server
        finally:
            _stop(process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.new_log().strip().splitlines()[-3:]
            raise ServerFailedError(f"the server exited ({server.process.returncode}): {tail}")
        try:
            httpx.get(f"{server.url}/health", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise ServerFailedError(f"the server did not answer /health within {START_TIMEOUT_S:g} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Meter:
    """Samples the server process's RSS and its Stockfish children every ``SAMPLE_S``, labelled
    with the phase running (``phase``), in a thread of its own."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.phase = PHASES[0]
        self.rss: dict[str, list[float]] = {phase: [] for phase in PHASES}  # MB
        self.engines: dict[str, list[int]] = {phase: [] for phase in PHASES}
        self.engine_rss: dict[str, list[float]] = {phase: [] for phase in PHASES}  # MB, summed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="meter", daemon=True)

    def __enter__(self) -> Meter:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        phase, rss = self.phase, rss_mb(self.pid)
        if rss is not None:
            engines = [rss_mb(child) or 0.0 for child in stockfish_children(self.pid)]
            self.rss[phase].append(rss)
            self.engines[phase].append(len(engines))
            self.engine_rss[phase].append(sum(engines))

    @property
    def latest_rss(self) -> float:
        return next((values[-1] for values in reversed(self.rss.values()) if values), 0.0)


def rss_mb(pid: int) -> float | None:
    """The process's resident set (VmRSS) in MB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def stockfish_children(pid: int) -> list[int]:
    """The process's live Stockfish children (each engine a player holds is one)."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with suppress(OSError):  # the thread ended meanwhile
            for child in children.read_text().split():
                with suppress(OSError):  # and the child too
                    if Path(f"/proc/{child}/comm").read_text().startswith("stockfish"):
                        found.append(int(child))
    return found


class Tally:
    """What happened, counted per phase: ``record("victim", "404 unknown_game")``."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.counts: dict[str, collections.Counter[str]] = {
            phase: collections.Counter() for phase in PHASES
        }
        self.times: dict[str, collections.defaultdict[str, list[float]]] = {
            phase: collections.defaultdict(list) for phase in PHASES
        }
        self._lock = threading.Lock()

    def record(self, who: str, what: str, times: int = 1) -> None:
        with self._lock:
            self.counts[self.meter.phase][f"{who}: {what}"] += times

    def time(self, label: str, seconds: float) -> None:
        with self._lock:
            self.times[self.meter.phase][label].append(seconds)

    def watch(self, labels: Sequence[str]) -> None:
        """Rows the table shows even when nothing was counted (what the attack is about)."""
        for label in labels:
            self.counts[PHASES[0]][label] += 0


def client_for(url: str, address: str, timeout: float = REPLY_TIMEOUT_S) -> httpx.Client:
    """A keep-alive client whose connections come from ``address``."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=url, transport=transport, timeout=timeout)


def refusal(response: httpx.Response) -> str:
    """``"404 unknown_game"``: the status and the error's reason (or code), for the tallies."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    why = body.get("reason") or body.get("code") if isinstance(body, dict) else None
    return f"{response.status_code} {why}" if why else str(response.status_code)


# -- the victims ---------------------------------------------------------------------------------


class Victim(Protocol):
    """An honest client: one timed move at a time, its refusals tallied."""

    think: float

    def move(self) -> float | None:
        """One move's round trip in seconds (None: it was refused, or there was no game)."""


class ServiceVictim:
    """Plays white (remote) against the server's ``random`` in the game service."""

    def __init__(self, url: str, tally: Tally, *, think: float = VICTIM_THINK_S) -> None:
        self.client = client_for(url, VICTIM)
        self.tally, self.think = tally, think
        self.rng = random.Random(0)
        self.game: tuple[str, str] | None = None  # id, seat token
        self.legal: list[str] = []

    def _new_game(self) -> bool:
        body = {
            "white": {"player": "remote", "name": "victim"},
            "black": {"player": "random", "name": "random", "seed": self.rng.randrange(2**32)},
        }
        response = self.client.post("/service/games", json=body)
        if response.status_code != 201:
            self.tally.record("victim", f"POST /service/games {refusal(response)}")
            return False
        created = response.json()
        self.game = (created["game"]["game_id"], created["tokens"]["white"])
        self.legal = list(created["game"]["board_state"]["legal_moves"])
        self.tally.record("victim", "games created")
        return True

    def move(self) -> float | None:
        if self.game is None and not self._new_game():
            return None
        assert self.game is not None
        game_id, token = self.game
        body = {"move": self.rng.choice(self.legal)}
        headers = {"X-Seat-Token": token}
        started = time.perf_counter()
        response = self.client.post(f"/service/games/{game_id}/moves", json=body, headers=headers)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            self.tally.record("victim", f"move {refusal(response)}")
            self.game = None
            return None
        game = response.json()
        if game["status"] != "in_progress":
            if game["termination"] == "timeout":
                self.tally.record("victim", "game ended: the server's player lost on time")
            else:
                self.tally.record("victim", f"game ended: {game['termination']}")
            self.game = None
        self.legal = list(game["board_state"]["legal_moves"])
        return elapsed


class EnvVictim:
    """Steps an OpenEnv session against ``random`` over HTTP: ``/reset``, then ``/step``."""

    def __init__(self, url: str, tally: Tally, *, think: float = VICTIM_THINK_S) -> None:
        self.client = client_for(url, VICTIM)
        self.tally, self.think = tally, think
        self.rng = random.Random(0)
        self.session: str | None = None
        self.legal: list[str] = []

    def _reset(self) -> bool:
        body = {"opponent": "random", "seed": self.rng.randrange(2**32), **self._named()}
        response = self.client.post("/reset", json=body)
        if response.status_code != 200:
            self.tally.record("victim", f"POST /reset {refusal(response)}")
            self.session = None
            return False
        payload = response.json()
        self.session, self.legal = payload["session_id"], payload["observation"]["legal_moves"]
        return True

    def _named(self) -> dict[str, str]:
        return {} if self.session is None else {"session_id": self.session}

    def move(self) -> float | None:
        if not self.legal and not self._reset():
            return None
        body = {"action": {"move": self.rng.choice(self.legal)}, **self._named()}
        started = time.perf_counter()
        response = self.client.post("/step", json=body)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            self.tally.record("victim", f"POST /step {refusal(response)}")
            self.session, self.legal = None, []
            return None
        payload = response.json()
        self.legal = [] if payload["done"] else payload["observation"]["legal_moves"]
        return elapsed


def play(
    victim: Victim, tally: Tally, seconds: float, under_way: threading.Event | None = None
) -> list[float]:
    """The victim's moves for ``seconds`` (a move under way is waited for): their latencies.

    With ``under_way``, the seconds count from when it is set (the attack fully started: its
    games created, its engines up), so that the phase sees the attack at its full weight too;
    they count from ``START_TIMEOUT_S`` at the latest.
    """
    latencies = []
    started = time.monotonic()
    deadline = started + seconds if under_way is None else None
    while deadline is None or time.monotonic() < deadline:
        if deadline is None and under_way is not None:
            if under_way.is_set():
                deadline = time.monotonic() + seconds
            elif time.monotonic() > started + START_TIMEOUT_S:
                deadline = started + START_TIMEOUT_S + seconds
        try:
            latency = victim.move()
        except httpx.HTTPError as error:  # a dropped connection, a reply that never came
            tally.record("victim", type(error).__name__)
            time.sleep(victim.think)
            continue
        if latency is not None:
            latencies.append(latency)
        time.sleep(victim.think)
    return latencies


# -- the attacks ---------------------------------------------------------------------------------


class Attack(Protocol):
    """One attack: the server it needs, its victim, and the attack itself, run in threads
    between ``start`` and ``stop``."""

    title: str
    describe: str
    watched: tuple[str, ...]  # the counts that say whether it worked, shown even when zero

    def server_flags(self) -> list[str]: ...

    def victim(self, url: str, tally: Tally) -> Victim: ...

    def start(self, url: str, tally: Tally, meter: Meter, seconds: float) -> threading.Event:
        """Starts the attack's threads; the event is set once the attack is fully under way."""

    def stop(self) -> None: ...


@dataclass
class Threads:
    """The attack's threads and the event that stops them."""

    stopping: threading.Event = field(default_factory=threading.Event)
    under_way: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join()


def from_attacker(
    url: str, calls: Sequence[Callable[[httpx.Client], object]], connections: int
) -> None:
    """Each call made with a client of ``ATTACKER``'s, ``connections`` at a time."""
    local = threading.local()

    def call(made: Callable[[httpx.Client], object]) -> None:
        if not hasattr(local, "client"):
            local.client = client_for(url, ATTACKER, timeout=60)
        made(local.client)

    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(call, calls))


def post(
    client: httpx.Client, tally: Tally, path: str, timed_as: str | None = None, **kwargs: Any
) -> httpx.Response | None:
    """``POST path`` as the attacker, its status (and reason) tallied and its round trip timed
    (under ``timed_as``, default the label: "abort" or "POST path"); None when no reply came."""
    label = "abort" if path.endswith("/abort") else f"POST {path}"
    started = time.perf_counter()
    try:
        response = client.post(path, **kwargs)
    except httpx.HTTPError as error:
        tally.record("attacker", f"{label} {type(error).__name__}")
        return None
    finally:
        tally.time(f"attacker: {timed_as or label}", time.perf_counter() - started)
    tally.record("attacker", f"{label} {refusal(response)}")
    return response


class EngineGames:
    """Attack 1: games of ``ENGINE_PLAYER`` against itself created in quick succession. Each
    server move then holds a worker thread for up to Stockfish's 10 s guard rail, and the
    victim's ``random`` reply waits behind them, its wait counted against its own time limit."""

    title = "Attack 1: engine games spoil another's game"
    watched: tuple[str, ...] = ("victim: game ended: the server's player lost on time",)

    def __init__(self, scale: Scale) -> None:
        self.games = scale.engine_games
        self.describe = (
            f"attacker ({ATTACKER}): {self.games} games of `{ENGINE_PLAYER}` against itself, "
            f"created one after another, aborted (all at once) when the attack stops; victim "
            f"({VICTIM}): "
            "plays white (remote) against `random` in the game service"
        )
        self.threads = Threads()
        self.created: list[tuple[str, str]] = []  # id, creator token

    def server_flags(self) -> list[str]:
        return []

    def victim(self, url: str, tally: Tally) -> Victim:
        return ServiceVictim(url, tally)

    def start(self, url: str, tally: Tally, meter: Meter, seconds: float) -> threading.Event:
        self.url, self.tally = url, tally
        self.threads.spawn(self._create)
        return self.threads.under_way

    def _create(self) -> None:
        engine = {"player": ENGINE_PLAYER, "name": "engine"}
        with client_for(self.url, ATTACKER) as client:
            for _ in range(self.games):
                if self.threads.stopping.is_set():
                    break
                body = {"white": engine, "black": engine}
                response = post(client, self.tally, "/service/games", json=body)
                if response is not None and response.status_code == 201:
                    created = response.json()
                    self.created.append((created["game"]["game_id"], created["tokens"]["creator"]))
        self.threads.under_way.set()

    def stop(self) -> None:
        """Abort every game at once (an abort waits for the move under way)."""
        self.threads.join()
        aborts = [
            functools.partial(_abort, tally=self.tally, game_id=game_id, token=token)
            for game_id, token in self.created
        ]
        if aborts:
            from_attacker(self.url, aborts, len(aborts))


def _abort(client: httpx.Client, *, tally: Tally, game_id: str, token: str) -> None:
    post(client, tally, f"/service/games/{game_id}/abort", headers={"X-Seat-Token": token})


class CreationBurst:
    """Attack 2: ``creates`` games (remote against ``random``, never moved) sent as fast as four
    connections take them. Past ``max_games`` each new game evicts the least recently updated."""

    title = "Attack 2: creating games evicts live games"
    watched: tuple[str, ...] = ("victim: move 404 unknown_game",)

    def __init__(self, scale: Scale) -> None:
        self.creates, self.max_games = scale.creates, scale.max_games
        limit = f"--max-games {self.max_games}" if self.max_games else "its default --max-games"
        self.describe = (
            f"server with {limit}; attacker ({ATTACKER}): {self.creates} POST /service/games "
            "(remote against `random`) over 4 connections at once; victim "
            f"({VICTIM}): plays white against `random`, thinking {SLOW_THINK_S:g} s between moves"
        )
        self.threads = Threads()

    def server_flags(self) -> list[str]:
        return ["--max-games", str(self.max_games)] if self.max_games else []

    def victim(self, url: str, tally: Tally) -> Victim:
        return ServiceVictim(url, tally, think=SLOW_THINK_S)

    def start(self, url: str, tally: Tally, meter: Meter, seconds: float) -> threading.Event:
        self.threads.spawn(self._burst, url, tally)
        return self.threads.under_way

    def _burst(self, url: str, tally: Tally) -> None:
        body = {
            "white": {"player": "remote", "name": "squatter"},
            "black": {"player": "random", "name": "random"},
        }
        create = functools.partial(post, tally=tally, path="/service/games", json=body)
        try:
            from_attacker(url, [create] * self.creates, 4)
        finally:
            self.threads.under_way.set()

    def stop(self) -> None:
        self.threads.join()


class PingFlood:
    """Attack 3: raw sockets that shake hands by hand on ``/ws`` and on a game's spectator
    socket, then write masked 125-byte pings as fast as the kernel takes them and never read.
    Each ping is answered with a pong the server must keep until the client reads it."""

    title = "Attack 3: WebSocket ping flood"
    watched: tuple[str, ...] = (
        "attacker: /ws connection closed by the server",
        "attacker: events connection closed by the server",
    )

    def __init__(self, scale: Scale, max_rss_mb: float) -> None:
        self.per_route, self.max_rss_mb = scale.flood_sockets, max_rss_mb
        self.describe = (
            f"attacker ({ATTACKER}): {self.per_route} socket(s) on /ws and {self.per_route} on "
            f"/service/games/{{id}}/events, each writing {PING_PAYLOAD}-byte pings without ever "
            "reading for the phase's seconds (stopped early should the server pass "
            f"{max_rss_mb:g} MB); victim "
            f"({VICTIM}): HTTP /reset + /step against `random`"
        )
        self.threads = Threads()
        frame = ping_frame(os.urandom(4), bytes(PING_PAYLOAD))
        self.frame_size = len(frame)
        self.burst = frame * PING_FRAMES_PER_WRITE

    def server_flags(self) -> list[str]:
        return []

    def victim(self, url: str, tally: Tally) -> Victim:
        return EnvVictim(url, tally)

    def start(self, url: str, tally: Tally, meter: Meter, seconds: float) -> threading.Event:
        self.tally, self.meter, self.deadline = tally, meter, time.monotonic() + seconds
        self.threads.under_way.set()  # at once: the victim's phase lasts as long as the flood
        game_id = self._spectated_game(url)
        port = int(url.rsplit(":", 1)[1])
        paths = ["/ws"] * self.per_route
        if game_id is not None:
            paths += [f"/service/games/{game_id}/events"] * self.per_route
        for path in paths:
            self.threads.spawn(self._flood, port, path)
        self.threads.spawn(self._guard)
        return self.threads.under_way

    def _spectated_game(self, url: str) -> str | None:
        body = {
            "white": {"player": "remote", "name": "idle"},
            "black": {"player": "random", "name": "random"},
        }
        with client_for(url, ATTACKER, timeout=30) as client:
            response = client.post("/service/games", json=body)
        self.tally.record("attacker", f"POST /service/games {refusal(response)}")
        return response.json()["game"]["game_id"] if response.status_code == 201 else None

    def _flood(self, port: int, path: str) -> None:
        route = "/ws" if path == "/ws" else "events"
        try:
            sock = handshake(port, path)
        except (OSError, RuntimeError) as error:
            self.tally.record("attacker", f"{route} handshake failed: {error}")
            return
        sent = 0
        with sock:
            sock.settimeout(0.5)
            while not self.threads.stopping.is_set():
                try:
                    sent += sock.send(self.burst)
                except TimeoutError:
                    continue  # the server stopped reading: hold on until the attack stops
                except OSError:
                    self.tally.record("attacker", f"{route} connection closed by the server")
                    break
        self.tally.record("attacker", f"{route} pings sent", sent // self.frame_size)

    def _guard(self) -> None:
        """Ends the flood at its deadline, or sooner when the server grows past the bound."""
        while not self.threads.stopping.wait(SAMPLE_S):
            if time.monotonic() > self.deadline:
                self.threads.stopping.set()
            elif self.meter.latest_rss > self.max_rss_mb:
                self.tally.record("attacker", f"stopped early: server RSS over {self.max_rss_mb:g}")
                self.threads.stopping.set()

    def stop(self) -> None:
        self.threads.join()  # the sockets close as their threads end


def ping_frame(mask: bytes, payload: bytes) -> bytes:
    """A client's ping frame (FIN, opcode 9, masked, payload of at most 125 bytes)."""
    masked = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
    return bytes([0x89, 0x80 | len(payload)]) + mask + masked


def handshake(port: int, path: str) -> socket.socket:
    """A socket from ``ATTACKER`` upgraded to a WebSocket on ``path``, its reply read up to the
    end of the headers (and nothing more, ever). A tiny receive buffer makes the pongs back up
    into the server at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.bind((ATTACKER, 0))
        sock.settimeout(10)
        sock.connect((HOST, port))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        sock.sendall(request.encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(1)  # byte by byte: nothing past the headers is read
            if not chunk:
                raise RuntimeError("closed during the handshake")
            reply += chunk
        status = reply.split(b"\r\n", 1)[0].decode(errors="replace")
        if " 101 " not in status + " ":
            raise RuntimeError(status)
    except BaseException:
        sock.close()
        raise
    return sock


class EngineSessions:
    """Attack 4: ``sessions`` OpenEnv sessions against ``stockfish:1``, reset together, then
    stepped together (each opponent's engine starts at its first move), then stepped until the
    attack stops."""

    title = "Attack 4: engine start-up under load"
    watched: tuple[str, ...] = (
        "attacker: POST /reset 500 EXECUTION_ERROR",
        "attacker: POST /step 500 EXECUTION_ERROR",
    )

    def __init__(self, scale: Scale) -> None:
        self.sessions = scale.engine_sessions
        self.describe = (
            f"attacker ({ATTACKER}): {self.sessions} HTTP sessions reset with "
            "`stockfish:1` at once, their first steps at once, then stepping; victim "
            f"({VICTIM}): HTTP /reset + /step against `random`"
        )
        self.threads = Threads()

    def server_flags(self) -> list[str]:
        return []

    def victim(self, url: str, tally: Tally) -> Victim:
        return EnvVictim(url, tally)

    def start(self, url: str, tally: Tally, meter: Meter, seconds: float) -> threading.Event:
        barrier = threading.Barrier(self.sessions)
        self._waiting_first_steps = self.sessions
        self._lock = threading.Lock()
        for seed in range(self.sessions):
            self.threads.spawn(self._session, url, tally, barrier, seed)
        return self.threads.under_way

    def _first_step_taken(self) -> None:
        """Once every session has taken its first step (or failed to), the attack is under way."""
        with self._lock:
            self._waiting_first_steps -= 1
            if self._waiting_first_steps == 0:
                self.threads.under_way.set()

    def _session(self, url: str, tally: Tally, barrier: threading.Barrier, seed: int) -> None:
        rng = random.Random(seed)
        session: str | None = None
        legal: list[str] = []
        with client_for(url, ATTACKER, timeout=60) as client:
            for _ in range(2):  # reset together, then take the first steps together
                with suppress(threading.BrokenBarrierError):  # one failed: go on without it
                    barrier.wait(START_TIMEOUT_S)
                if not legal:
                    session, legal = self._reset(client, tally, seed)
            first = True
            while not self.threads.stopping.is_set():
                if not legal:
                    session, legal = self._reset(client, tally, seed)
                    if not legal:
                        if first:
                            self._first_step_taken()
                            first = False
                        self.threads.stopping.wait(0.2)
                    continue
                body = {"action": {"move": rng.choice(legal)}, "session_id": session}
                timed_as = "first POST /step (its engine starts)" if first else None
                response = post(client, tally, "/step", timed_as, json=body)
                if first:
                    self._first_step_taken()
                    first = False
                ok = response is not None and response.status_code == 200
                payload: dict[str, Any] = response.json() if response is not None and ok else {}
                live = payload.get("done") is False
                legal = payload["observation"]["legal_moves"] if live else []
            if session is not None:
                with suppress(httpx.HTTPError):  # the server closes it when it stops
                    client.delete(f"/sessions/{session}")

    @staticmethod
    def _reset(client: httpx.Client, tally: Tally, seed: int) -> tuple[str | None, list[str]]:
        """A new session against Stockfish: its id and legal moves (none when refused)."""
        response = post(client, tally, "/reset", json={"opponent": "stockfish:1", "seed": seed})
        if response is None or response.status_code != 200:
            return None, []
        payload = response.json()
        return payload["session_id"], payload["observation"]["legal_moves"]

    def stop(self) -> None:
        self.threads.join()


# -- running and reporting -----------------------------------------------------------------------


@dataclass
class Report:
    """One attack's figures, per phase."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    rss: dict[str, list[float]] = field(default_factory=dict)
    engines: dict[str, list[int]] = field(default_factory=dict)
    engine_rss: dict[str, list[float]] = field(default_factory=dict)  # MB, all engines together
    times: dict[str, collections.defaultdict[str, list[float]]] = field(default_factory=dict)
    command: str = ""  # the server's
    counts: dict[str, collections.Counter[str]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # tracebacks in the server's log


def run_attack(attack: Attack, seconds: float, extra_flags: Sequence[str]) -> Report:
    """``attack`` against a fresh server: the victim plays ``seconds`` before, during and after
    it (after a move it does not time, to warm up)."""
    report = Report()
    with served([*attack.server_flags(), *extra_flags]) as server:
        report.command = " ".join(["python", *server.command[1:]])
        with Meter(server.process.pid) as meter:
            tally = Tally(meter)
            victim = attack.victim(server.url, tally)
            victim.move()
            tally.counts["before"].clear()
            tally.watch(attack.watched)
            for phase in PHASES:
                meter.phase = phase
                try:
                    under_way = None
                    if phase == "during":
                        under_way = attack.start(server.url, tally, meter, seconds)
                    report.latencies[phase] = play(victim, tally, seconds, under_way)
                finally:
                    if phase == "during":
                        attack.stop()
                meter.sample()
                report.errors[phase] = server.new_log().count("Traceback")
        report.rss, report.engines, report.engine_rss = meter.rss, meter.engines, meter.engine_rss
        report.counts, report.times = tally.counts, tally.times
    return report


def table(report: Report) -> list[str]:
    """Phases as columns; latency, memory, engines and every count as rows."""
    rows: list[tuple[str, list[str]]] = [
        ("victim moves answered", [str(len(report.latencies[p])) for p in PHASES]),
        *(
            (f"victim latency {name}", [_ms(report.latencies[p], pick) for p in PHASES])
            for name, pick in (("median", _median), ("p95", _p95), ("max", max))
        ),
        (
            "server RSS MB (end / peak / end)",
            [_last(report.rss["before"]), _peak(report.rss["during"]), _last(report.rss["after"])],
        ),
        ("Stockfish processes (peak)", [_peak(report.engines[p], "{:.0f}") for p in PHASES]),
        ("their RSS MB, together (peak)", [_peak(report.engine_rss[p]) for p in PHASES]),
        ("tracebacks in the server's log", [str(report.errors.get(p, "-")) for p in PHASES]),
    ]
    for label in sorted({label for times in report.times.values() for label in times}):
        cells = [_seconds(report.times[p].get(label, [])) for p in PHASES]
        rows.append((f"{label}: median / max s", cells))
    labels = sorted({label for counts in report.counts.values() for label in counts})
    for label in labels:
        rows.append((label, [str(report.counts[p].get(label, 0)) for p in PHASES]))
    lines = ["| | before | during | after |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {' | '.join(cells)} |" for name, cells in rows]
    return lines


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ms(values: list[float], pick: Callable[[list[float]], float]) -> str:
    return f"{pick(values) * 1e3:,.1f} ms" if values else "-"


def _seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} / {max(values):.2f}" if values else "-"


def _last(values: Sequence[float]) -> str:
    return f"{values[-1]:,.0f}" if values else "-"


def _peak(values: Sequence[float], shown: str = "{:,.0f}") -> str:
    return shown.format(max(values)) if values else "-"


def attacks_for(numbers: Sequence[int], scale: Scale, max_rss_mb: float) -> list[Attack]:
    made: dict[int, Callable[[], Attack]] = {
        1: lambda: EngineGames(scale),
        2: lambda: CreationBurst(scale),
        3: lambda: PingFlood(scale, max_rss_mb),
        4: lambda: EngineSessions(scale),
    }
    return [made[number]() for number in numbers]


def _attack_numbers(text: str) -> list[int]:
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of attack numbers: {text!r}") from None
    if not numbers or any(number not in (1, 2, 3, 4) for number in numbers):
        raise argparse.ArgumentTypeError(f"attacks are 1 to 4, got {text!r}")
    return numbers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--attacks", type=_attack_numbers, default=[1, 2, 3, 4], help="e.g. 1,3 (default: all)"
    )
    parser.add_argument("--scale", choices=list(SCALES), default="small")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="the victim's time in each phase (default: 3)"
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="a flag for every server, after the attack's own (repeatable): "
        "--server-arg=--max-games=50",
    )
    parser.add_argument(
        "--max-rss-mb",
        type=float,
        default=2000.0,
        help="the ping flood stops once the server's RSS passes this (default: 2000)",
    )
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        parser.error("--seconds must be positive")
    scale = SCALES[args.scale]
    print(machine_line("chess", "fastapi", "uvicorn", "websockets", "httpx"))
    print(f"server code: {server_code()}")
    print(f"scale {args.scale}, {args.seconds:g} s a phase; extra server flags: ", end="")
    print(" ".join(args.server_arg) or "none")
    for attack in attacks_for(args.attacks, scale, args.max_rss_mb):
        print(f"\n### {attack.title}\n\n{attack.describe}", flush=True)
        print(f"Before: {load_line()}")
        started = time.monotonic()
        try:
            report = run_attack(attack, args.seconds, args.server_arg)
        except ServerFailedError as error:
            print(f"Not run: {error}")
            continue
        except Exception as error:  # one attack failing must not hide the others' results
            print(f"Failed: {type(error).__name__}: {error}")
            continue
        print(f"After: {load_line()}; {time.monotonic() - started:.0f} s in all")
        print(f"Server: `{report.command}`\n")
        print("\n".join(table(report)), flush=True)


def server_code() -> str:
    """Where the server's ``chess_env`` is imported from, and that checkout's commit: a run
    after the fixes should say which code it measured."""
    where = subprocess.run(
        [sys.executable, "-c", "import chess_env; print(chess_env.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not where:
        return "chess_env not importable"
    root = Path(where).parent.parent
    git = ["git", "-C", str(root)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "chess_env", "envkit"], capture_output=True, text=True
    )
    state = "with uncommitted changes" if changed.stdout.strip() else "clean"
    return f"{root}, commit {commit.stdout.strip() or '?'} ({state} chess_env/ and envkit/)"


if __name__ == "__main__":
    main()
