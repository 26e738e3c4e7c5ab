"""Plies per second of full random games: polyarena's chess against python-chess and PettingZoo.

Six contenders play complete games of uniformly random legal moves in one process:

- (a) ``python-chess ceiling``: ``board.push(random.choice(list(board.legal_moves)))`` and
  ``board.is_game_over()`` each ply, nothing else -- what any env built on python-chess pays.
- (b) ``polyarena ChessGame core``: the rules core with an observation and a fresh action mask each
  ply, the work an env must do at the least.
- (c) ``PettingZoo chess_v6 (AEC)`` and (d) ``polyarena aec_env() (AEC)``: the same AEC loop
  (``agent_iter``, ``last``, ``step``, a random legal action read off the observation's int8
  mask) on each env, apples to apples.
- (e) ``polyarena ChessEnv.step vs random opponent``: the Gymnasium env; a step is two plies when
  the opponent replied, and its ``info`` (FEN, legal moves, mask) is built every step.
- (f) ``polyarena ChessAECEnv in PettingZoo's wrappers (AEC)``: (d)'s env inside PettingZoo's own
  ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(TerminateIllegalWrapper(...)))``, the stack
  that ``aec_env()``'s ``ClassicWrapper`` replaces with the same behaviour in one layer.

Each contender plays whole games until ``--seconds`` have passed and scores plies / elapsed. A
round runs every contender once, in turn, all seeded with the round's seed (the same game mixes
on every run); we report the median over ``--rounds``. Interleaving spreads drift of the machine
(frequency scaling, noisy neighbours) over all contenders instead of landing on one, and the
median ignores a round that a hiccup spoiled. The load average is printed before and after;
``--clock cpu`` counts this process's CPU time instead of the wall clock's, for a machine that
other work keeps busy (the ratios then compare CPU cost per ply). The targets, (b)/(a) >= 0.7,
(b)/(c) >= 15, (d)/(a) >= 0.6 and (e)/(a) >= 0.8, are reported, not enforced: the exit status is
0 either way.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable

import chess
import numpy as np
from pettingzoo import AECEnv
from pettingzoo.classic import chess_v6
from pettingzoo.utils import wrappers
from tqdm import tqdm

from benchmarks.machine import CLOCKS, add_clock_argument, load_line, machine_line
from chess_env import ChessEnv, ChessGame, aec_env
from chess_env.core.aec import ChessAECEnv

# A contender: the round's seed -> a function that plays one full game and returns its plies.
# Setting up (envs, generators) happens outside the clock; each game is timed whole.
GameFactory = Callable[[int], Callable[[], int]]

CEILING, PEER = "a", "c"
TARGETS = (
    ("b", "a", 0.7),
    ("b", "c", 15.0),
    ("d", "a", 0.6),
    ("e", "a", 0.8),
    ("d", "c", None),
    ("d", "f", None),
)


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    """A uniformly random legal action index from an action mask."""
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(len(legal))])


def python_chess_games(seed: int) -> Callable[[], int]:
    rng = random.Random(seed)

    def play() -> int:
        board = chess.Board()
        while not board.is_game_over():
            board.push(rng.choice(list(board.legal_moves)))
        return board.ply()

    return play


def chess_game_core_games(seed: int) -> Callable[[], int]:
    rng = np.random.default_rng(seed)

    def play() -> int:
        game = ChessGame()
        while True:
            game.observation()  # what an agent reads each ply, terminal position included
            mask = game.action_mask()
            if game.is_over:
                return game.plies
            game.play_action(random_legal(mask, rng))

    return play


def aec_games(env: AECEnv, seed: int) -> Callable[[], int]:
    rng = np.random.default_rng(seed)
    seeds = iter([seed])  # the first game of the round is seeded; later ones continue from it

    def play() -> int:
        env.reset(seed=next(seeds, None))
        plies = 0
        for _agent in env.agent_iter():
            observation, _reward, termination, truncation, _info = env.last()
            if termination or truncation:
                break
            env.step(random_legal(observation["action_mask"], rng))
            plies += 1
        return plies

    return play


def pettingzoo_wrapped() -> AECEnv:
    """``ChessAECEnv`` in PettingZoo's classic wrappers, as ``chess_v6.env()`` wraps its env."""
    env: AECEnv = ChessAECEnv()
    env = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


def chess_env_games(seed: int) -> Callable[[], int]:
    rng = np.random.default_rng(seed)
    env = ChessEnv(opponent="random")
    seeds = iter([seed])

    def play() -> int:
        env.reset(seed=next(seeds, None))
        plies = 0
        while True:
            action = random_legal(env.action_masks(), rng)
            _obs, _reward, terminated, truncated, info = env.step(action)
            plies += 1 if info["opponent_move"] is None else 2
            if terminated or truncated:
                return plies

    return play


CONTENDERS: dict[str, tuple[str, GameFactory]] = {
    "a": ("python-chess ceiling", python_chess_games),
    "b": ("polyarena ChessGame core", chess_game_core_games),
    "c": ("PettingZoo chess_v6 (AEC)", lambda seed: aec_games(chess_v6.env(), seed)),
    "d": ("polyarena aec_env() (AEC)", lambda seed: aec_games(aec_env(), seed)),
    "e": ("polyarena ChessEnv.step vs random opponent", chess_env_games),
    "f": (
        "polyarena ChessAECEnv in PettingZoo's wrappers (AEC)",
        lambda seed: aec_games(pettingzoo_wrapped(), seed),
    ),
}


def measure(factory: GameFactory, seed: int, seconds: float, clock: str = "wall") -> float:
    """Plies per second over whole games played until at least ``seconds`` have passed."""
    timer = CLOCKS[clock]
    play = factory(seed)
    plies, start = 0, timer()
    while (elapsed := timer() - start) < seconds:
        plies += play()
    return plies / elapsed


def run_rounds(
    keys: list[str], rounds: int, seconds: float, clock: str = "wall"
) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {key: [] for key in keys}
    progress = tqdm(range(rounds), desc="rounds", unit="round", file=sys.stderr)
    for seed in progress:
        for key in keys:
            progress.set_postfix_str(f"({key}) {CONTENDERS[key][0]}")
            rates[key].append(measure(CONTENDERS[key][1], seed, seconds, clock))
    return rates


def ratio(medians: dict[str, float], key: str, base: str) -> str:
    return f"{medians[key] / medians[base]:.2f}x" if base in medians else "n/a"


def table(rates: dict[str, list[float]]) -> list[str]:
    medians = {key: statistics.median(values) for key, values in rates.items()}
    lines = [
        "| contender | plies/s (median) | min | max | vs python-chess ceiling "
        "| vs PettingZoo chess_v6 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, values in rates.items():
        lines.append(
            f"| ({key}) {CONTENDERS[key][0]} | {medians[key]:,.0f} | {min(values):,.0f} "
            f"| {max(values):,.0f} | {ratio(medians, key, CEILING)} | {ratio(medians, key, PEER)} |"
        )
    return lines


def verdicts(rates: dict[str, list[float]]) -> list[str]:
    """The key ratios of medians, each against its target when it has one."""
    lines = []
    for key, base, target in TARGETS:
        if key not in rates or base not in rates:
            continue
        value = statistics.median(rates[key]) / statistics.median(rates[base])
        line = f"({key})/({base}) = {value:.2f}"
        if target is not None:
            line += f"  (target >= {target:g}): {'PASS' if value >= target else 'below target'}"
        lines.append(line)
    return lines


def parse_keys(only: str) -> list[str]:
    keys = [key.strip() for key in only.split(",") if key.strip()]
    unknown = [key for key in keys if key not in CONTENDERS]
    if unknown or not keys:
        raise argparse.ArgumentTypeError(
            f"--only takes a comma list of {', '.join(CONTENDERS)}, got {only!r}"
        )
    return sorted(set(keys), key=list(CONTENDERS).index)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--seconds", type=float, default=1.5, help="least seconds per contender")
    parser.add_argument(
        "--only", type=parse_keys, default=list(CONTENDERS), help="contenders, e.g. a,b,c"
    )
    add_clock_argument(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be at least 1 and --seconds positive")
    before = load_line()
    rates = run_rounds(args.only, args.rounds, args.seconds, args.clock)
    print(machine_line("chess", "pettingzoo"))
    print(f"Clock: {args.clock}. Before: {before}; after: {load_line()}")
    print()
    print("\n".join(table(rates)))
    if lines := verdicts(rates):
        print()
        print("\n".join(lines))


if __name__ == "__main__":
    main()
