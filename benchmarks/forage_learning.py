"""PPO learns to forage under partial observability, and beats a random forager.

Forager_1 of the built-in ``forage`` world learns with Stable-Baselines3 PPO through
``SingleAgentEnv(ObservabilityWrapper(parallel_env("forage")), "Forager_1")`` and
``FlattenForSB3``; the other two foragers act randomly. It sees its own cell exactly but the food's
cell and the others' cells with noise. Both the trained policy and a uniformly random one play
the same seeded evaluation episodes (200 turns each); the script prints their mean returns and
food collected. Run: ``python -m benchmarks.forage_learning [--timesteps N]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from multiagent import parallel_env
from multiagent.wrappers import FlattenForSB3, ObservabilityWrapper, SingleAgentEnv

LEARNER = "Forager_1"
EVALUATION_SEEDS = range(1000, 1020)


def make_env() -> FlattenForSB3:
    return FlattenForSB3(SingleAgentEnv(ObservabilityWrapper(parallel_env("forage")), LEARNER))


def evaluate(choose: Callable[[Any, FlattenForSB3], Any]) -> tuple[float, float]:
    """Mean return and mean food collected over the evaluation seeds."""
    returns, food = [], []
    for seed in EVALUATION_SEEDS:
        env = make_env()
        observation, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        total, collected, done = 0.0, 0, False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(choose(observation, env))
            total += reward
            collected += reward > 0.5
            done = terminated or truncated
        returns.append(total)
        food.append(collected)
    return statistics.mean(returns), statistics.mean(food)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timesteps", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    random_return, random_food = evaluate(lambda observation, env: env.action_space.sample())
    model = PPO(
        "MultiInputPolicy",
        make_vec_env(make_env, n_envs=4, seed=args.seed),
        n_steps=256,
        batch_size=256,
        learning_rate=1e-3,
        ent_coef=0.01,
        seed=args.seed,
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(args.timesteps, progress_bar=True)
    seconds = time.perf_counter() - start
    ppo_return, ppo_food = evaluate(
        lambda observation, env: np.asarray(model.predict(observation, deterministic=True)[0])
    )
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}; "
          f"PPO {args.timesteps:,} steps in {seconds:.0f} s")  # fmt: skip
    print()
    print("| policy (Forager_1, 20 seeded episodes of 200 turns) | mean return | food collected |")
    print("|---|---:|---:|")
    print(f"| random | {random_return:.2f} | {random_food:.1f} |")
    print(f"| PPO ({args.timesteps:,} steps) | {ppo_return:.2f} | {ppo_food:.1f} |")


if __name__ == "__main__":
    main()
