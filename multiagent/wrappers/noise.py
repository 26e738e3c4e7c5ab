"""``NoiseWrapper``: observation noise alone, for the world envs and any Gymnasium env.

It works on observation *elements* of any space, so it composes with everything:
- binary values (``MultiBinary``, integer ``Box`` with bounds 0..1, e.g. the chess tensor) flip
  with probability ``noise``;
- other ``Box`` values become ``v * (1 + e)`` with ``e ~ U(-noise, noise)`` (or
  ``N(0, noise)`` with ``distribution="gaussian"``), rounded for integer dtypes, clipped to the
  bounds, in the space's dtype;
- ``Discrete`` / ``MultiDiscrete`` values are replaced by another value with probability
  ``noise``; ``Dict``, ``Tuple`` and ``Sequence`` are walked; ``Text`` is unchanged.
Noise comes from a generator seeded by ``reset(seed=...)`` (continued across unseeded resets).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils import BaseParallelWrapper

__all__ = ["GymNoiseWrapper", "NoiseWrapper", "ParallelNoiseWrapper", "noisy_element"]


def noisy_element(
    space: spaces.Space[Any],
    element: Any,
    noise: float,
    rng: np.random.Generator,
    distribution: str = "uniform",
) -> Any:
    """A noisy copy of ``element`` that stays inside ``space`` (see the module doc)."""
    if isinstance(space, spaces.Dict):
        return {
            key: noisy_element(space[key], element[key], noise, rng, distribution) for key in space
        }
    if isinstance(space, spaces.Tuple):
        return tuple(
            noisy_element(s, e, noise, rng, distribution)
            for s, e in zip(space, element, strict=True)
        )
    if isinstance(space, spaces.Sequence):
        return tuple(
            noisy_element(space.feature_space, e, noise, rng, distribution) for e in element
        )
    if isinstance(space, spaces.MultiBinary):
        flips = rng.random(space.shape) < noise
        return np.where(flips, 1 - element, element).astype(space.dtype)
    if isinstance(space, spaces.Discrete):
        if rng.random() >= noise or space.n < 2:
            return element
        other = int(rng.integers(space.n - 1))
        return int(space.start + (other if other < element - space.start else other + 1))
    if isinstance(space, spaces.MultiDiscrete):
        # Another value of each entry, uniformly: shift its index by 1..n-1 (mod n).
        index = np.asarray(element) - space.start
        shift = 1 + rng.integers(0, np.maximum(space.nvec - 1, 1))
        replace = (rng.random(space.shape) < noise) & (space.nvec > 1)
        return (space.start + np.where(replace, (index + shift) % space.nvec, index)).astype(
            space.dtype
        )
    if isinstance(space, spaces.Box):
        return _noisy_box(space, np.asarray(element), noise, rng, distribution)
    return element


def _noisy_box(
    space: spaces.Box,
    element: np.ndarray,
    noise: float,
    rng: np.random.Generator,
    distribution: str,
) -> np.ndarray:
    integer = np.issubdtype(space.dtype, np.integer)
    if integer and np.all(space.low == 0) and np.all(space.high == 1):
        flips = rng.random(element.shape) < noise
        return np.where(flips, 1 - element, element).astype(space.dtype)
    if distribution == "gaussian":
        factor = 1.0 + rng.normal(0.0, noise, element.shape)
    else:
        factor = 1.0 + rng.uniform(-noise, noise, element.shape)
    noisy = element.astype(np.float64) * factor
    if integer:
        noisy = np.rint(noisy)
    return np.clip(noisy, space.low, space.high).astype(space.dtype)


def _check(noise: float, distribution: str) -> None:
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    if distribution not in ("uniform", "gaussian"):
        raise ValueError(f"distribution must be 'uniform' or 'gaussian', got {distribution!r}")


class GymNoiseWrapper(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Noise on a Gymnasium env's observations (spaces unchanged).

    Example:
        >>> import chess_env
        >>> env = GymNoiseWrapper(chess_env.ChessEnv(), noise=0.05)
        >>> obs, _ = env.reset(seed=0)
        >>> obs.dtype, obs.shape, env.observation_space.contains(obs)
        (dtype('uint8'), (8, 8, 12), True)
    """

    def __init__(self, env: gym.Env, noise: float, distribution: str = "uniform") -> None:
        _check(noise, distribution)
        gym.utils.RecordConstructorArgs.__init__(self, noise=noise, distribution=distribution)
        gym.ObservationWrapper.__init__(self, env)
        self.noise, self.distribution = noise, distribution
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        return super().reset(seed=seed, options=options)

    def observation(self, observation: Any) -> Any:
        return noisy_element(
            self.observation_space, observation, self.noise, self._rng, self.distribution
        )


class ParallelNoiseWrapper(BaseParallelWrapper):
    """Noise on every agent's observations of a PettingZoo ``ParallelEnv`` (spaces unchanged).

    Example:
        >>> from multiagent import parallel_env
        >>> env = ParallelNoiseWrapper(parallel_env("forage"), noise=0.1)
        >>> observations, _ = env.reset(seed=0)
        >>> env.observation_space("Forager_1").contains(observations["Forager_1"])
        True
    """

    def __init__(self, env: ParallelEnv, noise: float, distribution: str = "uniform") -> None:
        _check(noise, distribution)
        super().__init__(env)
        self.noise, self.distribution = noise, distribution
        self._rng = np.random.default_rng()

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._noisy(observations), infos

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._noisy(observations), rewards, terminations, truncations, infos

    def _noisy(self, observations: dict[str, Any]) -> dict[str, Any]:
        return {
            agent: noisy_element(
                self.observation_space(agent), obs, self.noise, self._rng, self.distribution
            )
            for agent, obs in observations.items()
        }


def NoiseWrapper(  # noqa: N802 -- used like a wrapper class, for either API
    env: gym.Env | ParallelEnv, noise: float, distribution: str = "uniform"
) -> GymNoiseWrapper | ParallelNoiseWrapper:
    """Observation noise for a Gymnasium env or a PettingZoo ``ParallelEnv`` (module doc)."""
    if isinstance(env, gym.Env):
        return GymNoiseWrapper(env, noise, distribution)
    return ParallelNoiseWrapper(env, noise, distribution)
