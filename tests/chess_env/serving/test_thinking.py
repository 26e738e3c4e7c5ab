"""``chess_env.serving.thinking``: the slots, the limits and the clock of a server's own players.

Players that block on an ``Event`` until the test lets them go stand for long engine searches, so
nothing here depends on how fast the machine is; waits are bounded so a bug fails, never hangs.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import chess
import pytest

from chess_env.errors import PlayerFailedError, PlayerSpecError
from chess_env.serving.thinking import (
    STALL_SECONDS,
    EngineLimitError,
    ServedPlayer,
    SlotGate,
    ThinkingBudget,
    ThinkingLimits,
    running_clock,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from held_player import GUARD, Held

START = chess.Board()
LEGAL = list(START.legal_moves)


async def until_thinking(held: type[Held], count: int) -> None:
    """Wait (at most ``GUARD`` seconds) until ``count`` held players think: a loaded machine
    may take a while to start their threads."""
    deadline = time.monotonic() + GUARD
    while held.thinking < count:
        assert time.monotonic() < deadline, f"{count} players never thought at once"
        await asyncio.sleep(0.01)


# -- SlotGate -------------------------------------------------------------------------------------


def test_a_gate_counts_each_key_apart_and_never_limits_none() -> None:
    gate = SlotGate(2)
    assert [gate.try_acquire("a") for _ in range(3)] == [True, True, False]
    assert gate.try_acquire("b") and gate.held("a") == 2 and gate.held("b") == 1
    assert all(gate.try_acquire(None) for _ in range(10)) and gate.held(None) == 0
    gate.release("a")
    assert gate.try_acquire("a") and not gate.try_acquire("a")


def test_a_thread_waiting_in_a_gate_is_woken_by_a_release_from_a_coroutine() -> None:
    gate = SlotGate(1)
    gate.acquire("a")
    got = threading.Event()

    def wait_then_hold() -> None:
        gate.acquire("a")
        got.set()

    waiter = threading.Thread(target=wait_then_hold, daemon=True)
    waiter.start()
    assert not got.wait(0.2)  # the slot is taken: it waits

    async def release() -> None:
        gate.release("a")

    asyncio.run(release())
    assert got.wait(GUARD) and gate.held("a") == 1


def test_coroutines_waiting_in_a_gate_take_turns_and_a_cancelled_one_passes_its_turn_on() -> None:
    async def scenario() -> list[str]:
        gate, order = SlotGate(1), []
        await gate.acquire_async("a")

        async def take(name: str) -> None:
            await gate.acquire_async("a")
            order.append(name)
            gate.release("a")

        first = asyncio.ensure_future(take("first"))
        second = asyncio.ensure_future(take("second"))
        await asyncio.sleep(0)  # both wait now
        gate.release("a")  # wakes first...
        first.cancel()  # ...which leaves before it can take the slot: second gets it
        await asyncio.wait_for(second, GUARD)
        return order

    assert asyncio.run(scenario()) == ["second"]


def test_a_released_slot_wakes_a_thread_waiting_from_another_thread() -> None:
    gate, limit, done = SlotGate(2), 2, []
    most, inside, lock = [0], [0], threading.Lock()

    def work(index: int) -> None:
        gate.acquire("k")
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.001)
        with lock:
            inside[0] -= 1
        gate.release("k")
        done.append(index)

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
    assert sorted(done) == list(range(40)) and most[0] <= limit and gate.held("k") == 0


# -- making players -------------------------------------------------------------------------------


def test_limits_refuse_nonsense() -> None:
    for bad in ({"max_engines": 0}, {"max_think_seconds": float("inf")}, {"max_depth": 31}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ThinkingLimits(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "limit"),
    [
        ("stockfish?movetime=60", "think at most 2 s a move, not 60"),
        ("stockfish:30", "search at most 12 plies deep, not 30"),
        ("stockfish?depth=13&movetime=1", "search at most 12 plies deep, not 13"),
    ],
)
def test_an_engine_asking_for_more_than_the_server_allows_is_refused_naming_the_limit(
    spec: str, limit: str, fake_stockfish: Path
) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_think_seconds=2.0, max_depth=12))
    with pytest.raises(PlayerSpecError, match=limit):
        budget.make(spec, "10.0.0.1")
    assert budget.engines_in_use() == 0  # nothing was reserved
    budget.close()


def test_a_served_engine_stops_each_move_by_the_servers_time(fake_stockfish: Path) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_think_seconds=0.5))
    player = budget.make("stockfish:8", "10.0.0.1")
    assert player.player.max_seconds == 0.5  # type: ignore[attr-defined]
    player.close()
    budget.close()


def test_engines_are_capped_per_client_and_per_server_and_freed_on_close(
    fake_stockfish: Path,
) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_engines=3, max_engines_per_client=2))
    mine = [budget.make("stockfish", "10.0.0.1") for _ in range(2)]
    with pytest.raises(EngineLimitError, match="already holds 2 engines") as refused:
        budget.make("stockfish:2", "10.0.0.1")
    assert refused.value.reason == "engine_limit" and refused.value.retry_after
    other = budget.make("stockfish", "10.0.0.2")
    with pytest.raises(EngineLimitError, match="all 3 engines of this server are in use"):
        budget.make("stockfish", "10.0.0.3")
    assert budget.engines_in_use() == 3 and budget.engines_in_use("10.0.0.3") == 0
    budget.make("random", "10.0.0.3").close()  # a player without an engine needs no slot
    mine[0].close()
    mine[0].close()  # closing twice frees one slot, once
    budget.make("stockfish", "10.0.0.3")
    assert budget.engines_in_use() == 3
    other.close()
    budget.close()


def test_a_player_replacing_one_of_the_same_client_takes_its_engine_slot_and_repays_it(
    fake_stockfish: Path,
) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_engines=1))
    old = budget.make("stockfish", "10.0.0.1")
    new = budget.make("stockfish:3", "10.0.0.1", replacing=old)  # no second slot needed
    assert new.holds_engine and not old.holds_engine
    new.repay()  # the reset failed: the old player plays on, holding its slot
    assert old.holds_engine and not new.holds_engine and budget.engines_in_use() == 1
    new.close()
    assert budget.engines_in_use() == 1
    with pytest.raises(EngineLimitError):  # another client's player never borrows
        budget.make("stockfish", "10.0.0.2", replacing=old)
    old.close()
    assert budget.engines_in_use() == 0
    budget.close()


# -- thinking -------------------------------------------------------------------------------------


def test_a_quick_player_answers_while_every_search_slot_is_taken(held: type[Held]) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_searches=1, max_searches_per_client=1))

    async def scenario() -> str:
        hog = budget.make("held", "10.0.0.1")
        thinking = asyncio.ensure_future(budget.think(hog, START, LEGAL, GUARD))
        await asyncio.sleep(0.05)
        quick = budget.make("random", "10.0.0.2")
        move, _ = await asyncio.wait_for(budget.think(quick, START, LEGAL, 0.5), GUARD)
        held.release.set()
        await thinking
        return move.uci()

    assert chess.Move.from_uci(asyncio.run(scenario())) in LEGAL
    budget.close()


def test_searches_wait_for_a_slot_without_their_clock_running(held: type[Held]) -> None:
    """Two clients' searches on a one-slot server: the second waits longer than its timeout
    for the first to finish, and still moves (its clock starts when it starts thinking)."""
    budget = ThinkingBudget(ThinkingLimits(max_searches=1))

    async def scenario() -> tuple[int, float]:
        first = budget.make("held", "10.0.0.1")
        second = budget.make("alphabeta:1", "10.0.0.2")
        hogging = asyncio.ensure_future(budget.think(first, START, LEGAL, GUARD))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(budget.think(second, START, LEGAL, 0.6))
        await asyncio.sleep(1.2)  # twice its timeout, waiting for the slot
        assert not waiting.done()
        held.release.set()
        await hogging
        move, seconds = await asyncio.wait_for(waiting, GUARD)
        return LEGAL.index(move), seconds

    index, seconds = asyncio.run(scenario())
    assert index >= 0 and seconds < 0.6
    assert held.most == 1
    budget.close()


def test_one_client_thinks_at_most_its_share_at_once(held: type[Held]) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_searches=2, max_searches_per_client=1))

    async def scenario() -> int:
        players = [budget.make("held", "10.0.0.1") for _ in range(4)]
        moves = [asyncio.ensure_future(budget.think(p, START, LEGAL, GUARD)) for p in players]
        await until_thinking(held, 1)
        await asyncio.sleep(0.2)  # room for a second one to start, were the limit not kept
        at_once = held.thinking
        held.release.set()
        await asyncio.wait_for(asyncio.gather(*moves), GUARD)
        return at_once

    assert asyncio.run(scenario()) == 1 and held.most == 1
    budget.close()


def test_a_late_search_loses_on_time_but_keeps_its_slot_until_its_thread_is_done(
    held: type[Held],
) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_searches=1))

    async def scenario() -> None:
        late = budget.make("held", "10.0.0.1")
        with pytest.raises(TimeoutError):
            await budget.think(late, START, LEGAL, 0.3)
        nxt = budget.make("alphabeta:1", "10.0.0.2")
        waiting = asyncio.ensure_future(budget.think(nxt, START, LEGAL, GUARD))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # the abandoned search still holds the only slot
        held.release.set()
        await asyncio.wait_for(waiting, GUARD)

    asyncio.run(scenario())
    budget.close()


def test_sessions_searching_on_their_own_threads_share_the_servers_slots(
    held: type[Held],
) -> None:
    budget = ThinkingBudget(ThinkingLimits(max_searches=2, max_searches_per_client=2))
    players: list[ServedPlayer] = [budget.make("held", f"10.0.0.{n}") for n in range(5)]
    threads = [
        threading.Thread(target=p.choose_move, args=(START, LEGAL), daemon=True) for p in players
    ]
    for thread in threads:
        thread.start()
    asyncio.run(until_thinking(held, 2))
    time.sleep(0.2)  # room for a third one to start, were the limit not kept
    assert held.thinking == 2
    held.release.set()
    for thread in threads:
        thread.join(GUARD)
    assert held.most == 2
    budget.close()


# -- the clock ------------------------------------------------------------------------------------


def test_a_stopped_server_does_not_make_a_player_lose_on_time() -> None:
    """The whole process stops (here: the loop and the player's thread block) for longer than
    the player's timeout; the player answers just after it resumes: it is not late."""
    stopped = STALL_SECONDS + 2.5

    async def scenario() -> str:
        loop = asyncio.get_running_loop()
        thinking: asyncio.Future[chess.Move] = loop.create_future()

        def answer_after_the_stop() -> None:
            time.sleep(stopped + 0.1)
            loop.call_soon_threadsafe(thinking.set_result, LEGAL[0])

        def stop_the_process() -> None:
            threading.Thread(target=answer_after_the_stop, daemon=True).start()
            time.sleep(stopped)  # nothing on this loop runs meanwhile

        loop.call_later(0.05, stop_the_process)
        move, _ = await running_clock(thinking, 2.0)
        return move.uci()

    assert asyncio.run(scenario()) == LEGAL[0].uci()


def test_a_player_thinking_past_its_time_while_the_server_runs_loses() -> None:
    async def scenario() -> None:
        never: asyncio.Future[chess.Move] = asyncio.get_running_loop().create_future()
        await running_clock(never, 0.3)

    with pytest.raises(TimeoutError, match=r"after 0\.3 s"):
        asyncio.run(scenario())


def test_a_jump_of_the_clock_counts_as_one_slice_and_the_stall_grace_at_most() -> None:
    looks: list[float] = []

    def clock() -> float:
        looks.append(35.0 * (len(looks) + 1))  # 35 s pass between any two looks (kill -STOP)
        return looks[-1]

    async def scenario() -> None:
        never: asyncio.Future[chess.Move] = asyncio.get_running_loop().create_future()
        await running_clock(never, 2 * (0.5 + STALL_SECONDS), clock=clock)

    with pytest.raises(TimeoutError):
        asyncio.run(scenario())
    assert len(looks) == 4  # two slices of 0.5 s + the grace each, not one slice of 35 s


# -- Stockfish that cannot start ------------------------------------------------------------------


def test_stockfish_that_cannot_start_is_its_sides_loss_not_an_error(fake_stockfish: Path) -> None:
    budget = ThinkingBudget()
    player = budget.make("stockfish:1", "10.0.0.1")
    with pytest.raises(PlayerFailedError, match="Stockfish could not start"):
        player.choose_move(START, LEGAL)
    player.close()
    assert budget.engines_in_use() == 0
    budget.close()
