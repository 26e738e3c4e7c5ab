"""What a server's own players may cost: ``ThinkingLimits``, ``ThinkingBudget``, ``ServedPlayer``.

A server makes players for its clients: the OpenEnv sessions' opponents and the game service's
seats. Left alone, one client's engine games would take the machine from everyone else's: other
games' players would queue behind their searches and lose on time, and engines started all at
once fail their handshakes. So each server makes and moves its players through one
``ThinkingBudget``:

- **Quick players** (``QUICK_PLAYERS``: random, greedy) answer on the caller's thread at once,
  waiting on nobody and holding no slot: no other client's load can delay them.
- **Searching players** (Stockfish, alpha-beta, registered kinds) think at most
  ``max_searches`` at a time on the server and ``max_searches_per_client`` per client; the others
  wait their turn before their clock starts. The game service's players think on the budget's own
  threads (``think``), never on the event loop's shared executor, and their clock counts only the
  time the server is running: a process stopped (``kill -STOP``) or starved for a while does not
  make a player lose on time.
- **Stockfish processes**: at most ``max_engines`` alive on the server and
  ``max_engines_per_client`` per client, reserved when the player is made and released when it is
  closed; one more is ``EngineLimitError`` (503 CAPACITY_REACHED, reason "engine_limit", with
  ``Retry-After``).
- **A served engine's effort**: a spec asking for more than ``max_think_seconds`` a move or a
  deeper search than ``max_depth`` is refused as it is made (``PlayerSpecError``, a 422 naming the
  limit); every served Stockfish move stops after ``max_think_seconds``.

The client is the one ``envkit.server.sessions.current_client`` names (the connection's peer, or
the address a trusted proxy gives); players made with no client known (None: a service driven
in-process) count only against the server's limits.

Example:
    >>> budget = ThinkingBudget(ThinkingLimits(max_think_seconds=2.0))
    >>> budget.make("stockfish?movetime=5", client="10.0.0.1")
    Traceback (most recent call last):
    ...
    chess_env.errors.PlayerSpecError: player 'stockfish?movetime=5': this server's engines think ...
    >>> player = budget.make("random", client="10.0.0.1")
    >>> player.quick, player.choose_move(chess.Board(), [chess.Move.from_uci("e2e4")]).uci()
    (True, 'e2e4')
    >>> player.close(); budget.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import chess

from chess_env.core.opponents import MAX_STOCKFISH_DEPTH, Opponent, StockfishOpponent
from chess_env.core.players import PlayerSpec, check_player, make_player
from chess_env.errors import PlayerSpecError
from envkit.server.errors import CapacityError

__all__ = [
    "QUICK_PLAYERS",
    "EngineLimitError",
    "ServedPlayer",
    "SlotGate",
    "ThinkingBudget",
    "ThinkingLimits",
]

QUICK_PLAYERS = ("random", "greedy")  # reply in well under a millisecond, waiting on nothing
ENGINE_RETRY_AFTER = 30  # seconds: engines are released as games and sessions end
SERVER = "*"  # the key of the server-wide counts (a client is an address, never "*")
STALL_SECONDS = 1.0  # a wait that overran its slice by more: the server was stopped or starved
_SLICE_SECONDS = 0.5  # a thinking clock looks at the time this often


def _cores() -> int:
    return os.cpu_count() or 2


@dataclass(frozen=True)
class ThinkingLimits:
    """A server's limits on the players it makes for its clients.

    Args:
        max_engines: Stockfish processes alive at once on the server (default 8).
        max_engines_per_client: of which one client may hold (default 4).
        max_searches: searching players thinking at once on the server (default: the cores).
        max_searches_per_client: of which one client's (default 1).
        max_think_seconds: a served engine's most seconds a move (default 5; a spec asking for
            a longer ``movetime`` is refused).
        max_depth: a served engine's deepest search in plies (default 20, at most 30).
    """

    max_engines: int = 8
    max_engines_per_client: int = 4
    max_searches: int = field(default_factory=_cores)
    max_searches_per_client: int = 1
    max_think_seconds: float = 5.0
    max_depth: int = 20

    def __post_init__(self) -> None:
        for name in ("max_engines", "max_engines_per_client", "max_searches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_searches_per_client < 1:
            raise ValueError(
                f"max_searches_per_client must be at least 1, got {self.max_searches_per_client}"
            )
        if not 0 < self.max_think_seconds < math.inf:
            raise ValueError(f"max_think_seconds must be positive, got {self.max_think_seconds}")
        if not 1 <= self.max_depth <= MAX_STOCKFISH_DEPTH:
            raise ValueError(f"max_depth must be in 1..{MAX_STOCKFISH_DEPTH}, got {self.max_depth}")


class EngineLimitError(CapacityError):
    """Every engine slot the request could use is taken (the server's, or its client's)."""


class SlotGate:
    """At most ``limit`` holders per key at once; threads wait in ``acquire``, coroutines in
    ``acquire_async``, and both are woken by ``release`` from any thread. The key None (a client
    nobody named: a service driven in-process) is never limited nor counted.

    One gate serves the game service's coroutines and the OpenEnv sessions' worker threads, so
    a client's searches are counted once whichever way they come.

    Example:
        >>> gate = SlotGate(1)
        >>> gate.try_acquire("a"), gate.try_acquire("a"), gate.try_acquire("b")
        (True, False, True)
        >>> gate.release("a"); gate.try_acquire("a"), gate.try_acquire(None)
        (True, True)
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._held: dict[Hashable, int] = {}
        self._waiters: dict[Hashable, deque[Callable[[], None]]] = {}

    def held(self, key: Hashable) -> int:
        with self._lock:
            return self._held.get(key, 0)

    def try_acquire(self, key: Hashable) -> bool:
        with self._lock:
            return self._take(key)

    def acquire(self, key: Hashable) -> None:
        """Wait on this thread until ``key`` has a free slot, and take it."""
        woken = threading.Event()
        while True:
            with self._lock:
                if self._take(key):
                    return
                self._waiters.setdefault(key, deque()).append(woken.set)
            woken.wait()
            woken.clear()

    async def acquire_async(self, key: Hashable) -> None:
        """Wait on the running loop until ``key`` has a free slot, and take it."""
        loop = asyncio.get_running_loop()
        while True:
            woken: asyncio.Future[None] = loop.create_future()

            def wake(woken: asyncio.Future[None] = woken) -> None:
                loop.call_soon_threadsafe(_resolve, woken)

            with self._lock:
                if self._take(key):
                    return
                self._waiters.setdefault(key, deque()).append(wake)
            try:
                await woken
            except asyncio.CancelledError:
                self._withdraw(key, wake)
                raise

    def release(self, key: Hashable) -> None:
        """Give a slot of ``key`` back, and wake the next one waiting for it."""
        if key is None:
            return
        with self._lock:
            count = self._held[key] - 1
            if count:
                self._held[key] = count
            else:
                del self._held[key]
            wake = self._next_waiter(key)
        if wake is not None:
            wake()

    def _take(self, key: Hashable) -> bool:
        if key is None:
            return True
        count = self._held.get(key, 0)
        if count >= self.limit:
            return False
        self._held[key] = count + 1
        return True

    def _next_waiter(self, key: Hashable) -> Callable[[], None] | None:
        waiting = self._waiters.get(key)
        if not waiting:
            return None
        wake = waiting.popleft()
        if not waiting:
            del self._waiters[key]
        return wake

    def _withdraw(self, key: Hashable, wake: Callable[[], None]) -> None:
        """A cancelled waiter leaves the queue; had it been woken already, the next one is."""
        with self._lock:
            waiting = self._waiters.get(key)
            if waiting is not None and wake in waiting:
                waiting.remove(wake)
                if not waiting:
                    del self._waiters[key]
                return
            passed_on = self._next_waiter(key) if self._held.get(key, 0) < self.limit else None
        if passed_on is not None:
            passed_on()


def _resolve(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


class ServedPlayer(Opponent):
    """A player a server made: its moves go through the budget, and closing it frees its engine.

    ``quick`` players move at once; the others wait for a search slot (``choose_move``, on the
    caller's thread) or think on the budget's threads (``ThinkingBudget.think``).
    """

    def __init__(
        self, player: Opponent, budget: ThinkingBudget, client: str | None, *, quick: bool
    ) -> None:
        super().__init__()
        self.player, self.budget, self.client, self.quick = player, budget, client, quick
        self.name = player.name
        self.holds_engine = False
        self.lender: ServedPlayer | None = None  # the player whose engine slot it took over

    def reset(self, seed: int | None = None) -> None:
        self.player.reset(seed)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        if self.quick:
            return self.player.choose_move(board, legal_moves)
        with self.budget.search_slot(self.client):
            return self.player.choose_move(board, legal_moves)

    def repay(self) -> None:
        """Give the engine slot taken over from ``lender`` back to it (a reset that failed
        after making this player: the lender plays on)."""
        lender, self.lender = self.lender, None
        if lender is not None and self.holds_engine:
            self.holds_engine, lender.holds_engine = False, True

    def close(self) -> None:
        try:
            self.player.close()
        finally:
            if self.holds_engine:
                self.holds_engine = False
                self.budget.release_engine(self.client)

    def __repr__(self) -> str:
        return f"ServedPlayer({self.player!r}, client={self.client!r})"


class ThinkingBudget:
    """The players one server makes, and the slots their engines and searches take.

    Args:
        limits: the server's ``ThinkingLimits`` (default: their defaults).

    ``close()`` stops the threads the game service's players think on.
    """

    def __init__(self, limits: ThinkingLimits | None = None) -> None:
        self.limits = limits = limits if limits is not None else ThinkingLimits()
        self._engines = SlotGate(limits.max_engines)  # one key: SERVER
        self._client_engines = SlotGate(limits.max_engines_per_client)
        self._searches = SlotGate(limits.max_searches)
        self._client_searches = SlotGate(limits.max_searches_per_client)
        self._pool = ThreadPoolExecutor(limits.max_searches, thread_name_prefix="server-player")

    # -- making ---------------------------------------------------------------------------------

    def make(
        self, spec: str, client: str | None, *, replacing: Opponent | None = None
    ) -> ServedPlayer:
        """The player ``spec`` names for ``client``, within the limits.

        ``replacing``: a player of the same client about to be closed (a session's next
        episode); the new player may take its engine slot, which it gets back if this fails.

        Raises:
            PlayerSpecError: a spec a server does not make, or beyond ``max_think_seconds`` /
                ``max_depth``.
            EngineLimitError: no engine slot is free.
            StockfishNotFoundError, PlayerFailedError: no Stockfish, or it did not start.
        """
        parsed = check_player(spec, served=True)
        engine = parsed.kind == "stockfish"
        borrowed = False
        if engine:
            self._check_effort(parsed)
            borrowed = self._reserve_engine(client, replacing)
        try:
            player = make_player(spec, served=True)
            if isinstance(player, StockfishOpponent):
                if not engine:  # a registered kind that runs Stockfish counts as one too
                    borrowed = self._reserve_engine(client, replacing)
                    engine = True
                player.limit_seconds(self.limits.max_think_seconds)
        except BaseException:
            if borrowed:
                assert isinstance(replacing, ServedPlayer)
                replacing.holds_engine = True  # the slot it lent returns
            elif engine:
                self.release_engine(client)
            raise
        served = ServedPlayer(player, self, client, quick=parsed.kind in QUICK_PLAYERS)
        served.holds_engine = engine
        if borrowed:
            assert isinstance(replacing, ServedPlayer)
            served.lender = replacing
        return served

    def _check_effort(self, spec: PlayerSpec) -> None:
        """Refuse an engine spec asking for more than this server's limits."""
        limits = self.limits
        depth = spec.integer("depth", 1, MAX_STOCKFISH_DEPTH, from_argument=True)
        movetime = spec.number("movetime", 0.0, math.inf)
        if depth is not None and depth > limits.max_depth:
            raise PlayerSpecError(
                f"player {spec.text!r}: this server's engines search at most {limits.max_depth} "
                f"plies deep, not {depth}"
            )
        if movetime is not None and movetime > limits.max_think_seconds:
            raise PlayerSpecError(
                f"player {spec.text!r}: this server's engines think at most "
                f"{limits.max_think_seconds:g} s a move, not {movetime:g}"
            )

    def _reserve_engine(self, client: str | None, replacing: Opponent | None) -> bool:
        """Take an engine slot for ``client``: True when borrowed from ``replacing``."""
        if (
            isinstance(replacing, ServedPlayer)
            and replacing.holds_engine
            and replacing.client == client
        ):
            replacing.holds_engine = False  # its slot passes to the new player
            return True
        if not self._client_engines.try_acquire(client):
            raise EngineLimitError(
                f"this client already holds {self.limits.max_engines_per_client} engines, this "
                "server's limit per client: finish or close a game or session that uses one",
                reason="engine_limit",
                retry_after=ENGINE_RETRY_AFTER,
            )
        if not self._engines.try_acquire(SERVER):
            self._client_engines.release(client)
            raise EngineLimitError(
                f"all {self.limits.max_engines} engines of this server are in use; try again "
                "later, or play a player that needs no engine (random, greedy, alphabeta)",
                reason="engine_limit",
                retry_after=ENGINE_RETRY_AFTER,
            )
        return False

    def release_engine(self, client: str | None) -> None:
        self._engines.release(SERVER)
        self._client_engines.release(client)

    def engines_in_use(self, client: str | None = None) -> int:
        """Engine slots held, on the server or (``client``) by one client."""
        if client is None:
            return self._engines.held(SERVER)
        return self._client_engines.held(client)

    # -- thinking -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def search_slot(self, client: str | None) -> Iterator[None]:
        """Hold a search slot of the server and of ``client`` (waiting on this thread)."""
        self._client_searches.acquire(client)
        try:
            self._searches.acquire(SERVER)
        except BaseException:
            self._client_searches.release(client)
            raise
        try:
            yield
        finally:
            self._searches.release(SERVER)
            self._client_searches.release(client)

    async def think(
        self,
        player: ServedPlayer,
        board: chess.Board,
        legal: Sequence[chess.Move],
        timeout: float,
    ) -> tuple[chess.Move, float]:
        """``player``'s move and the seconds it thought, on the budget's threads once a search
        slot is free; ``TimeoutError`` when it thinks longer than ``timeout`` seconds of the
        server's running time (the wait for a slot is not counted). A quick player answers here
        at once."""
        if player.quick:
            started = time.perf_counter()
            return player.player.choose_move(board, legal), time.perf_counter() - started
        client = player.client
        await self._client_searches.acquire_async(client)
        try:
            await self._searches.acquire_async(SERVER)
        except BaseException:
            self._client_searches.release(client)
            raise
        try:
            thinking = self._pool.submit(player.player.choose_move, board, legal)
        except BaseException:
            self._release_search(client)
            raise
        # The slots are held until the thread is done, even when its move comes too late:
        # an abandoned search still takes a core.
        thinking.add_done_callback(lambda _: self._release_search(client))
        return await running_clock(asyncio.wrap_future(thinking), timeout)

    def _release_search(self, client: str | None) -> None:
        self._searches.release(SERVER)
        self._client_searches.release(client)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


async def running_clock(
    thinking: asyncio.Future[chess.Move],
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[chess.Move, float]:
    """The result of ``thinking`` once done, and the seconds it took; ``TimeoutError`` after
    ``timeout`` seconds of the server's running time. A wait that overran its slice by more
    than ``STALL_SECONDS`` counts as its slice only: the process was stopped or starved, and a
    player is not to lose on time for that. ``thinking`` is left running when the time is up
    (its thread cannot be stopped).

    Example:
        >>> async def quick() -> str:
        ...     done = asyncio.get_running_loop().create_future()
        ...     done.set_result(chess.Move.from_uci("e2e4"))
        ...     move, seconds = await running_clock(done, 1.0)
        ...     return move.uci()
        >>> asyncio.run(quick())
        'e2e4'
    """
    spent = 0.0
    while True:
        share = min(_SLICE_SECONDS, timeout - spent)
        started = clock()
        done, _ = await asyncio.wait({thinking}, timeout=max(share, 0.0))
        spent += min(clock() - started, share + STALL_SECONDS)
        if done:
            return thinking.result(), spent
        if spent >= timeout:
            raise TimeoutError(f"no move after {timeout:g} s of thinking")
