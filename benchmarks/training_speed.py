"""Training throughput on chess: MaskablePPO steps/s, BC samples/s, expert labels/s.

- PPO: ``train_ppo`` on ``chess_env/Chess-v0`` (random opponent, ``n_steps=256``,
  ``batch_size=256``, ``n_epochs=4``, the chess CNN, no evaluation) with one env, two envs in
  this process and two in subprocesses; the score is the result's ``steps_per_sec``
  (timesteps / wall time of ``learn()``).
- BC: one epoch of ``train_bc`` over a labelled dataset with one and two torch threads; samples
  per wall second, and per CPU-second (the unit of the training budget).
- Labels: ``generate_chess_dataset`` with each expert (Stockfish at depths 1 and 5 when it is
  installed, the built-in alpha-beta at depth 2) in one and two worker processes; positions per
  wall second and per CPU-second (the workers and their engines included).

A round runs every contender once, in turn, with the round's seed; the tables show the median
over ``--rounds``. Run: ``python -m benchmarks.training_speed [--rounds R] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.machine import machine_line
from chess_env.core.opponents import StockfishNotFoundError, find_stockfish
from training.annealing import cpu_seconds
from training.bc import train_bc
from training.config import BCConfig
from training.datasets import BCDataset, generate_chess_dataset
from training.ppo import train_ppo

PPO_CONTENDERS = {  # name -> (n_envs, vec_env)
    "1 env (DummyVecEnv)": (1, "dummy"),
    "2 envs (DummyVecEnv)": (2, "dummy"),
    "2 envs (SubprocVecEnv)": (2, "subproc"),
}


@dataclass(frozen=True)
class Rate:
    """Units per wall second and per CPU-second (this process and its waited-for children)."""

    wall: float
    cpu: float


def timed(work: Callable[[], float]) -> Rate:
    """The rates of ``work()``, which returns how many units it did."""
    start, cpu = time.perf_counter(), cpu_seconds()
    units = work()
    wall, spent = time.perf_counter() - start, cpu_seconds() - cpu
    return Rate(units / wall, units / spent)


def ppo_rate(n_envs: int, vec_env: str, timesteps: int, seed: int) -> float:
    result = train_ppo(
        "chess_env/Chess-v0",
        total_timesteps=timesteps,
        n_envs=n_envs,
        seed=seed,
        vec_env=vec_env,
        eval_games=0,
        progress_bar=False,
        out_dir=None,  # a rate, not a run to keep
    )
    return result.steps_per_sec


def bc_rate(dataset: BCDataset, threads: int, seed: int) -> Rate:
    config = BCConfig(
        epochs=1, threads=threads, seed=seed, eval_games=0, progress_bar=False, out_dir=None
    )
    return timed(lambda: float(train_bc(config, dataset=dataset).dataset.positions))


def label_rate(expert: str, positions: int, workers: int, seed: int) -> Rate:
    return timed(
        lambda: float(
            generate_chess_dataset(
                expert, positions, seed, progress_bar=False, workers=workers
            ).manifest.positions
        )
    )


def experts() -> list[str]:
    try:
        find_stockfish()
    except StockfishNotFoundError:
        return ["alphabeta:2"]
    return ["stockfish:1", "stockfish:5", "alphabeta:2"]


def median_rate(rates: list[Rate]) -> Rate:
    return Rate(statistics.median(r.wall for r in rates), statistics.median(r.cpu for r in rates))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per contender")
    parser.add_argument("--quick", action="store_true", help="tiny budgets, for a smoke run")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    timesteps, bc_positions, label_positions = (512, 512, 64) if args.quick else (2048, 8192, 4000)
    ppo: dict[str, list[float]] = {name: [] for name in PPO_CONTENDERS}
    bc: dict[int, list[Rate]] = {1: [], 2: []}
    labels: dict[tuple[str, int], list[Rate]] = {}
    names = experts()
    dataset = generate_chess_dataset(names[0], bc_positions, seed=0, progress_bar=False)
    for seed in range(args.rounds):
        for name, (n_envs, vec_env) in PPO_CONTENDERS.items():
            ppo[name].append(ppo_rate(n_envs, vec_env, timesteps, seed))
        for threads in bc:
            bc[threads].append(bc_rate(dataset, threads, seed))
        for expert in names:
            for workers in (1, 2):
                rate = label_rate(expert, label_positions, workers, seed + 1)
                labels.setdefault((expert, workers), []).append(rate)
    print(machine_line("torch", "stable-baselines3", "sb3-contrib", "chess"))
    print()
    baseline = statistics.median(ppo["1 env (DummyVecEnv)"])
    print("| MaskablePPO on chess | steps/s (median) | vs 1 env | runs |")
    print("|---|---:|---:|---|")
    for name, values in ppo.items():
        median = statistics.median(values)
        runs = ", ".join(f"{value:.0f}" for value in values)
        print(f"| {name} | {median:,.0f} | {median / baseline:.2f}x | {runs} |")
    print()
    print(f"| BC, one epoch of {bc_positions:,} positions, batch 256 | samples/s | per CPU-s |")
    print("|---|---:|---:|")
    for threads, rates in bc.items():
        rate = median_rate(rates)
        print(f"| {threads} torch thread{'s' if threads > 1 else ''} | {rate.wall:,.0f} "
              f"| {rate.cpu:,.0f} |")  # fmt: skip
    print()
    print(f"| expert labels ({label_positions:,} positions) | positions/s | per CPU-s |")
    print("|---|---:|---:|")
    for (expert, workers), rates in labels.items():
        rate = median_rate(rates)
        plural = "s" if workers > 1 else ""
        print(f"| {expert}, {workers} worker{plural} | {rate.wall:,.0f} | {rate.cpu:,.0f} |")


if __name__ == "__main__":
    main()
