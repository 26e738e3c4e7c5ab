"""The frozen results of training and evaluation, on ``envkit.dto.FrozenDTO``.

- ``EvaluationResult``: games against one opponent, W/D/L, the score with its Wilson 95%
  interval, results by colour, mean plies, illegal actions, why games ended.
- ``PPOTrainingResult``: one ``train_ppo`` run: SB3's last logged losses and statistics, the
  rollout buffer's advantages, the evaluation, the artefacts and the frozen config.
- ``DatasetManifest`` and ``BCTrainingResult``: a behaviour-cloning dataset and one run on it.
- ``AnnealStageResult`` and ``AnnealSummary``: the BC-then-PPO schedule, stage by stage.
- ``Artifacts``: where a run wrote its files.

Every DTO serialises with ``model_dump(mode="json")`` and loads back equal: metrics that may be
undefined (SB3 logs NaN for the explained variance of a constant return) are None, never NaN.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from envkit import stats
from envkit.dto import FrozenDTO
from training.config import AnnealConfig, BCConfig, PPOConfig, WorldName

__all__ = [
    "AnnealStageResult",
    "AnnealStatus",
    "AnnealSummary",
    "Artifacts",
    "BCEpoch",
    "BCTrainingResult",
    "ColorResult",
    "DatasetManifest",
    "EvaluationResult",
    "PPOTrainingResult",
    "finite_or_none",
    "wilson_interval",
]

AnnealStatus = Literal["PASS", "HOLD", "FAIL"]
Z_95 = 1.959963984540054  # the standard normal quantile of 97.5%


def finite_or_none(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, NaN or infinite.

    Example:
        >>> finite_or_none(float("nan")), finite_or_none("0.5"), finite_or_none(None)
        (None, 0.5, None)
    """
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def wilson_interval(score: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``score`` over ``n`` trials (95% by default).

    A draw counts half a point, so the score of a match is a proportion like any other; unlike
    the normal approximation, Wilson's interval stays inside [0, 1] and is not empty at 0 or 1.
    It is ``envkit.stats.wilson_interval`` read as a fraction and a normal quantile ``z``.

    Example:
        >>> [round(bound, 3) for bound in wilson_interval(0.8, 200)]
        [0.739, 0.85]
        >>> round(wilson_interval(1.0, 10)[1], 12)
        1.0
    """
    if n < 1:
        raise ValueError(f"the interval needs at least one trial, got n={n}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score must be in [0, 1], got {score}")
    if not z > 0:
        raise ValueError(f"z must be a normal quantile > 0, got {z}")
    confidence = 1 - math.erfc(z / math.sqrt(2))  # the mass of the normal within z of its mean
    return stats.wilson_interval(score * n, n, confidence)


def _check_counts(wins: int, draws: int, losses: int, games: int) -> None:
    if wins + draws + losses != games:
        raise ValueError(
            f"wins + draws + losses ({wins} + {draws} + {losses}) must equal games ({games})"
        )


class ColorResult(FrozenDTO):
    """Results of the games played with one colour.

    Example:
        >>> ColorResult(games=10, wins=6, draws=2, losses=2).score
        0.7
        >>> ColorResult(games=10, wins=6, draws=2, losses=1)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ColorResult
          Value error, wins + draws + losses (6 + 2 + 1) must equal games (10) ...
    """

    games: int = Field(ge=0, description="Games played with this colour")
    wins: int = Field(ge=0, description="Games won")
    draws: int = Field(ge=0, description="Games drawn (the ply limit included)")
    losses: int = Field(ge=0, description="Games lost")

    @model_validator(mode="after")
    def _sums(self) -> ColorResult:
        _check_counts(self.wins, self.draws, self.losses, self.games)
        return self

    @property
    def score(self) -> float | None:
        return (self.wins + self.draws / 2) / self.games if self.games else None


class EvaluationResult(FrozenDTO):
    """A match of ``games`` games against one opponent, colours alternating.

    Example:
        >>> white = ColorResult(games=10, wins=6, draws=2, losses=2)
        >>> black = ColorResult(games=10, wins=4, draws=4, losses=2)
        >>> result = EvaluationResult.from_counts(
        ...     opponent="random", seed=0, white=white, black=black, mean_plies=96.5,
        ...     illegal_actions=0, checkmates=10, terminations={"checkmate": 14, "max_plies": 6})
        >>> result.wins, result.score, round(result.score_low, 3), round(result.score_high, 3)
        (10, 0.65, 0.433, 0.819)
    """

    opponent: str = Field(min_length=1, description="Who the agent played, e.g. random")
    seed: int = Field(ge=0, description="Seed of the match; the same seed replays it")
    games: int = Field(ge=1, description="Games played")
    wins: int = Field(ge=0, description="Games the agent won")
    draws: int = Field(ge=0, description="Games drawn, truncated games included")
    losses: int = Field(ge=0, description="Games the agent lost")
    score: float = Field(ge=0, le=1, description="(wins + draws / 2) / games")
    score_low: float = Field(ge=0, le=1, description="Lower bound of the Wilson 95% interval")
    score_high: float = Field(ge=0, le=1, description="Upper bound of the Wilson 95% interval")
    white: ColorResult = Field(description="Games played as white")
    black: ColorResult = Field(description="Games played as black")
    mean_plies: float = Field(ge=0, description="Mean plies per game, both sides' moves")
    illegal_actions: int = Field(ge=0, description="Illegal actions the agent chose")
    checkmates: int = Field(ge=0, description="Games the agent won by checkmate")
    terminations: dict[str, int] = Field(
        description="Why games ended: checkmate, stalemate, ..., max_plies, illegal_action"
    )

    @model_validator(mode="after")
    def _consistent(self) -> EvaluationResult:
        _check_counts(self.wins, self.draws, self.losses, self.games)
        for field in ("wins", "draws", "losses", "games"):
            total = getattr(self.white, field) + getattr(self.black, field)
            if total != getattr(self, field):
                raise ValueError(f"white.{field} + black.{field} must equal {field}")
        if sum(self.terminations.values()) != self.games:
            raise ValueError("the termination counts must add up to games")
        if self.checkmates > min(self.wins, self.terminations.get("checkmate", 0)):
            raise ValueError("checkmates must not exceed the wins or the games ended by mate")
        expected = (self.wins + self.draws / 2) / self.games
        if not math.isclose(self.score, expected, abs_tol=1e-12):
            raise ValueError(f"score must be (wins + draws / 2) / games = {expected}")
        if not self.score_low <= self.score <= self.score_high:
            raise ValueError("the interval must contain the score")
        return self

    @classmethod
    def from_counts(
        cls,
        *,
        opponent: str,
        seed: int,
        white: ColorResult,
        black: ColorResult,
        mean_plies: float,
        illegal_actions: int,
        checkmates: int,
        terminations: dict[str, int],
    ) -> EvaluationResult:
        """The DTO from per-colour records: the totals, score and interval are derived."""
        games = white.games + black.games
        wins, draws = white.wins + black.wins, white.draws + black.draws
        score = (wins + draws / 2) / games
        low, high = wilson_interval(score, games)
        return cls(
            opponent=opponent,
            seed=seed,
            games=games,
            wins=wins,
            draws=draws,
            losses=white.losses + black.losses,
            score=score,
            score_low=min(low, score),
            score_high=max(high, score),
            white=white,
            black=black,
            mean_plies=mean_plies,
            illegal_actions=illegal_actions,
            checkmates=checkmates,
            terminations=dict(sorted(terminations.items())),
        )

    @property
    def checkmate_rate(self) -> float:
        """Share of the games the agent won by mate (a policy that cannot mate only draws)."""
        return self.checkmates / self.games


class Artifacts(FrozenDTO):
    """Files a run wrote (paths as given, relative to the working directory when relative).

    Example:
        >>> artifacts = Artifacts(directory="runs/ppo", model="runs/ppo/model.zip")
        >>> artifacts.model_dump(exclude_none=True)
        {'schema_version': 1, 'directory': 'runs/ppo', 'model': 'runs/ppo/model.zip'}
    """

    directory: str | None = Field(default=None, description="The run's folder")
    model: str | None = Field(default=None, description="The saved SB3 model (.zip)")
    result: str | None = Field(default=None, description="This result as JSON")
    curve: str | None = Field(default=None, description="Learning-curve PNG")
    games_pgn: str | None = Field(default=None, description="PGN of the evaluation games")
    dataset: str | None = Field(default=None, description="The BC dataset (.npz)")
    tensorboard: str | None = Field(default=None, description="TensorBoard log folder")


_OPTIONAL_METRIC = Field(default=None, description="SB3's last logged value; None if never logged")


class PPOTrainingResult(FrozenDTO):
    """One PPO or MaskablePPO run. Losses and statistics are SB3's last logged values.

    Example:
        >>> run = PPOTrainingResult(
        ...     env_id="chess_env/Chess-v0", algorithm="MaskablePPO", seed=0, device="cpu",
        ...     total_timesteps=4096, updates=64, episodes=40, duration_sec=30.0,
        ...     steps_per_sec=136.5, explained_variance=float("nan"),
        ...     config=PPOConfig(total_timesteps=4096, n_envs=2))
        >>> run.explained_variance is None  # SB3 logged NaN: a constant return
        True
        >>> PPOTrainingResult.model_validate_json(run.model_dump_json()) == run
        True
    """

    env_id: str = Field(description="The env's id, or its factory's name")
    algorithm: Literal["PPO", "MaskablePPO"] = Field(description="MaskablePPO iff the env masks")
    seed: int = Field(ge=0, description="The run's seed")
    device: str = Field(description="torch device, e.g. cpu")
    total_timesteps: int = Field(ge=0, description="Environment steps taken")
    updates: int = Field(ge=0, description="Gradient steps (SB3's train/n_updates)")
    episodes: int = Field(ge=0, description="Episodes finished during training")
    mean_episode_reward: float | None = Field(
        default=None, description="Mean return, last 100 episodes"
    )
    mean_episode_length: float | None = Field(
        default=None, description="Mean length, last 100 episodes"
    )
    loss_policy: float | None = _OPTIONAL_METRIC
    loss_value: float | None = _OPTIONAL_METRIC
    loss_entropy: float | None = _OPTIONAL_METRIC
    loss_total: float | None = _OPTIONAL_METRIC
    clip_fraction: float | None = _OPTIONAL_METRIC
    approx_kl: float | None = _OPTIONAL_METRIC
    explained_variance: float | None = _OPTIONAL_METRIC
    learning_rate: float | None = _OPTIONAL_METRIC
    adv_mean: float | None = Field(default=None, description="Mean advantage of the last rollout")
    adv_std: float | None = Field(
        default=None, description="Std of the advantages of the last rollout"
    )
    grad_norm: float | None = Field(
        default=None, description="Global gradient norm of the last update"
    )
    duration_sec: float = Field(ge=0, description="Wall time of learn()")
    steps_per_sec: float = Field(ge=0, description="total_timesteps / duration_sec")
    evaluation: EvaluationResult | None = Field(default=None, description="The final evaluation")
    artifacts: Artifacts = Field(default_factory=Artifacts, description="Files written")
    config: PPOConfig = Field(description="The configuration the run used")

    @field_validator(
        "mean_episode_reward",
        "mean_episode_length",
        "loss_policy",
        "loss_value",
        "loss_entropy",
        "loss_total",
        "clip_fraction",
        "approx_kl",
        "explained_variance",
        "learning_rate",
        "adv_mean",
        "adv_std",
        "grad_norm",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return finite_or_none(value)


class DatasetManifest(FrozenDTO):
    """What a BC dataset holds and where it came from; ``sha256`` is of the .npz file.

    Example:
        >>> import hashlib
        >>> manifest = DatasetManifest(
        ...     env="chess", expert="stockfish:1", positions=20_000, seed=0, masked=True,
        ...     sha256=hashlib.sha256(b"the .npz file").hexdigest(),
        ...     observation_shape=(8, 8, 12), action_size=4672)
        >>> DatasetManifest.model_validate_json(manifest.model_dump_json()) == manifest
        True
    """

    env: WorldName = Field(description="The env the positions are from")
    expert: str = Field(description="The expert that labelled them, e.g. stockfish:1")
    positions: int = Field(ge=1, description="Labelled observations")
    seed: int = Field(ge=0, description="Seed of the games that produced them")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Hash of the .npz file")
    observation_shape: tuple[int, ...] | dict[str, tuple[int, ...]] = Field(
        description="Shape of one observation; per key for a Dict observation (a flattened world)"
    )
    action_size: int = Field(ge=1, description="Number of discrete actions (joint, if several)")
    action_nvec: tuple[int, ...] | None = Field(
        default=None,
        description="Sizes of a MultiDiscrete action's parts; None for a Discrete action",
    )
    masked: bool = Field(default=False, description="Legal-action masks are stored (chess)")
    learner: str | None = Field(
        default=None, description="The world agent whose seat the expert played"
    )
    sources: dict[str, int] = Field(
        default_factory=dict, description="Positions per kind of game, e.g. vs_random, self_play"
    )


class BCEpoch(FrozenDTO):
    """One epoch of behaviour cloning.

    Example:
        >>> epoch = BCEpoch(epoch=1, loss=2.31, accuracy=0.42, val_loss=2.4, val_accuracy=0.4)
        >>> epoch.loss = 0.0
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for BCEpoch
        loss
          Instance is frozen ...
    """

    epoch: int = Field(ge=1)
    loss: float = Field(description="Mean training loss (NLL minus the entropy bonus)")
    accuracy: float = Field(ge=0, le=1, description="Training top-1 accuracy")
    val_loss: float = Field(description="Validation NLL")
    val_accuracy: float = Field(ge=0, le=1, description="Validation top-1 accuracy")


class BCTrainingResult(FrozenDTO):
    """One behaviour-cloning run; the metrics are those of the best (restored) epoch.

    Example:
        >>> manifest = DatasetManifest(
        ...     env="chess", expert="stockfish:1", positions=20_000, seed=0, sha256="0" * 64,
        ...     observation_shape=(8, 8, 12), action_size=4672, masked=True)
        >>> epoch = BCEpoch(epoch=1, loss=2.31, accuracy=0.42, val_loss=2.4, val_accuracy=0.4)
        >>> run = BCTrainingResult(
        ...     dataset=manifest, accuracy=0.42, loss=2.31, val_accuracy=0.4, val_loss=2.4,
        ...     learning_rate=1e-3, batch_size=256, epochs=1, best_epoch=1, weight_decay=1e-4,
        ...     device="cpu", duration_sec=12.5, history=(epoch,), config=BCConfig())
        >>> BCTrainingResult.model_validate_json(run.model_dump_json()) == run
        True
    """

    dataset: DatasetManifest = Field(description="The data it learned from")
    accuracy: float = Field(ge=0, le=1, description="Training top-1 accuracy")
    loss: float = Field(description="Training loss")
    val_accuracy: float = Field(ge=0, le=1, description="Validation top-1 accuracy")
    val_loss: float = Field(description="Validation NLL")
    learning_rate: float = Field(gt=0)
    batch_size: int = Field(ge=1)
    epochs: int = Field(ge=1, description="Epochs run (early stopping may cut them short)")
    best_epoch: int = Field(ge=1, description="The epoch whose weights were kept")
    weight_decay: float = Field(ge=0)
    device: str
    duration_sec: float = Field(ge=0)
    history: tuple[BCEpoch, ...] = Field(description="Every epoch, in order")
    evaluation: EvaluationResult | None = Field(default=None, description="Games after training")
    artifacts: Artifacts = Field(default_factory=Artifacts)
    config: BCConfig = Field(description="The configuration the run used")


class AnnealStageResult(FrozenDTO):
    """One stage of an anneal: what it measured against what it needed.

    Example:
        >>> run = PPOTrainingResult(
        ...     env_id="chess_env/Chess-v0", algorithm="MaskablePPO", seed=0, device="cpu",
        ...     total_timesteps=4096, updates=64, episodes=40, duration_sec=30.0,
        ...     steps_per_sec=136.5, config=PPOConfig(total_timesteps=4096, n_envs=2))
        >>> stage = AnnealStageResult(
        ...     cycle=1, mode="ppo", metrics={"score": 0.41}, threshold=0.05, passed=False,
        ...     flags=("score_drop",), rolled_back=True, result=run)
        >>> type(AnnealStageResult.model_validate_json(stage.model_dump_json()).result).__name__
        'PPOTrainingResult'
    """

    cycle: int = Field(ge=0, description="The stage's index in the schedule")
    mode: Literal["bc", "dagger", "ppo"]
    metrics: dict[str, float | None] = Field(
        description="bc: accuracy, val_accuracy, loss; ppo: score, loss_total, ..."
    )
    threshold: float | None = Field(
        description="bc: the accuracy needed; dagger, ppo: the largest score drop tolerated"
    )
    passed: bool
    flags: tuple[str, ...] = Field(default=(), description="Why it did not pass, if it did not")
    rolled_back: bool = Field(
        default=False, description="The model went back to the previous stage's"
    )
    result: BCTrainingResult | PPOTrainingResult = Field(description="The stage's run")


class AnnealSummary(FrozenDTO):
    """A whole anneal: PASS when every stage passed, HOLD after a flagged PPO stage, FAIL when a
    BC stage missed its accuracy (the run stops there).

    Example:
        >>> AnnealSummary.model_json_schema()["properties"]["status"]["enum"]
        ['PASS', 'HOLD', 'FAIL']
    """

    status: AnnealStatus
    stages: tuple[AnnealStageResult, ...]
    baselines: dict[str, float] = Field(
        description="Reference scores, e.g. a random policy against the evaluation opponent"
    )
    final_evaluation: EvaluationResult | None = Field(description="The kept model's match")
    duration_sec: float = Field(ge=0)
    cpu_sec: float = Field(
        ge=0,
        description="CPU time of the run: this process and its finished children (labelling "
        "workers, the engines they ran), user + system",
    )
    artifacts: Artifacts = Field(default_factory=Artifacts)
    platform: dict[str, str] = Field(
        default_factory=dict,
        description="What the numbers rest on: torch and its CPU kernel path (AVX-512 and AVX2 "
        "train different weights), python-chess, Stockfish, the CPU (training.platform)",
    )
    config: AnnealConfig
