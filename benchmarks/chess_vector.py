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
"""

from __future__ import annotations

import argparse
import statistics
import sys

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import chess_env  # noqa: F401 -- registers chess_env/Chess-v0 and its vector entry point
from benchmarks.machine import CLOCKS, add_clock_argument, load_line, machine_line

ENV_ID = "chess_env/Chess-v0"
MODES = {"sync": "sync", "native": "vector_entry_point"}
TARGET_SIZE, TARGET_RATIO = 16, 1.5


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


def run_rounds(
    sizes: list[int], rounds: int, seconds: float, clock: str = "wall"
) -> dict[tuple[int, str], list[float]]:
    rates: dict[tuple[int, str], list[float]] = {(n, m): [] for n in sizes for m in MODES}
    progress = tqdm(range(rounds), desc="rounds", unit="round", file=sys.stderr)
    for seed in progress:
        order = list(MODES) if seed % 2 == 0 else list(reversed(MODES))
        for num_envs in sizes:
            for mode in order:
                progress.set_postfix_str(f"N={num_envs} {mode}")
                rates[num_envs, mode].append(measure(mode, num_envs, seed, seconds, clock))
    return rates


def table(rates: dict[tuple[int, str], list[float]], sizes: list[int]) -> list[str]:
    lines = [
        "| N | sync steps/s (median) | native steps/s (median) | native / sync "
        "| per-round ratios (min-max) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        sync, native = rates[n, "sync"], rates[n, "native"]
        per_round = [b / a for a, b in zip(sync, native, strict=True)]
        lines.append(
            f"| {n} | {statistics.median(sync):,.0f} | {statistics.median(native):,.0f} "
            f"| {statistics.median(native) / statistics.median(sync):.2f}x "
            f"| {min(per_round):.2f}-{max(per_round):.2f} |"
        )
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
    add_clock_argument(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be at least 1 and --seconds positive")
    before = load_line()
    rates = run_rounds(args.sizes, args.rounds, args.seconds, args.clock)
    print(machine_line("gymnasium", "chess", "numpy"))
    print(f"Clock: {args.clock}. Before: {before}; after: {load_line()}")
    print()
    print("\n".join(table(rates, args.sizes)))
    if line := verdict(rates):
        print()
        print(line)


if __name__ == "__main__":
    main()
