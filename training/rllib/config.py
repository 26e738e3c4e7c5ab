"""``RLlibConfig``: one RLlib PPO run, frozen, loadable from YAML with ``--set`` overrides.

Fields keep RLlib's names (``num_env_runners``, ``train_batch_size``, ``minibatch_size``,
``num_epochs``, ``lambda_``, ``clip_param``, ...) so its documentation applies as it is; the
result DTO carries the config, so a result says how to reproduce it.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from envkit.dto import FrozenDTO
from training.config import TrainingConfigError, apply_overrides, read_yaml_mapping
from training.rllib.envs import check_env_name, is_multi_agent

__all__ = ["PolicyMode", "RLlibConfig", "load_rllib_config"]

PolicyMode = Literal["shared", "per_agent"]


class RLlibConfig(FrozenDTO):
    """PPO on RLlib's new API stack (RLModule, env runners, learner), locally or on a cluster.

    Example:
        >>> config = RLlibConfig(env="world:forage", iterations=2, num_env_runners=0)
        >>> config.policies, config.address is None
        ('shared', True)
        >>> try:
        ...     RLlibConfig(iterations=0)
        ... except ValueError as error:
        ...     print(error.errors()[0]["loc"], error.errors()[0]["msg"])
        ('iterations',) Input should be greater than or equal to 1
    """

    env: str = Field(
        default="chess_env/Chess-v0",
        description="chess_env/Chess-v0, chess:selfplay, world:forage or world:trade",
    )
    env_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Passed to the env, e.g. {max_plies: 64, opponent: random} for chess",
    )
    policies: PolicyMode = Field(
        default="shared",
        description="Multi-agent envs: one policy for every agent (self-play, parameter "
        "sharing) or one per agent",
    )
    iterations: int = Field(default=1, ge=1, description="Training iterations (algo.train() calls)")
    address: str | None = Field(
        default=None,
        description="Ray cluster to join ('auto', 'ray://host:10001'); None: a local Ray",
    )
    num_cpus: int | None = Field(
        default=None,
        ge=1,
        description="CPUs of the local Ray (default: the cores, at least runners + 1)",
    )
    num_env_runners: int = Field(
        default=1, ge=0, description="Remote sampling actors (0: sample in the driver process)"
    )
    num_envs_per_env_runner: int = Field(
        default=1, ge=1, description="Envs vectorised in each runner"
    )
    num_cpus_per_env_runner: float = Field(
        default=1.0, gt=0, description="CPUs Ray reserves per runner"
    )
    seed: int = Field(default=0, ge=0, description="Seeds RLlib, the envs and the networks")
    train_batch_size: int = Field(
        default=2000,
        ge=2,
        description="Env steps (agent steps, multi-agent) per training iteration",
    )
    minibatch_size: int = Field(default=128, ge=2, description="SGD minibatch size")
    num_epochs: int = Field(default=4, ge=1, description="Passes over each train batch")
    lr: float = Field(default=3e-4, gt=0, description="Learning rate")
    gamma: float = Field(default=0.99, gt=0, le=1)
    lambda_: float = Field(default=0.95, ge=0, le=1, description="GAE lambda")
    clip_param: float = Field(default=0.2, gt=0, description="PPO's ratio clip")
    entropy_coeff: float = Field(default=0.01, ge=0)
    vf_loss_coeff: float = Field(default=0.5, ge=0)
    fcnet_hiddens: tuple[int, ...] = Field(
        default=(256, 256),
        min_length=1,
        description="MLP encoder sizes (chess boards are flattened)",
    )
    torch_threads: int = Field(default=1, ge=1, description="torch threads of the driver's learner")
    checkpoint_dir: str | None = Field(
        default=None, description="Save the algorithm here at the end"
    )

    @field_validator("env")
    @classmethod
    def _known_env(cls, env: str) -> str:
        return check_env_name(env)

    @field_validator("fcnet_hiddens")
    @classmethod
    def _positive_sizes(cls, sizes: tuple[int, ...]) -> tuple[int, ...]:
        if any(size < 1 for size in sizes):
            raise ValueError(f"layer sizes must be positive, got {list(sizes)}")
        return sizes

    @model_validator(mode="after")
    def _consistent(self) -> RLlibConfig:
        if self.minibatch_size > self.train_batch_size:
            raise ValueError(
                f"minibatch_size ({self.minibatch_size}) must not exceed "
                f"train_batch_size ({self.train_batch_size})"
            )
        if self.policies == "per_agent" and not is_multi_agent(self.env):
            raise ValueError(f"policies='per_agent' needs a multi-agent env, not {self.env!r}")
        return self


def load_rllib_config(
    path: str | os.PathLike[str] | None = None,
    overrides: list[str] | None = None,
    **fields: Any,
) -> RLlibConfig:
    """The config from a YAML file, then ``fields`` (CLI flags), then ``--set`` overrides.

    A rejection is ``training.config.TrainingConfigError`` naming the field, e.g.
    ``rllib config: iterations: Input should be greater than or equal to 1``.

    Example:
        >>> load_rllib_config(None, ["iterations=3"], env="world:forage").iterations
        3
    """
    data = read_yaml_mapping(path)
    data = apply_overrides({**data, **fields}, overrides or [])
    try:
        return RLlibConfig.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors()
        )
        raise TrainingConfigError(f"rllib config: {problems}") from None
