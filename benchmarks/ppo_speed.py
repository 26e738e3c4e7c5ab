"""MaskablePPO steps per second on chess: one env against two, in-process and in subprocesses.

Each contender is a ``train_ppo`` run on ``chess_env/Chess-v0`` (random opponent, the default
hyperparameters: ``n_steps=256``, ``batch_size=256``, ``n_epochs=4``, the chess CNN) with no
evaluation; its score is the result's ``steps_per_sec`` (timesteps / wall time of ``learn()``:
rollouts and updates, not the start of the subprocesses). A round runs every contender once, in
turn, with the round's seed; the table shows the median over ``--rounds`` and the ratio to one env.
Run: ``python -m benchmarks.ppo_speed [--timesteps N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.machine import machine_line
from training.ppo import train_ppo

CONTENDERS = {  # name -> (n_envs, vec_env)
    "1 env (DummyVecEnv)": (1, "dummy"),
    "2 envs (DummyVecEnv)": (2, "dummy"),
    "2 envs (SubprocVecEnv)": (2, "subproc"),
}
BASELINE = "1 env (DummyVecEnv)"


def steps_per_sec(n_envs: int, vec_env: str, timesteps: int, seed: int) -> float:
    result = train_ppo(
        "chess_env/Chess-v0",
        total_timesteps=timesteps,
        n_envs=n_envs,
        seed=seed,
        vec_env=vec_env,
        eval_games=0,
        progress_bar=False,
    )
    return result.steps_per_sec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=2048, help="timesteps per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per contender")
    args = parser.parse_args()
    speeds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for seed in range(args.rounds):
        for name, (n_envs, vec_env) in CONTENDERS.items():
            speeds[name].append(steps_per_sec(n_envs, vec_env, args.timesteps, seed))
    print(machine_line("torch", "stable-baselines3", "sb3-contrib"))
    baseline = statistics.median(speeds[BASELINE])
    print(f"{'contender':<24} {'steps/s (median)':>17} {'vs 1 env':>9}  runs")
    for name, values in speeds.items():
        median = statistics.median(values)
        runs = ", ".join(f"{value:.0f}" for value in values)
        print(f"{name:<24} {median:>17.0f} {median / baseline:>8.2f}x  {runs}")


if __name__ == "__main__":
    main()
