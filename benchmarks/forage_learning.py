"""PPO learns to forage under partial observability, and beats a random forager: by how much.

Forager_1 of the built-in ``forage`` world learns through the package's own training path,
``training.ppo.run_ppo`` on ``world:forage`` (``SingleAgentEnv`` over the world with its
``ObservabilityWrapper``, flattened by ``FlattenForSB3``; the other two foragers act randomly,
seeded by each reset). It sees its own cell exactly but the food's cell and the others' cells with
noise. The hyperparameters are the ones that learned: 4 envs, ``n_steps=256``, ``batch_size=256``,
``learning_rate=1e-3``, ``ent_coef=0.01`` and SB3's ``n_epochs=10``.

Then the trained policy (greedy) and a uniformly random one play the same ``--episodes`` seeded
episodes (200 turns each). The table gives, per policy, the mean return and the mean food
collected with 95% intervals, and the difference PPO - random. scipy is not installed here, so the
intervals are percentile bootstraps (10,000 resamples, a numpy Generator seeded from ``--seed``);
the difference is a paired bootstrap, since both policies play the same seeds: each resample draws
episodes and keeps each episode's pair together. Run:
``python -m benchmarks.forage_learning [--timesteps N] [--episodes N] [--seed S]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.machine import machine_line
from training.config import PPOConfig
from training.dto import PPOTrainingResult
from training.envs import env_factory
from training.ppo import ppo_config, run_ppo

__all__ = ["Outcome", "bootstrap_interval", "evaluate", "main", "train"]

WORLD = "world:forage"
LEARNER = "Forager_1"
FIRST_EVALUATION_SEED = 1000  # far from the training envs' seeds (seed, seed + 1, ...)
RESAMPLES = 10_000
CONFIDENCE = 0.95
FOOD_REWARD = 0.5  # a step's reward above this means the forager ate

Policy = Callable[[Any, gym.Env], Any]
Outcome = tuple[np.ndarray, np.ndarray]  # per-episode returns, per-episode food collected


def train_config(timesteps: int, seed: int, vec_env: str) -> PPOConfig:
    """The config that learned; SB3's n_epochs=10 is set because PPOConfig's default is 4."""
    return ppo_config(
        WORLD,
        total_timesteps=timesteps,
        n_envs=4,
        seed=seed,
        learner=LEARNER,
        vec_env=vec_env,
        n_steps=256,
        batch_size=256,
        n_epochs=10,
        learning_rate=1e-3,
        ent_coef=0.01,
        eval_games=0,
        progress_bar=True,
        out_dir=None,  # the benchmark keeps the model in memory
    )


def train(timesteps: int, seed: int, vec_env: str) -> tuple[Any, PPOTrainingResult]:
    """The trained model and the run's result (wall time and steps/s of ``learn()``)."""
    run = run_ppo(train_config(timesteps, seed, vec_env))
    return run.model, run.result


def evaluate(choose: Policy, episodes: int) -> Outcome:
    """Return and food of each seeded evaluation episode; seed i is the same for every policy."""
    make = env_factory(WORLD, learner=LEARNER)
    returns, food = np.zeros(episodes), np.zeros(episodes)
    for index in range(episodes):
        seed = FIRST_EVALUATION_SEED + index
        env = make()
        observation, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        done = False
        while not done:
            observation, reward, terminated, truncated, _ = env.step(choose(observation, env))
            returns[index] += reward
            food[index] += reward > FOOD_REWARD
            done = terminated or truncated
        env.close()
    return returns, food


def bootstrap_interval(values: np.ndarray, resamples: np.ndarray) -> tuple[float, float]:
    """Percentile interval of the mean; ``resamples`` holds episode indices, one row a resample.

    Passing the same rows for PPO - random as for each policy keeps every episode's pair together.
    """
    means = values[resamples].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def cell(values: np.ndarray, resamples: np.ndarray, digits: int) -> str:
    low, high = bootstrap_interval(values, resamples)
    return f"{values.mean():.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def print_table(ppo: Outcome, random: Outcome, result: PPOTrainingResult, seed: int) -> None:
    episodes = len(ppo[0])
    resamples = np.random.default_rng(seed).integers(episodes, size=(RESAMPLES, episodes))
    rows = {
        "random": random,
        f"PPO ({result.total_timesteps:,} steps, greedy)": ppo,
        "PPO - random (paired)": (ppo[0] - random[0], ppo[1] - random[1]),
    }
    print(machine_line("torch", "stable-baselines3", "numpy"))
    print(
        f"Training: {result.algorithm}, {result.total_timesteps:,} steps in "
        f"{result.duration_sec:.0f} s ({result.steps_per_sec:.0f} steps/s), "
        f"{result.config.n_envs} envs ({result.config.vec_env}), seed {seed}"
    )
    print()
    print(
        f"| Forager_1, {episodes} seeded episodes of 200 turns | mean return [95% CI] "
        "| food collected [95% CI] |"
    )
    print("|---|---:|---:|")
    for name, (returns, food) in rows.items():
        print(f"| {name} | {cell(returns, resamples, 2)} | {cell(food, resamples, 1)} |")
    print()
    print(
        f"Intervals: percentile bootstrap of the mean, {RESAMPLES:,} resamples of the episodes "
        f"(numpy Generator seeded {seed}); the difference resamples each episode's pair together."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=60_000, help="PPO training timesteps")
    parser.add_argument("--episodes", type=int, default=50, help="seeded evaluation episodes")
    parser.add_argument("--seed", type=int, default=0, help="training and bootstrap seed")
    parser.add_argument(
        "--vec-env",
        choices=("dummy", "subproc"),
        default="dummy",
        help="dummy: the 4 tiny envs step in-process, cheaper than 4 subprocesses on few cores",
    )
    args = parser.parse_args(argv)
    model, result = train(args.timesteps, args.seed, args.vec_env)
    ppo = evaluate(
        lambda observation, env: np.asarray(model.predict(observation, deterministic=True)[0]),
        args.episodes,
    )
    random = evaluate(lambda observation, env: env.action_space.sample(), args.episodes)
    print_table(ppo, random, result, args.seed)


if __name__ == "__main__":
    main()
