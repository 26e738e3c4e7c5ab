"""``train_ppo``: PPO, or MaskablePPO when the env masks actions, on any env, as a result DTO.

The env is a Gymnasium id (``chess_env/Chess-v0``, ``CartPole-v1``), a built-in world
(``world:forage``) or a factory. It runs in ``n_envs`` copies (subprocesses when there are more
than one). What the result reports is captured by callbacks (``training.callbacks``): SB3's last
logged losses, every finished episode, the unclipped gradient norm of the last optimiser step and
the periodic evaluations of the learning curve; the advantages come from the last rollout buffer.
Every check that can fail (the config, the env id, the features, the opponent, the outputs) runs
before the first subprocess starts.

- ``train_ppo(env, *, total_timesteps, n_envs, seed, config, **overrides)``: the result DTO; the
  model is saved under ``runs/ppo-<time>`` unless ``out_dir`` says otherwise (``None``: no files).
- ``run_ppo(config, env)``: the same from a complete config, with the model and the curve's
  points (``PPORun``), for callers that continue from the model, such as the anneal.
- ``ppo_config(...)``: the config ``train_ppo`` runs with, from its arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from envkit.command_line import MissingExtraError
from training.config import PPOConfig, TrainingConfigError, resolve_out_dir
from training.curves import EpisodePoint, EvalPoint, plot_learning_curve
from training.dto import Artifacts, EvaluationResult, PPOTrainingResult
from training.envs import EnvSpec, default_n_envs, env_factory, env_id, has_action_masks, make_vec

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

__all__ = ["PPORun", "ppo_config", "run_ppo", "train_ppo"]

# What a run writes in its out_dir.
MODEL_FILE = "model.zip"
RESULT_FILE = "result.json"
CURVE_FILE = "curve.png"
GAMES_FILE = "games.pgn"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINT_DIR = "checkpoints"


@dataclass
class PPORun:
    """A finished run: the trained model (its envs closed), the result and the curve's points.

    ``evaluations`` holds the periodic evaluations, then the final one (chess) at the last step.
    """

    model: PPO | MaskablePPO
    result: PPOTrainingResult
    episodes: list[EpisodePoint]
    evaluations: list[EvalPoint]


def ppo_config(
    env: EnvSpec | None = None,
    *,
    total_timesteps: int | None = None,
    n_envs: int | None = None,
    seed: int | None = None,
    config: PPOConfig | None = None,
    **overrides: Any,
) -> PPOConfig:
    """``config`` (default: ``PPOConfig()``) with the given arguments and overrides set.

    A factory ``env`` is recorded under its name. A bad value raises pydantic's
    ``ValidationError`` (a ``ValueError``) naming the field.

    Example:
        >>> ppo_config("CartPole-v1", n_envs=2, seed=3, n_steps=64).n_steps
        64
    """
    data = (config or PPOConfig()).model_dump()
    explicit = {"total_timesteps": total_timesteps, "n_envs": n_envs, "seed": seed}
    data.update({key: value for key, value in explicit.items() if value is not None})
    if env is not None:
        data["env"] = env_id(env)
    data.update(overrides)
    return PPOConfig.model_validate(data)


def train_ppo(
    env: EnvSpec | None = None,
    *,
    total_timesteps: int | None = None,
    n_envs: int | None = None,
    seed: int | None = None,
    config: PPOConfig | None = None,
    **overrides: Any,
) -> PPOTrainingResult:
    """Train PPO / MaskablePPO on ``env`` and return the result (and write artefacts if asked).

    Args:
        env: a Gymnasium id, ``world:NAME`` or a zero-argument factory (default: ``config.env``).
        total_timesteps: environment steps, all envs together (default: the config's); SB3 rounds
            up to whole rollouts of ``n_steps * n_envs``.
        n_envs: parallel envs (default: the config's, else one per CPU core).
        seed: seeds the envs (``seed``, ``seed + 1``, ...), the network and the evaluations.
        config: the base configuration (default: ``PPOConfig()``).
        **overrides: any other ``PPOConfig`` field, e.g. ``n_steps=128, out_dir="runs/a"``;
            ``out_dir`` defaults to ``"auto"`` (a new ``runs/ppo-<time>``), ``None`` writes nothing.

    Raises:
        TrainingConfigError: a config, env or opponent the run cannot use (before any env starts).
        MissingExtraError: ``tensorboard=True`` without TensorBoard installed.
    """
    resolved = ppo_config(
        env, total_timesteps=total_timesteps, n_envs=n_envs, seed=seed, config=config, **overrides
    )
    return run_ppo(resolved, env if callable(env) else None).result


def run_ppo(config: PPOConfig, env: Callable[[], gym.Env] | None = None) -> PPORun:
    """Train with ``config`` (``env``: a factory to use instead of ``config.env``).

    ``n_envs`` left unset becomes the CPU cores and ``out_dir="auto"`` a new ``runs/ppo-<time>``,
    so the result's config says how the run was made.
    """
    n_envs, run_dir = config.n_envs or default_n_envs(), resolve_out_dir(config.out_dir, "ppo")
    config = config.model_copy(update={"n_envs": n_envs, "out_dir": run_dir})
    factory = _factory(env or config.env, config)
    masked, chess = _inspect(factory, config)
    out_dir = _prepare_outputs(config)
    vec_env = make_vec(factory, config.n_envs, config.seed, config.vec_env)
    try:
        from training.sb3_models import build_model

        model = build_model(
            config,
            vec_env,
            masked=masked,
            tensorboard_log=_path(out_dir, TENSORBOARD_DIR, config.tensorboard),
        )
        watch = _Watchers(config, factory, masked=masked, chess=chess, out_dir=out_dir)
        started = time.perf_counter()
        model.learn(config.total_timesteps, callback=watch.callbacks())
        duration = time.perf_counter() - started
    finally:
        vec_env.close()
    evaluation = _final_evaluation(model, config, out_dir) if chess else None
    artifacts = _artifacts(out_dir, config, evaluation is not None)
    result = _result(
        model, config, watch, duration, evaluation, artifacts, env_id(env or config.env)
    )
    points = watch.evaluation_points(evaluation, model.num_timesteps)
    run = PPORun(model, result, watch.recorder.episodes, points)
    if out_dir is not None:
        _write_artifacts(run, artifacts, "score vs " + config.eval_opponent if chess else None)
    return run


def _factory(env: EnvSpec, config: PPOConfig) -> Callable[[], gym.Env]:
    """The env's factory; an unknown Gymnasium id is a ``TrainingConfigError`` naming the close
    ids."""
    try:
        return env_factory(env, config.env_kwargs, config.learner)
    except gym.error.Error as error:
        raise TrainingConfigError(f"env: {error}") from None


def _inspect(factory: Callable[[], gym.Env], config: PPOConfig) -> tuple[bool, bool]:
    """Whether the env masks actions and is chess; fails early on spaces, features or opponent."""
    from training.sb3_models import policy_for

    probe = factory()
    try:
        _check_spaces(probe, env_id(factory))
        masked = has_action_masks(probe)
        policy_for(probe.observation_space, config.features, masked)
        chess = _is_chess(probe.unwrapped)
        evaluated = chess and bool(config.eval_games or config.eval_every)
        if evaluated and getattr(probe.unwrapped, "perspective", None) != "side_to_move":
            raise TrainingConfigError(
                "the evaluations play ChessEnv's side_to_move board; with another "
                "perspective set eval_games=0 and eval_every=None"
            )
    finally:
        probe.close()
    if evaluated:
        from chess_env.core.players import make_player

        make_player(config.eval_opponent).close()  # an unknown opponent fails now
    return masked, chess


def _check_spaces(env: gym.Env, name: str) -> None:
    """SB3 trains Box, Discrete, MultiDiscrete and MultiBinary spaces (Dict observations of them);
    anything else (a Text space, for LLMs) is refused before training."""
    plain = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    observation, action = env.observation_space, env.action_space
    parts = (
        observation.spaces.values() if isinstance(observation, gym.spaces.Dict) else [observation]
    )
    for role, spaces in (("observation", parts), ("action", [action])):
        for space in spaces:
            if not isinstance(space, plain):
                raise TrainingConfigError(
                    f"env {name}: PPO cannot train on a {type(space).__name__} {role} space; "
                    "SB3 trains Box, Discrete, MultiDiscrete and MultiBinary spaces"
                    + (" (chess: chess_env/Chess-v0)" if "Chess" in name else "")
                )


def _is_chess(env: gym.Env) -> bool:
    from chess_env import ChessEnv

    return isinstance(env, ChessEnv)


def _prepare_outputs(config: PPOConfig) -> Path | None:
    """The artefacts folder (created), after checking the files the run reads and writes."""
    if config.init_model is not None and not any(
        Path(name).is_file() for name in (config.init_model, f"{config.init_model}.zip")
    ):
        raise TrainingConfigError(f"init_model: no saved model at {config.init_model}")
    needs_folder = [name for name in ("checkpoint_every", "tensorboard") if getattr(config, name)]
    if config.out_dir is None:
        if needs_folder:
            raise TrainingConfigError(
                f"{', '.join(needs_folder)} writes files: set out_dir as well"
            )
        return None
    if config.tensorboard:
        _require_tensorboard()
    out_dir = Path(config.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def _require_tensorboard() -> None:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            "tensorboard=true needs TensorBoard, which is not installed", "tensorboard"
        ) from None


def _path(out_dir: Path | None, name: str, wanted: bool = True) -> str | None:
    return str(out_dir / name) if out_dir is not None and wanted else None


class _Watchers:
    """The callbacks of one run, kept by name so the result can read them afterwards."""

    def __init__(
        self,
        config: PPOConfig,
        factory: Callable[[], gym.Env],
        *,
        masked: bool,
        chess: bool,
        out_dir: Path | None,
    ) -> None:
        from training.callbacks import (
            EpisodeRecorder,
            GradNormMonitor,
            LoggerCapture,
            PeriodicEvaluation,
            chess_evaluator,
            return_evaluator,
        )

        self.logs, self.recorder, self.grads = LoggerCapture(), EpisodeRecorder(), GradNormMonitor()
        self.evaluation = None
        if config.eval_every is not None:
            games, seed = config.eval_games_during, config.seed
            evaluator = (
                chess_evaluator(config.eval_opponent, games, seed)
                if chess
                else return_evaluator(factory, games, seed, masked)
            )
            self.evaluation = PeriodicEvaluation(evaluator, config.eval_every)
        self.extra: list[Any] = []
        if config.checkpoint_every is not None and out_dir is not None:
            from stable_baselines3.common.callbacks import CheckpointCallback

            every = max(config.checkpoint_every // (config.n_envs or 1), 1)  # SB3 counts vec steps
            self.extra.append(CheckpointCallback(every, str(out_dir / CHECKPOINT_DIR), "model"))
        if config.progress_bar:
            from training.callbacks import ProgressBar

            self.extra.append(ProgressBar())

    def evaluation_points(self, final: EvaluationResult | None, timesteps: int) -> list[EvalPoint]:
        """The periodic evaluations, then the final one at ``timesteps``."""
        points = list(self.evaluation.points) if self.evaluation else []
        if final is not None:
            points.append(EvalPoint(timesteps, final.score, final.score_low, final.score_high))
        return points

    def callbacks(self) -> Any:
        from stable_baselines3.common.callbacks import CallbackList

        watchers = [self.logs, self.recorder, self.grads]
        return CallbackList(watchers + ([self.evaluation] if self.evaluation else []) + self.extra)


def _final_evaluation(
    model: PPO | MaskablePPO, config: PPOConfig, out_dir: Path | None
) -> EvaluationResult | None:
    if not config.eval_games:
        return None
    from training.evaluation import evaluate

    return evaluate(
        model,
        config.eval_opponent,
        games=config.eval_games,
        seed=config.seed,
        pgn_path=_path(out_dir, GAMES_FILE),
        progress_bar=config.progress_bar,
    )


def _result(
    model: PPO | MaskablePPO,
    config: PPOConfig,
    watch: _Watchers,
    duration: float,
    evaluation: EvaluationResult | None,
    artifacts: Artifacts,
    name: str,
) -> PPOTrainingResult:
    from sb3_contrib import MaskablePPO

    from training.sb3_models import algorithm_name

    logs = watch.logs.values
    infos = list(model.ep_info_buffer or [])
    advantages = np.asarray(model.rollout_buffer.advantages, dtype=np.float64)
    return PPOTrainingResult(
        env_id=name,
        algorithm=algorithm_name(isinstance(model, MaskablePPO)),
        seed=config.seed,
        device=str(model.device),
        total_timesteps=model.num_timesteps,
        updates=int(logs.get("train/n_updates", 0)),
        episodes=len(watch.recorder.episodes),
        mean_episode_reward=np.mean([info["r"] for info in infos]) if infos else None,
        mean_episode_length=np.mean([info["l"] for info in infos]) if infos else None,
        loss_policy=logs.get("train/policy_gradient_loss"),
        loss_value=logs.get("train/value_loss"),
        loss_entropy=logs.get("train/entropy_loss"),
        loss_total=logs.get("train/loss"),
        clip_fraction=logs.get("train/clip_fraction"),
        approx_kl=logs.get("train/approx_kl"),
        explained_variance=logs.get("train/explained_variance"),
        learning_rate=logs.get("train/learning_rate"),
        adv_mean=advantages.mean(),
        adv_std=advantages.std(),
        grad_norm=watch.grads.last_norm,
        duration_sec=duration,
        steps_per_sec=model.num_timesteps / duration if duration > 0 else 0.0,
        evaluation=evaluation,
        artifacts=artifacts,
        config=config,
    )


def _artifacts(out_dir: Path | None, config: PPOConfig, evaluated: bool) -> Artifacts:
    if out_dir is None:
        return Artifacts()
    return Artifacts(
        directory=str(out_dir),
        model=str(out_dir / MODEL_FILE),
        result=str(out_dir / RESULT_FILE),
        curve=str(out_dir / CURVE_FILE),
        games_pgn=_path(out_dir, GAMES_FILE, evaluated),
        tensorboard=_path(out_dir, TENSORBOARD_DIR, config.tensorboard),
    )


def _write_artifacts(run: PPORun, artifacts: Artifacts, eval_label: str | None) -> None:
    """The model, the curve and the result JSON (the evaluation wrote its PGN itself)."""
    assert artifacts.model and artifacts.curve and artifacts.result
    result = run.result
    run.model.save(artifacts.model)
    plot_learning_curve(
        run.episodes,
        run.evaluations,
        artifacts.curve,
        f"{result.algorithm} on {result.env_id}, seed {result.seed}",
        eval_label=eval_label or "mean return (greedy)",
    )
    Path(artifacts.result).write_text(result.model_dump_json(indent=2), encoding="utf-8")
