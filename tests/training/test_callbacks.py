"""The callbacks of train_ppo on plain SB3 models: what each one records, and that it lets go."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from training.callbacks import (
    EpisodeRecorder,
    GradNormMonitor,
    LoggerCapture,
    PeriodicEvaluation,
    chess_evaluator,
    return_evaluator,
)
from training.evaluation import evaluate


class OneStepEnv(gym.Env):
    """Every episode lasts one step and pays the action: many episodes in few steps."""

    observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(1, dtype=np.float32), float(action), True, False, {}


def tiny_ppo(env: Any = "CartPole-v1") -> PPO:
    vec_env = make_vec_env(env, n_envs=1, seed=0)
    return PPO("MlpPolicy", vec_env, n_steps=32, batch_size=16, n_epochs=2, seed=0, device="cpu")


def test_logger_capture_keeps_the_last_update_which_sb3_never_dumps() -> None:
    model, capture = tiny_ppo(), LoggerCapture()
    model.learn(96, callback=capture)
    assert capture.values["time/total_timesteps"] == 96  # the last dump, before the last update
    assert capture.values["train/n_updates"] == model._n_updates == 6  # the last update's
    assert model.logger.output_formats == [] and not model.logger.name_to_value


def test_episode_recorder_keeps_more_than_sb3s_last_hundred() -> None:
    model, recorder = tiny_ppo(OneStepEnv), EpisodeRecorder()
    model.learn(160, callback=recorder)
    assert len(recorder.episodes) == 160 and len(model.ep_info_buffer) == 100
    assert [point.timesteps for point in recorder.episodes] == list(range(1, 161))
    assert all(point.length == 1 and point.reward in (0.0, 1.0) for point in recorder.episodes)


def test_grad_norm_monitor_sees_every_step_before_clipping(monkeypatch: pytest.MonkeyPatch) -> None:
    norms: list[float] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(*args: Any, **kwargs: Any) -> torch.Tensor:
        norm = clip(*args, **kwargs)
        norms.append(float(norm))
        return norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", recording_clip)
    model, monitor = tiny_ppo(), GradNormMonitor()
    model.max_grad_norm = 1e-3  # every step is clipped: the clipped norm would be 1e-3
    model.learn(64, callback=monitor)
    assert monitor.steps == len(norms) == 8
    assert monitor.last_norm == pytest.approx(norms[-1], rel=1e-5) and monitor.last_norm > 1e-2


def test_grad_norm_monitor_removes_its_hooks() -> None:
    model, monitor = tiny_ppo(), GradNormMonitor()
    model.learn(32, callback=monitor)
    steps = monitor.steps
    loss = sum(parameter.sum() for parameter in model.policy.parameters())
    loss.backward()
    model.policy.optimizer.step()
    assert monitor.steps == steps


def test_periodic_evaluation_runs_at_each_multiple() -> None:
    calls: list[int] = []

    def evaluator(model: Any) -> tuple[float, None, None]:
        calls.append(model.num_timesteps)
        return 0.5, None, None

    model, evaluation = tiny_ppo(), PeriodicEvaluation(evaluator, every=40)
    model.learn(96, callback=evaluation)
    assert calls == [40, 80]
    assert [tuple(point) for point in evaluation.points] == [
        (40, 0.5, None, None),
        (80, 0.5, None, None),
    ]


def test_periodic_evaluation_needs_a_positive_period() -> None:
    with pytest.raises(ValueError, match="every"):
        PeriodicEvaluation(lambda model: (0.0, None, None), every=0)


def test_chess_evaluator_is_a_seeded_match() -> None:
    player = SimpleNamespace(policy="greedy")  # evaluate() accepts a player where a policy goes
    score, low, high = chess_evaluator("random", games=2, seed=3)(player)
    expected = evaluate("greedy", "random", games=2, seed=3)
    assert (score, low, high) == (expected.score, expected.score_low, expected.score_high)


def test_return_evaluator_is_the_mean_of_seeded_greedy_episodes() -> None:
    class AlwaysLeft:
        def predict(self, observation: Any, deterministic: bool = False) -> tuple[int, None]:
            assert deterministic
            return 0, None

    expected = []
    for seed in (7, 8, 9):
        env = gym.make("CartPole-v1")
        env.reset(seed=seed)
        length, done = 0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(0)
            length, done = length + reward, terminated or truncated
        expected.append(length)
    value, low, high = return_evaluator(lambda: gym.make("CartPole-v1"), 3, seed=7)(AlwaysLeft())
    assert value == pytest.approx(np.mean(expected)) and low is None and high is None
