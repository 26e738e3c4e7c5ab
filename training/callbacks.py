"""What ``train_ppo`` observes during ``learn()``, as SB3 callbacks; none of them alters training.

- ``LoggerCapture``: the last value of every key SB3's logger writes. SB3 dumps its logger before
  each update, so the last update's losses are recorded but never written; at the end of training
  this callback writes them (to every output, TensorBoard included), then keeps them.
- ``EpisodeRecorder``: every finished episode (Monitor's ``info["episode"]``), not only the last
  100 that SB3's ``ep_info_buffer`` keeps.
- ``GradNormMonitor``: the global L2 norm of the gradients of every optimiser step, taken before
  SB3 clips them (what ``clip_grad_norm_`` measures), from hooks on the policy's parameters and
  optimiser; PPO and MaskablePPO share the policy/optimiser layout, so it works for both.
- ``PeriodicEvaluation``: an evaluator called every N timesteps, keeping ``EvalPoint``\\ s.
- ``ProgressBar``: the timesteps as a tqdm bar on stderr (SB3's own bar is rich's, on stdout,
  where ``python -m training`` prints its JSON result).
- ``chess_evaluator`` (a seeded match, its score and Wilson interval) and ``return_evaluator``
  (the mean return of seeded episodes, for any other env): evaluators for ``PeriodicEvaluation``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import KVWriter
from tqdm import tqdm  # text bars: tqdm.auto warns in Jupyter without ipywidgets

from training.curves import EpisodePoint, EvalPoint

__all__ = [
    "EpisodeRecorder",
    "Evaluator",
    "GradNormMonitor",
    "LoggerCapture",
    "PeriodicEvaluation",
    "ProgressBar",
    "chess_evaluator",
    "return_evaluator",
]

Evaluator = Callable[[Any], tuple[float, float | None, float | None]]
"""``model -> (value, low, high)``; the bounds may be None."""


class _LastValues(KVWriter):
    """A logger output that keeps the last written value of each key."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def write(self, key_values: dict[str, Any], key_excluded: Any, step: int = 0) -> None:
        self.values.update(key_values)

    def close(self) -> None:
        """Nothing to release: the values stay readable after training."""


class LoggerCapture(BaseCallback):
    """Keeps the last value of every key SB3 logs, e.g. ``values["train/value_loss"]``."""

    def __init__(self) -> None:
        super().__init__()
        self._writer = _LastValues()

    @property
    def values(self) -> dict[str, Any]:
        return self._writer.values

    def _init_callback(self) -> None:
        # learn() configures the model's logger before it initialises the callbacks.
        self.logger.output_formats.append(self._writer)

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        self.logger.dump(step=self.num_timesteps)  # the last update's values, still pending
        self.logger.output_formats.remove(self._writer)


class EpisodeRecorder(BaseCallback):
    """Every episode the training envs finish, in order, as ``EpisodePoint``."""

    def __init__(self) -> None:
        super().__init__()
        self.episodes: list[EpisodePoint] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is not None:
                point = EpisodePoint(self.num_timesteps, float(episode["r"]), int(episode["l"]))
                self.episodes.append(point)
        return True


class GradNormMonitor(BaseCallback):
    """``last_norm``: the unclipped global gradient norm of the last optimiser step."""

    def __init__(self) -> None:
        super().__init__()
        self.last_norm: float | None = None
        self.steps = 0
        self._squares: dict[int, torch.Tensor] = {}
        self._handles: list[Any] = []

    def _on_training_start(self) -> None:
        policy = self.model.policy
        for parameter in policy.parameters():
            if parameter.requires_grad:
                self._handles.append(parameter.register_post_accumulate_grad_hook(self._record))
        self._handles.append(policy.optimizer.register_step_pre_hook(self._on_optimizer_step))

    def _record(self, parameter: torch.Tensor) -> None:
        # The hook runs when backward has accumulated the gradient, before SB3 clips it in place;
        # keyed by parameter so a second backward before the step replaces, not adds.
        assert parameter.grad is not None
        self._squares[id(parameter)] = parameter.grad.detach().pow(2).sum()

    def _on_optimizer_step(self, optimizer: torch.optim.Optimizer, *args: Any) -> None:
        if self._squares:
            self.last_norm = float(torch.stack(list(self._squares.values())).sum().sqrt())
            self.steps += 1
        self._squares.clear()

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class PeriodicEvaluation(BaseCallback):
    """Calls ``evaluator(model)`` each time training passes a multiple of ``every`` timesteps.

    Args:
        evaluator: ``model -> (value, low, high)``, e.g. ``chess_evaluator(...)``.
        every: timesteps between evaluations (all envs' steps count).

    Example:
        >>> evaluation = PeriodicEvaluation(chess_evaluator("random", games=10, seed=0), every=4096)
        >>> evaluation.points  # model.learn(..., callback=evaluation) adds an EvalPoint each time
        []
        >>> PeriodicEvaluation(chess_evaluator("random", games=10, seed=0), every=0)
        Traceback (most recent call last):
        ...
        ValueError: every must be at least 1 timestep, got 0
    """

    def __init__(self, evaluator: Evaluator, every: int) -> None:
        super().__init__()
        if every < 1:
            raise ValueError(f"every must be at least 1 timestep, got {every}")
        self.evaluator, self.every = evaluator, every
        self.points: list[EvalPoint] = []

    def _on_step(self) -> bool:
        if self.num_timesteps // self.every > len(self.points):
            self.points.append(EvalPoint(self.num_timesteps, *self.evaluator(self.model)))
        return True


class ProgressBar(BaseCallback):
    """The timesteps of ``learn()`` as a tqdm bar on stderr, so stdout keeps only results."""

    def __init__(self) -> None:
        super().__init__()
        self._bar: tqdm | None = None

    def _on_training_start(self) -> None:
        total = self.locals["total_timesteps"] - self.model.num_timesteps  # this call's share
        self._bar = tqdm(total=total, desc=type(self.model).__name__, unit="step", file=sys.stderr)

    def _on_step(self) -> bool:
        assert self._bar is not None
        self._bar.update(self.training_env.num_envs)  # one call steps every env once
        return True

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def chess_evaluator(opponent: str, games: int, seed: int) -> Evaluator:
    """A match of the model's policy against ``opponent``: the score and its Wilson interval."""
    from training.evaluation import evaluate

    def score(model: Any) -> tuple[float, float | None, float | None]:
        result = evaluate(model.policy, opponent, games=games, seed=seed)
        return result.score, result.score_low, result.score_high

    return score


def return_evaluator(
    factory: Callable[[], gym.Env], episodes: int, seed: int, masked: bool = False
) -> Evaluator:
    """The mean return of ``episodes`` greedy episodes, seeded ``seed``, ``seed + 1``, ...

    The returns have no interval here (they are not a proportion); the bounds are None.
    """

    def mean_return(model: Any) -> tuple[float, float | None, float | None]:
        env = factory()
        try:
            returns = [
                _episode_return(model, env, seed + index, masked) for index in range(episodes)
            ]
        finally:
            env.close()
        return float(np.mean(returns)), None, None

    return mean_return


def _episode_return(model: Any, env: gym.Env, seed: int, masked: bool) -> float:
    observation, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        masks = {"action_masks": env.get_wrapper_attr("action_masks")()} if masked else {}
        action, _ = model.predict(observation, deterministic=True, **masks)
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total
