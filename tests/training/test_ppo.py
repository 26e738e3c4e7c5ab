"""train_ppo on tiny budgets: the algorithm and policy it picks, where each metric comes from,
determinism, artefacts, and errors raised before any subprocess starts."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image
from pydantic import ValidationError
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.policies import ActorCriticPolicy, MultiInputActorCriticPolicy

import training
from envkit.command_line import MissingExtraError
from training.config import TrainingConfigError
from training.dto import PPOTrainingResult
from training.envs import env_factory, make_vec
from training.evaluation import evaluate
from training.policies import ChessCnnMaskablePolicy
from training.ppo import PPORun, ppo_config, run_ppo, train_ppo
from training.sb3_models import build_model, load_model

BUDGET: dict[str, Any] = {
    "total_timesteps": 128,
    "n_envs": 1,
    "n_steps": 64,
    "batch_size": 32,
    "n_epochs": 2,
    "progress_bar": False,
}
TINY: dict[str, Any] = {**BUDGET, "out_dir": None}  # no files: runs/ is the default
TIMING_FIELDS = {"duration_sec", "steps_per_sec"}
RUN_FIELDS = TIMING_FIELDS | {"evaluation", "artifacts", "config"}


@pytest.fixture(scope="module")
def chess_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[PPORun, list[float]]:
    """One chess run with everything on, and the norms SB3's clip_grad_norm_ returned in it."""
    norms: list[float] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(*args: Any, **kwargs: Any) -> torch.Tensor:
        norm = clip(*args, **kwargs)
        norms.append(float(norm))
        return norm

    config = ppo_config(
        "chess_env/Chess-v0",
        **BUDGET,
        eval_games=2,
        eval_every=64,
        eval_games_during=1,
        checkpoint_every=64,
        out_dir=str(tmp_path_factory.mktemp("chess") / "run"),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.utils, "clip_grad_norm_", recording_clip)
        run = run_ppo(config)
    return run, norms


@pytest.fixture
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if train_ppo gets as far as making its vectorised envs."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the envs were started before the error")

    monkeypatch.setattr("training.ppo.make_vec", refuse)
    yield


def metrics(result: PPOTrainingResult) -> dict[str, Any]:
    return result.model_dump(exclude=RUN_FIELDS)


def test_chess_trains_maskable_ppo_with_the_cnn_policy(chess_run: tuple[PPORun, list]) -> None:
    run, _ = chess_run
    assert isinstance(run.model, MaskablePPO)
    assert type(run.model.policy) is ChessCnnMaskablePolicy
    assert run.result.algorithm == "MaskablePPO"
    assert run.result.env_id == "chess_env/Chess-v0"
    assert run.result.config.n_envs == 1


def test_chess_trains_in_subprocesses() -> None:
    run = run_ppo(ppo_config("chess_env/Chess-v0", **{**TINY, "n_envs": 2, "n_steps": 32}))
    assert type(run.model.env).__name__ == "SubprocVecEnv"  # the workers registered the id
    assert run.result.total_timesteps == 128 and run.result.loss_total is not None


def test_world_trains_ppo_with_the_multi_input_policy() -> None:
    config = ppo_config("world:forage", **{**TINY, "n_envs": 2, "vec_env": "dummy", "n_steps": 32})
    run = run_ppo(config)
    assert type(run.model) is PPO and type(run.model.policy) is MultiInputActorCriticPolicy
    assert type(run.model.env).__name__ == "DummyVecEnv"
    assert run.result.algorithm == "PPO" and run.result.total_timesteps == 128


def test_cartpole_trains_ppo_with_the_mlp_policy_and_evaluates_returns() -> None:
    run = run_ppo(ppo_config("CartPole-v1", **TINY, eval_every=64, eval_games_during=2))
    assert type(run.model) is PPO and type(run.model.policy) is ActorCriticPolicy
    assert [point.timesteps for point in run.evaluations] == [64, 128]
    assert all(point.value >= 8 and point.low is None for point in run.evaluations)
    assert run.result.evaluation is None  # the final match is chess only


def test_the_result_round_trips_through_json(chess_run: tuple[PPORun, list]) -> None:
    result = chess_run[0].result
    assert PPOTrainingResult.model_validate(result.model_dump(mode="json")) == result
    saved = Path(result.artifacts.result).read_text(encoding="utf-8")
    assert PPOTrainingResult.model_validate_json(saved) == result


def test_updates_and_advantages_come_from_the_model(chess_run: tuple[PPORun, list]) -> None:
    run, _ = chess_run
    rollouts = run.result.total_timesteps // (64 * 1)
    assert run.result.updates == run.model._n_updates == rollouts * 2  # SB3 counts epochs
    advantages = run.model.rollout_buffer.advantages
    assert run.result.adv_mean == pytest.approx(float(np.mean(advantages)))
    assert run.result.adv_std == pytest.approx(float(np.std(advantages)))


def test_grad_norm_is_the_unclipped_norm_of_the_last_step(chess_run: tuple[PPORun, list]) -> None:
    run, norms = chess_run
    steps = run.result.updates * (64 // 32)  # minibatches per epoch
    assert len(norms) == steps
    assert run.result.grad_norm is not None and run.result.grad_norm > 0
    assert run.result.grad_norm == pytest.approx(norms[-1], rel=1e-5)


def test_grad_norm_works_for_plain_ppo_too(monkeypatch: pytest.MonkeyPatch) -> None:
    norms: list[float] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(*args: Any, **kwargs: Any) -> torch.Tensor:
        norms.append(float(clip(*args, **kwargs)))
        return torch.tensor(norms[-1])

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", recording_clip)
    result = train_ppo("CartPole-v1", **TINY)
    assert result.grad_norm == pytest.approx(norms[-1], rel=1e-5)


def test_losses_are_the_loggers_last_values() -> None:
    config = ppo_config("CartPole-v1", **{**TINY, "total_timesteps": 192})
    result = train_ppo(config=config)

    vec_env = make_vec(env_factory(config.env), config.n_envs, config.seed, config.vec_env)
    model = build_model(config, vec_env, masked=False)
    model.learn(config.total_timesteps)
    vec_env.close()
    logged = model.logger.name_to_value  # SB3 records the last update but never dumps it
    assert logged["train/n_updates"] == 6 == result.updates
    expected = {
        "loss_policy": "train/policy_gradient_loss",
        "loss_value": "train/value_loss",
        "loss_entropy": "train/entropy_loss",
        "loss_total": "train/loss",
        "clip_fraction": "train/clip_fraction",
        "approx_kl": "train/approx_kl",
        "explained_variance": "train/explained_variance",
        "learning_rate": "train/learning_rate",
    }
    for field, key in expected.items():
        assert getattr(result, field) == pytest.approx(float(logged[key]), rel=1e-6), field


def test_episodes_are_all_finished_episodes() -> None:
    run = run_ppo(ppo_config("CartPole-v1", **{**TINY, "total_timesteps": 256}))
    assert run.result.episodes == len(run.episodes) > 5
    assert run.result.mean_episode_reward == pytest.approx(
        np.mean([point.reward for point in run.episodes[-100:]])
    )
    assert run.result.mean_episode_length == pytest.approx(
        np.mean([point.length for point in run.episodes[-100:]])
    )


def test_same_seed_same_metrics_and_weights(chess_run: tuple[PPORun, list]) -> None:
    first = chess_run[0]
    config = first.result.config.model_copy(
        update={"out_dir": None, "eval_games": 0, "eval_every": None, "checkpoint_every": None}
    )
    second = run_ppo(config)
    assert metrics(second.result) == metrics(first.result)
    first_weights = first.model.policy.state_dict()
    for name, tensor in second.model.policy.state_dict().items():
        assert torch.equal(tensor, first_weights[name]), name


def test_artefacts_are_written(chess_run: tuple[PPORun, list]) -> None:
    artifacts = chess_run[0].result.artifacts
    assert artifacts.directory is not None and artifacts.tensorboard is None
    for path in (artifacts.model, artifacts.result, artifacts.curve, artifacts.games_pgn):
        assert path is not None and Path(path).is_file(), path
    with Image.open(artifacts.curve) as image:
        assert image.format == "PNG" and image.size[0] > 100
    pgn = Path(artifacts.games_pgn).read_text(encoding="utf-8")
    assert pgn.count("[Event ") == 2
    checkpoints = sorted(
        path.name for path in (Path(artifacts.directory) / "checkpoints").iterdir()
    )
    assert checkpoints == ["model_128_steps.zip", "model_64_steps.zip"]


def test_the_curve_points_include_the_periodic_and_final_evaluations(
    chess_run: tuple[PPORun, list],
) -> None:
    run, _ = chess_run
    assert [point.timesteps for point in run.evaluations] == [64, 128, 128]
    final = run.evaluations[-1]
    assert run.result.evaluation is not None
    assert (final.value, final.low, final.high) == (
        run.result.evaluation.score,
        run.result.evaluation.score_low,
        run.result.evaluation.score_high,
    )


def test_the_saved_model_loads_and_plays_like_the_trained_one(
    chess_run: tuple[PPORun, list],
) -> None:
    run, _ = chess_run
    loaded = load_model(run.result.artifacts.model)
    assert isinstance(loaded, MaskablePPO)
    match = {"games": 2, "seed": 1, "max_plies": 30}
    assert evaluate(loaded, "random", **match) == evaluate(run.model, "random", **match)


def test_a_factory_env_is_recorded_by_name() -> None:
    def cartpole() -> gym.Env:
        return gym.make("CartPole-v1")

    result = train_ppo(cartpole, **TINY)
    assert result.env_id == result.config.env == "cartpole"
    assert result.algorithm == "PPO"


def test_unset_n_envs_is_recorded_and_a_saved_model_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("training.ppo.default_n_envs", lambda: 1)  # one env per core
    first = train_ppo("CartPole-v1", **{**BUDGET, "n_envs": None}, out_dir=str(tmp_path))
    assert first.config.n_envs == 1
    assert first.artifacts.model is not None
    second = train_ppo("CartPole-v1", **TINY, init_model=first.artifacts.model.removesuffix(".zip"))
    assert second.config.init_model is not None and second.updates == first.updates


@pytest.mark.usefixtures("no_subprocess")
@pytest.mark.parametrize(
    ("env", "overrides", "error", "match"),
    [
        ("NoSuchEnv-v0", {}, TrainingConfigError, "env: .*NoSuchEnv"),
        (
            "chess_env/ChessText-v0",
            {},
            TrainingConfigError,
            "cannot train on a Text observation space",
        ),
        ("world:nowhere", {}, ValueError, "unknown world 'nowhere'"),
        ("world:forage", {"learner": "nobody"}, ValueError, "unknown learner 'nobody'"),
        ("CartPole-v1", {"n_steps": 0}, ValidationError, "n_steps"),
        ("CartPole-v1", {"features": "chess_cnn"}, ValueError, "chess_cnn"),
        ("CartPole-v1", {"checkpoint_every": 64}, TrainingConfigError, "set out_dir"),
        ("chess_env/Chess-v0", {"eval_opponent": "nobody"}, ValueError, "unknown player"),
        (
            "chess_env/Chess-v0",
            {"env_kwargs": {"perspective": "white"}},
            TrainingConfigError,
            "eval",
        ),
        ("CartPole-v1", {"init_model": "no/such/model"}, TrainingConfigError, "init_model"),
    ],
)
def test_bad_input_fails_before_the_envs_start(
    env: str, overrides: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        train_ppo(env, **{**TINY, **overrides})


@pytest.mark.usefixtures("no_subprocess")
def test_tensorboard_without_the_package_names_its_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard now fails
    with pytest.raises(MissingExtraError, match=r"pip install 'polyarena\[tensorboard\]'"):
        train_ppo("CartPole-v1", **BUDGET, tensorboard=True, out_dir=str(tmp_path))


def test_by_default_the_model_is_saved_under_runs_and_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = train_ppo("CartPole-v1", **BUDGET)
    model = result.artifacts.model
    assert model is not None and Path(model).parent.parent == Path("runs")
    assert Path(model).parent.name.startswith("ppo-") and Path(model).is_file()
    assert result.config.out_dir == result.artifacts.directory
    assert isinstance(training.load_model(model), PPO)
    second = train_ppo("CartPole-v1", **BUDGET)  # a folder of its own, even in the same second
    assert second.artifacts.directory != result.artifacts.directory


def test_every_training_metric_is_a_finite_number(chess_run: tuple[PPORun, list]) -> None:
    run, _ = chess_run
    for name in (
        "loss_policy", "loss_value", "loss_entropy", "loss_total", "clip_fraction", "approx_kl",
        "learning_rate", "adv_mean", "adv_std", "grad_norm", "duration_sec", "steps_per_sec",
    ):  # fmt: skip
        value = getattr(run.result, name)
        assert value is not None and math.isfinite(value), name


def test_maskable_ppo_never_takes_a_masked_action(chess_run: tuple[PPORun, list]) -> None:
    """The env raises ``IllegalActionError`` on an illegal action (its default), so a run that
    finished took legal actions at every rollout step; its final match counted none either."""
    run, _ = chess_run
    assert run.result.config.env_kwargs.get("illegal_action", "raise") == "raise"
    assert run.result.total_timesteps > 0
    assert run.result.evaluation is not None and run.result.evaluation.illegal_actions == 0
