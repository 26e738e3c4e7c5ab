"""Steps per second of N chess games at once: ``SyncVectorEnv`` over ``ChessEnv`` against
``ChessVectorEnv``, the native vector env of ``chess_env/Chess-v0``.

Two contenders, each made the way a user makes it:

- ``sync``: ``gym.make_vec("chess_env/Chess-v0", num_envs=N, vectorization_mode="sync")``, N
  ``ChessEnv`` (with ``gym.make``'s checker and order wrappers) in a ``SyncVectorEnv``;
- ``native``: the same call with ``vectorization_mode="vector_entry_point"``.

Both play every game against the random opponent with uniformly random legal actions drawn from
the batched ``info["action_mask"]`` (one vectorised draw per step, the same for both), with
next-step autoreset, so whole games, their ends and resets are timed. A step of N games counts N
steps. Environments are built and reset outside the clock. A round measures every (N, contender)
pair for ``--seconds`` each, the contenders' order alternating from round to round; we report the
median over ``--rounds`` and the ratio of the medians. Interleaving spreads the drift of a shared
machine over all pairs; the load average is printed before and after, and ``--clock cpu`` counts
this process's CPU time instead of the wall clock's, for a machine that other work keeps busy.
The target, native/sync >= 1.5 at N = 16, is reported, not enforced: the exit status is 0 either
way.

``--floor`` adds a third contender, the python-chess calls no step of these games can skip: the
same plies (recorded from a native run of the same seed, outside the clock) replayed on bare
boards, each ply a ``push``, one legal-move generation and the repetition key, as ``ChessGame``
plays it. sync / floor is the ratio a native env would reach if everything else it does (the
opponent's draw, the episode bookkeeping, observations, masks, infos) were free.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass

import chess
import gymnasium as gym
import numpy as np
from tqdm import tqdm

import chess_env  # noqa: F401 -- registers chess_env/Chess-v0 and its vector entry point
from benchmarks.machine import CLOCKS, add_clock_argument, load_line, machine_line

ENV_ID = "chess_env/Chess-v0"
MODES = {"sync": "sync", "native": "vector_entry_point"}
TARGET_SIZE, TARGET_RATIO = 16, 1.5
FLOOR_STEPS = 300  # steps recorded for the floor, replayed as often as a measurement needs


def random_legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of an (N, 4672) 0/1 mask; 0 for a row with none
    (a game that just ended: next-step autoreset ignores its action)."""
    n, width = masks.shape
    edges = np.arange(n + 1) * width
    legal = np.flatnonzero(masks.view(np.bool_))  # int8 0/1 viewed as bool: the fast nonzero
    bounds = legal.searchsorted(edges)
    starts, counts = bounds[:-1], bounds[1:] - bounds[:-1]
    picks = starts + (rng.random(n) * counts).astype(np.intp)
    if counts.all():
        return legal[picks] - edges[:-1]
    if not len(legal):
        return np.zeros(n, dtype=np.intp)
    return np.where(counts > 0, legal[np.minimum(picks, len(legal) - 1)] - edges[:-1], 0)


def measure(mode: str, num_envs: int, seed: int, seconds: float, clock: str = "wall") -> float:
    """Steps per second (N per vector step) over at least ``seconds`` of random legal play."""
    timer = CLOCKS[clock]
    envs = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=MODES[mode])
    rng = np.random.default_rng(seed)
    _, info = envs.reset(seed=seed)
    steps, start = 0, timer()
    while (elapsed := timer() - start) < seconds:
        _, _, _, _, info = envs.step(random_legal_actions(info["action_mask"], rng))
        steps += num_envs
    envs.close()
    return steps / elapsed


@dataclass
class Plies:
    """What ``num_envs`` games played over some steps: the boards they started from, and per step
    the plies of each game that moved (a new start position when the game was reset)."""

    num_envs: int
    starts: list[chess.Board]
    steps: list[list[tuple[int, chess.Board | None, list[chess.Move]]]]


def record_plies(num_envs: int, seed: int, steps: int) -> Plies:
    """The plies of ``steps`` native steps with ``measure``'s actions (not timed)."""
    envs = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=MODES["native"])
    rng = np.random.default_rng(seed)
    _, info = envs.reset(seed=seed)
    games = [env.game for env in envs.envs]
    played = [len(game.board.move_stack) for game in games]
    starts = [game.board.copy() for game in games]
    recorded = []
    for _ in range(steps):
        _, _, _, _, info = envs.step(random_legal_actions(info["action_mask"], rng))
        step: list[tuple[int, chess.Board | None, list[chess.Move]]] = []
        for index, env in enumerate(envs.envs):
            game, start = env.game, None
            if game is not games[index]:  # reset: a new game from its root position
                games[index], played[index], start = game, 0, game.board.root()
            moves = game.board.move_stack[played[index] :]
            played[index] += len(moves)
            step.append((index, start, moves))
        recorded.append(step)
    envs.close()
    return Plies(num_envs, starts, recorded)


def measure_floor(plies: Plies, seconds: float, clock: str = "wall") -> float:
    """Game-steps per second of the recorded plies as bare python-chess calls (replayed from the
    start as often as ``seconds`` needs)."""
    timer = CLOCKS[clock]
    steps, elapsed = 0, 0.0
    while elapsed < seconds:
        boards = [start.copy() for start in plies.starts]
        start = timer()
        for step in plies.steps:
            for index, root, moves in step:
                board = boards[index]
                if root is not None:
                    board = boards[index] = root.copy()
                    list(board.generate_legal_moves())
                for move in moves:
                    board.push(move)
                    list(board.generate_legal_moves())
                    board._transposition_key()  # what ChessGame counts repetitions by
        elapsed += timer() - start
        steps += plies.num_envs * len(plies.steps)
    return steps / elapsed


def run_rounds(
    sizes: list[int], rounds: int, seconds: float, clock: str = "wall", floor: bool = False
) -> dict[tuple[int, str], list[float]]:
    contenders = [*MODES, "floor"] if floor else list(MODES)
    rates: dict[tuple[int, str], list[float]] = {(n, m): [] for n in sizes for m in contenders}
    progress = tqdm(range(rounds), desc="rounds", unit="round", file=sys.stderr)
    for seed in progress:
        order = contenders if seed % 2 == 0 else list(reversed(contenders))
        for num_envs in sizes:
            plies = record_plies(num_envs, seed, FLOOR_STEPS) if floor else None
            for mode in order:
                progress.set_postfix_str(f"N={num_envs} {mode}")
                if mode == "floor":
                    assert plies is not None
                    rate = measure_floor(plies, seconds, clock)
                else:
                    rate = measure(mode, num_envs, seed, seconds, clock)
                rates[num_envs, mode].append(rate)
    return rates


def table(rates: dict[tuple[int, str], list[float]], sizes: list[int]) -> list[str]:
    floor = (sizes[0], "floor") in rates
    lines = [
        "| N | sync steps/s (median) | native steps/s (median) | native / sync "
        "| per-round ratios (min-max) |"
        + (" floor steps/s (median) | floor / sync |" if floor else ""),
        "|---:|---:|---:|---:|---:|" + ("---:|---:|" if floor else ""),
    ]
    for n in sizes:
        sync, native = rates[n, "sync"], rates[n, "native"]
        per_round = [b / a for a, b in zip(sync, native, strict=True)]
        line = (
            f"| {n} | {statistics.median(sync):,.0f} | {statistics.median(native):,.0f} "
            f"| {statistics.median(native) / statistics.median(sync):.2f}x "
            f"| {min(per_round):.2f}-{max(per_round):.2f} |"
        )
        if floor:
            bare = statistics.median(rates[n, "floor"])
            line += f" {bare:,.0f} | {bare / statistics.median(sync):.2f}x |"
        lines.append(line)
    return lines


def verdict(rates: dict[tuple[int, str], list[float]]) -> str | None:
    if (TARGET_SIZE, "sync") not in rates:
        return None
    ratio = statistics.median(rates[TARGET_SIZE, "native"]) / statistics.median(
        rates[TARGET_SIZE, "sync"]
    )
    passed = "PASS" if ratio >= TARGET_RATIO else "below target"
    return f"native/sync at N={TARGET_SIZE} = {ratio:.2f}  (target >= {TARGET_RATIO:g}): {passed}"


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        sizes = []
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError(f"--sizes takes positive integers (1,16), got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--seconds", type=float, default=1.0, help="least seconds per pair")
    parser.add_argument(
        "--sizes", type=parse_sizes, default=[1, 4, 16, 64], help="numbers of games N, e.g. 1,16"
    )
    parser.add_argument(
        "--floor", action="store_true", help="also time the python-chess calls alone (see above)"
    )
    add_clock_argument(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be at least 1 and --seconds positive")
    before = load_line()
    rates = run_rounds(args.sizes, args.rounds, args.seconds, args.clock, args.floor)
    print(machine_line("gymnasium", "chess", "numpy"))
    print(f"Clock: {args.clock}. Before: {before}; after: {load_line()}")
    print()
    print("\n".join(table(rates, args.sizes)))
    if line := verdict(rates):
        print()
        print(line)


if __name__ == "__main__":
    main()
