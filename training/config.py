"""Frozen training configurations, loadable from YAML with ``--set key=value`` overrides.

- ``PPOConfig``, ``BCConfig``, ``AnnealConfig``, ``EvalConfig``: what each command runs with; every
  result DTO carries the config it ran with, so a result says how to reproduce it.
- ``load_training_config(kind, path, overrides)``: a YAML file (or nothing: the defaults) plus
  dotted overrides such as ``ppo.total_timesteps=4096``, validated into the config; a rejection is a
  ``TrainingConfigError`` naming the field path (and, for an unknown key, the nearest valid ones).
- ``config_keys(model)``: every settable key, dotted, with its type, default and description (what
  ``python -m training COMMAND --help`` lists).
- ``resolve_out_dir(out_dir, command)``: where a run writes; ``out_dir="auto"`` (every config's
  default) is a new ``runs/<command>-<time>`` folder, ``None`` writes nothing.
"""

from __future__ import annotations

import os
import types
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, overload

import yaml
from pydantic import AfterValidator, BaseModel, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from chess_env.core.players import check_player
from envkit.command_line import UsageError, did_you_mean
from envkit.dto import FrozenDTO
from envkit.errors import ConfigError

__all__ = [
    "AUTO",
    "CONFIG_KINDS",
    "AnnealConfig",
    "BCConfig",
    "ConfigKey",
    "ConfigKind",
    "DaggerConfig",
    "EvalConfig",
    "PPOConfig",
    "TrainingConfig",
    "TrainingConfigError",
    "apply_overrides",
    "config_keys",
    "load_training_config",
    "resolve_out_dir",
    "validation_message",
]

WorldName = Literal["chess", "trade", "forage"]
Features = Literal["auto", "chess_cnn", "chess_cnn_attacks", "chess_cnn_destinations", "mlp"]
AUTO = "auto"
OUT_DIR_HELP = (
    "Artefacts folder (the model among them); auto: a new runs/<command>-<time> under the "
    "working directory, named when the run starts; null: write nothing"
)
RUNS_DIR = "runs"


def _player(spec: str) -> str:
    """A player spec of ``chess_env.core.players``, checked at load (no engine or file opened)."""
    check_player(spec)
    return spec


CheckedPlayer = Annotated[str, AfterValidator(_player)]


class TrainingConfigError(ConfigError, UsageError):
    """A configuration file or override that cannot be used; the message names the field.

    A ``ValueError`` (and ``envkit.command_line.UsageError``: exit status 2 on the command line).
    """


class PPOConfig(FrozenDTO):
    """PPO / MaskablePPO on one env; SB3's hyperparameters keep SB3's names and meanings.

    Example:
        >>> config = load_training_config("ppo", overrides=["total_timesteps=4096", "n_steps=128"])
        >>> config.total_timesteps, config.n_steps, config.batch_size
        (4096, 128, 256)
        >>> load_training_config("ppo", overrides=["gamma=1.5"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        training.config.TrainingConfigError: ppo config: gamma: Input should be less than or ...
    """

    env: str = Field(
        default="chess_env/Chess-v0",
        description="A Gymnasium id, or world:trade / world:forage / world:PATH.yaml (a world "
        "file, relative to the working directory; one learner, others random)",
    )
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="Passed to the env")
    learner: str | None = Field(
        default=None, description="A world's learning agent (default: the first)"
    )
    total_timesteps: int = Field(default=20_000, ge=1, description="Environment steps to train for")
    n_envs: int | None = Field(default=None, ge=1, description="Parallel envs (default: CPU cores)")
    vec_env: Literal["subproc", "dummy"] = Field(
        default="subproc", description="SB3's VecEnv class"
    )
    seed: int = Field(default=0, ge=0, description="Seeds the envs, the network and the evaluation")
    n_steps: int = Field(default=256, ge=1, description="Steps per env per rollout")
    batch_size: int = Field(default=256, ge=2, description="Minibatch size")
    n_epochs: int = Field(default=4, ge=1, description="Passes over each rollout")
    learning_rate: float = Field(default=3e-4, gt=0)
    gamma: float = Field(default=0.99, gt=0, le=1)
    gae_lambda: float = Field(default=0.95, ge=0, le=1)
    clip_range: float = Field(default=0.2, gt=0)
    ent_coef: float = Field(default=0.01, ge=0)
    vf_coef: float = Field(default=0.5, ge=0)
    max_grad_norm: float = Field(default=0.5, gt=0)
    features: Features = Field(
        default="auto",
        description="auto: the chess CNN for chess boards, an MLP otherwise; chess_cnn_attacks: "
        "the chess CNN reading the squares each side attacks too (training.attacks); "
        "chess_cnn_destinations: that and where its pieces would give check, with a head that "
        "also scores each move's landing square (training.policies.DestinationActionHead)",
    )
    init_model: str | None = Field(
        default=None, description="Continue from this saved model (.zip)"
    )
    eval_opponent: CheckedPlayer = Field(
        default="random", description="Chess opponent of the evaluations"
    )
    eval_games: int = Field(default=20, ge=0, description="Games of the final evaluation (0: none)")
    eval_every: int | None = Field(
        default=None,
        ge=1,
        description="Evaluate every this many timesteps for the curve (None: never)",
    )
    eval_games_during: int = Field(
        default=10, ge=1, description="Games of each periodic evaluation"
    )
    checkpoint_every: int | None = Field(default=None, ge=1, description="Save every N timesteps")
    tensorboard: bool = Field(default=False, description="Log to <out_dir>/tensorboard")
    progress_bar: bool = Field(default=True, description="A tqdm bar on stderr")
    out_dir: str | None = Field(default=AUTO, description=OUT_DIR_HELP)
    device: str = Field(default="cpu", description="torch device")


class BCConfig(FrozenDTO):
    """Behaviour cloning from an expert's labelled positions.

    Example:
        >>> BCConfig(positions=5000).model_dump(include={"env", "expert", "positions", "epochs"})
        {'env': 'chess', 'expert': 'auto', 'positions': 5000, 'epochs': 3}
        >>> load_training_config("bc", overrides=["learning_rate=0"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        training.config.TrainingConfigError: bc config: learning_rate: Input should be greater ...
    """

    env: WorldName = Field(default="chess", description="chess, or a built-in world")
    expert: str = Field(
        default="auto",
        description="chess: stockfish:DEPTH, alphabeta:DEPTH or auto (Stockfish if installed); "
        "worlds: scripted",
    )
    positions: int = Field(default=20_000, ge=10, description="Positions to label")
    dataset: str | None = Field(
        default=None, description="Reuse this .npz (its manifest beside it)"
    )
    workers: int = Field(default=1, ge=1, description="Processes labelling chess positions at once")
    epochs: int = Field(default=3, ge=1)
    batch_size: int = Field(default=256, ge=1)
    learning_rate: float = Field(default=1e-3, gt=0)
    weight_decay: float = Field(default=1e-4, ge=0)
    entropy_coef: float = Field(default=1e-3, ge=0, description="Entropy bonus in the loss")
    mate_coef: float = Field(
        default=1.0,
        ge=0,
        description="Weight of the likelihood of any mating move where the learner's own games "
        "could mate (rows a DAgger round marked)",
    )
    avoid_coef: float = Field(
        default=1.0,
        ge=0,
        description="Weight of the unlikelihood of moves that drew the learner's own games "
        "(rows a DAgger round marked; none in an expert's games)",
    )
    val_fraction: float = Field(default=0.05, gt=0, lt=1, description="Held out for validation")
    patience: int = Field(
        default=2, ge=1, description="Epochs without val_loss progress before stopping"
    )
    threads: int = Field(
        default=1,
        ge=1,
        description="torch threads for the batches: on a 2-core machine a second one adds "
        "nothing to the chess CNN's batches, and slows them when other work shares the cores",
    )
    seed: int = Field(default=0, ge=0)
    learner: str | None = Field(
        default=None, description="A world's agent to imitate (default: first)"
    )
    features: Features = Field(default="auto", description="The network, as PPOConfig.features")
    eval_opponent: CheckedPlayer = Field(
        default="random", description="Chess opponent of the evaluation"
    )
    eval_games: int = Field(default=20, ge=0, description="Games after training (0: none)")
    progress_bar: bool = Field(default=True, description="tqdm bars on stderr")
    out_dir: str | None = Field(default=AUTO, description=OUT_DIR_HELP)
    device: str = Field(default="cpu", description="torch device")


class DaggerConfig(FrozenDTO):
    """DAgger rounds: the policy plays, the expert labels the positions it reached, BC again.

    Example:
        >>> overrides = ["schedule=[bc, dagger]", "dagger.games=100"]
        >>> config = load_training_config("anneal", overrides=overrides)
        >>> config.dagger.games, config.dagger.expert
        (100, 'stockfish:5')
        >>> DaggerConfig(replay=-1)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for DaggerConfig
        replay
          Input should be greater than or equal to 0 ...
    """

    expert: str = Field(
        default="stockfish:5", description="Labels the policy's positions (see bc.expert)"
    )
    games: int = Field(
        default=300, ge=1, description="Games the policy plays a round, colours alternating"
    )
    opponent: str = Field(
        default="random", description="Who the policy plays to reach its positions"
    )
    replay: float = Field(
        default=1.0,
        ge=0,
        description="Rows of the BC dataset mixed in per DAgger row (against forgetting)",
    )
    focus: int = Field(
        default=1,
        ge=1,
        description="Times each aggregated row where a move would mate or draw is trained on per "
        "epoch (the rows the policy's result turns on, a few percent of the data)",
    )
    epochs: int = Field(default=2, ge=1, description="BC epochs on each round's data")
    learning_rate: float = Field(default=5e-4, gt=0, description="BC learning rate in the rounds")
    max_plies: int = Field(default=300, ge=1, description="Ply cap of the policy's games")


class AnnealConfig(FrozenDTO):
    """BC then PPO: stages in order, each checked against a threshold (see ``training.anneal``).

    Example:
        >>> AnnealConfig().schedule, AnnealConfig(schedule=("ppo",), bc={"env": "trade"}).bc.env
        (('bc', 'ppo'), 'trade')
        >>> AnnealConfig(bc={"env": "trade"})
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for AnnealConfig
          Value error, the anneal trains chess only; bc.env must be chess ...
    """

    schedule: tuple[Literal["bc", "dagger", "ppo"], ...] = Field(
        default=("bc", "ppo"), min_length=1
    )
    bc: BCConfig = Field(
        default_factory=BCConfig,
        description="Every BC stage's config (out_dir, seed and evaluation are the anneal's)",
    )
    dagger: DaggerConfig = Field(
        default_factory=DaggerConfig, description="Every DAgger stage (trained with bc's batches)"
    )
    ppo: PPOConfig = Field(
        default_factory=PPOConfig,
        description="Every PPO stage's config (out_dir, seed and evaluation are the anneal's)",
    )
    bc_accuracy_threshold: float = Field(
        default=0.2, ge=0, le=1, description="A BC stage passes at this validation accuracy"
    )
    score_tolerance: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="A PPO or DAgger stage may lose this much score: else a flag",
    )
    loss_tolerance: float | None = Field(
        default=None, gt=0, description="Relative rise of loss_total between PPO stages flagged"
    )
    rollback: bool = Field(
        default=True, description="A flagged stage returns to the model it started from"
    )
    eval_opponent: CheckedPlayer = Field(
        default="random", description="Opponent of every stage's evaluation"
    )
    eval_games: int = Field(default=40, ge=1, description="Games of every stage's evaluation")
    final_eval_games: int = Field(default=200, ge=1, description="Games of the final evaluation")
    seed: int = Field(default=0, ge=0)
    out_dir: str | None = Field(default=AUTO, description=OUT_DIR_HELP)

    @model_validator(mode="after")
    def _ppo_after_bc_only(self) -> AnnealConfig:
        if self.bc.env != "chess" and {"bc", "dagger"} & set(self.schedule):
            raise ValueError("the anneal trains chess only; bc.env must be chess")
        return self


class EvalConfig(FrozenDTO):
    """A match of a saved model (or a built-in player) against a chess opponent.

    Example:
        >>> EvalConfig(model="greedy", opponent="stockfish:3").games
        200
        >>> load_training_config("eval", overrides=["opponent=stockfish:3"])
        Traceback (most recent call last):
        ...
        training.config.TrainingConfigError: eval config: model: Field required
    """

    model: CheckedPlayer = Field(
        description="The player to evaluate: a saved SB3 model (runs/x/model.zip or model:PATH), "
        "or any other player spec (greedy, alphabeta:2, stockfish:3, ...)"
    )
    opponent: CheckedPlayer = Field(
        default="random",
        description="Any player spec: random, greedy, stockfish:3, alphabeta:2, ...",
    )
    games: int = Field(default=200, ge=1)
    seed: int = Field(default=0, ge=0)
    max_plies: int = Field(default=512, ge=1)
    progress_bar: bool = Field(default=True, description="A tqdm bar on stderr")
    out_dir: str | None = Field(default=AUTO, description=OUT_DIR_HELP)


ConfigKind = Literal["ppo", "bc", "anneal", "eval"]
TrainingConfig = PPOConfig | BCConfig | AnnealConfig | EvalConfig
_File = str | os.PathLike[str] | None  # a YAML config file, or None: the defaults
_Sets = list[str] | None  # --set overrides, dotted.key=value
CONFIG_KINDS: dict[str, type[TrainingConfig]] = {
    "ppo": PPOConfig,
    "bc": BCConfig,
    "anneal": AnnealConfig,
    "eval": EvalConfig,
}


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``data`` with each ``dotted.key=value`` set; the value is read as YAML (``3``, ``true``).

    Example:
        >>> apply_overrides({"ppo": {"seed": 0}}, ["ppo.seed=3", "schedule=[bc, ppo, ppo]"])
        {'ppo': {'seed': 3}, 'schedule': ['bc', 'ppo', 'ppo']}
    """
    result = dict(data)
    for override in overrides:
        key, separator, text = override.partition("=")
        if not separator or not key.strip():
            raise TrainingConfigError(f"--set {override!r}: expected key=value, e.g. ppo.seed=3")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise TrainingConfigError(
                f"--set {override!r}: the value is not YAML ({error})"
            ) from None
        *parents, leaf = key.strip().split(".")
        node = result
        for depth, part in enumerate(parents):
            child = node.get(part, {})
            if not isinstance(child, dict):
                path = ".".join(parents[: depth + 1])
                raise TrainingConfigError(f"--set {override!r}: {path} is not a mapping")
            node[part] = child = dict(child)
            node = child
        node[leaf] = value
    return result


def read_yaml_mapping(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The mapping a YAML config file holds ({} without a file); ``TrainingConfigError`` names the
    file when it cannot be read or parsed, or holds something else."""
    if path is None:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise TrainingConfigError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise TrainingConfigError(
            f"{path}: the top level must be a mapping, got {type(data).__name__}"
        )
    return data


@overload
def load_training_config(
    kind: Literal["ppo"], path: _File = ..., overrides: _Sets = ...
) -> PPOConfig: ...
@overload
def load_training_config(
    kind: Literal["bc"], path: _File = ..., overrides: _Sets = ...
) -> BCConfig: ...
@overload
def load_training_config(
    kind: Literal["anneal"], path: _File = ..., overrides: _Sets = ...
) -> AnnealConfig: ...
@overload
def load_training_config(
    kind: Literal["eval"], path: _File = ..., overrides: _Sets = ...
) -> EvalConfig: ...
@overload
def load_training_config(
    kind: str, path: _File = ..., overrides: _Sets = ...
) -> TrainingConfig: ...
def load_training_config(kind: str, path: _File = None, overrides: _Sets = None) -> TrainingConfig:
    """The ``kind`` config (a ``ConfigKind``) from a YAML file and overrides; errors name the field
    path. ``kind`` is checked at run time too: it comes from the command line."""
    if kind not in CONFIG_KINDS:
        raise TrainingConfigError(
            f"unknown config kind {kind!r}; expected one of {sorted(CONFIG_KINDS)}"
        )
    data = read_yaml_mapping(path)
    data = apply_overrides(data, overrides or [])
    model = CONFIG_KINDS[kind]
    try:
        config = model.model_validate(data)
    except ValidationError as error:
        raise TrainingConfigError(validation_message(kind, model, error)) from None
    _check_world_envs(kind, config)
    return config


def _check_world_envs(kind: str, config: TrainingConfig) -> None:
    """Load each ``world:`` env now, so a missing or bad world file is a config error naming
    ``env``. Here rather than in ``PPOConfig``: a stored result carries its config, and reading
    it elsewhere must not need the world file."""
    from training.envs import WORLD_PREFIX, load_training_world

    sections = {"": config, "ppo.": getattr(config, "ppo", None)}
    for prefix, section in sections.items():
        if isinstance(section, PPOConfig) and section.env.startswith(WORLD_PREFIX):
            try:
                load_training_world(section.env.removeprefix(WORLD_PREFIX))
            except ValueError as error:  # WorldConfigError is one
                raise TrainingConfigError(
                    f"{kind} config: {prefix}env: {section.env}: {error}"
                ) from None


def validation_message(kind: str, model: type[BaseModel], error: ValidationError) -> str:
    """``kind config: path: problem; ...``; an unknown key names the nearest valid keys.

    Example:
        >>> try:
        ...     PPOConfig(totl_timesteps=5)
        ... except ValidationError as error:
        ...     print(validation_message("ppo", PPOConfig, error))
        ppo config: totl_timesteps: unknown key; did you mean total_timesteps?
    """
    keys = [key.name for key in config_keys(model)]
    problems = []
    for problem in error.errors():
        path = ".".join(str(part) for part in problem["loc"]) or "(root)"
        message = problem["msg"].removeprefix("Value error, ")  # pydantic's wrapping of ours
        if problem["type"] == "extra_forbidden":
            message = "; ".join(filter(None, ["unknown key", did_you_mean(path, keys)]))
        problems.append(f"{path}: {message}")
    return f"{kind} config: {'; '.join(problems)}"


@dataclass(frozen=True)
class ConfigKey:
    """One settable key of a config: its dotted name, type, default (as YAML) and description."""

    name: str
    type: str
    default: str
    description: str

    def __str__(self) -> str:
        text = f"{self.name} ({self.type}, default {self.default})"
        return f"{text}: {self.description}" if self.description else text


def config_keys(model: type[BaseModel], defaults: dict[str, Any] | None = None) -> list[ConfigKey]:
    """Every key of ``model``, nested configs dotted (``ppo.total_timesteps``), in field order.

    ``defaults`` (a ``model_dump()``) replaces the fields' own defaults, e.g. a packaged config's.

    Example:
        >>> [str(key) for key in config_keys(AnnealConfig) if key.name.endswith("total_timesteps")]
        ['ppo.total_timesteps (int, default 20000): Environment steps to train for']
        >>> str(config_keys(EvalConfig)[2])
        'games (int, default 200)'
    """
    keys = []
    for name, field in model.model_fields.items():
        if name in FrozenDTO.model_fields:  # schema_version: the DTO's, not the run's
            continue
        nested = field.annotation
        given = (defaults or {}).get(name)
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            keys += [
                ConfigKey(f"{name}.{key.name}", key.type, key.default, key.description)
                for key in config_keys(nested, given)
            ]
            continue
        default = _yaml_text(given) if defaults is not None else _default_text(field)
        keys.append(ConfigKey(name, _type_name(field.annotation), default, field.description or ""))
    return keys


def _type_name(annotation: Any) -> str:
    """A field's type as a reader of YAML sees it: ``int | null``, ``subproc|dummy``, ..."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "|".join(str(arg) for arg in args)
    if origin in (Union, types.UnionType):
        names = [_type_name(arg) for arg in args if arg is not type(None)]
        return " | ".join(names + (["null"] if type(None) in args else []))
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def _default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    return _yaml_text(field.get_default(call_default_factory=True))


def _yaml_text(value: Any) -> str:
    """``value`` as it would be written after ``--set key=``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(_yaml_text(item) for item in value)}]"
    return str(value)


def resolve_out_dir(out_dir: str | None, command: str) -> str | None:
    """``out_dir`` as given, or for ``"auto"`` a folder ``runs/<command>-<time>`` that does not
    exist yet (``-2``, ``-3``, ... appended within one second)."""
    if out_dir != AUTO:
        return out_dir
    stem = Path(RUNS_DIR) / f"{command}-{datetime.now():%Y%m%d-%H%M%S}"
    path, number = stem, 1
    while path.exists():
        number += 1
        path = stem.with_name(f"{stem.name}-{number}")
    return str(path)
