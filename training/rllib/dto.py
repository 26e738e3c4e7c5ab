"""The frozen result of an RLlib run, a sibling of ``training.dto.PPOTrainingResult``.

- ``RLlibPolicyStats``: one policy's (RLModule's) last learner statistics.
- ``RLlibIteration``: one training iteration, for the learning curve.
- ``RLlibTrainingResult``: the run. Fields shared with the SB3 result keep its names and
  meanings (``env_id``, ``algorithm``, ``total_timesteps``, ``episodes``, ``mean_episode_reward``,
  ``loss_policy``, ``approx_kl``, ``duration_sec``, ``steps_per_sec``, ...); RLlib's own numbers
  (per policy, per agent, env runners, the Ray address) are added beside them. The SB3 DTO
  cannot be reused as is: its ``config`` is a ``PPOConfig`` and its algorithm SB3's.

Every metric RLlib may leave undefined (no episode finished in an iteration, a NaN loss) is None,
never NaN, so ``model_dump(mode="json")`` loads back equal.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from envkit.dto import FrozenDTO
from training.dto import finite_or_none
from training.rllib.config import RLlibConfig

__all__ = ["RLlibIteration", "RLlibPolicyStats", "RLlibTrainingResult"]

_LEARNER_METRIC = Field(default=None, description="RLlib learner's value in the last iteration")


class RLlibPolicyStats(FrozenDTO):
    """One policy's learner statistics from the last iteration (RLlib's names in the docs).

    Example:
        >>> RLlibPolicyStats(policy_loss=float("nan"), entropy=3.2).policy_loss is None
        True
    """

    policy_loss: float | None = _LEARNER_METRIC
    vf_loss: float | None = _LEARNER_METRIC
    total_loss: float | None = _LEARNER_METRIC
    entropy: float | None = Field(
        default=None, description="Mean entropy of the action distribution"
    )
    mean_kl_loss: float | None = Field(
        default=None, description="Mean KL(old || new) of the update"
    )
    vf_explained_var: float | None = _LEARNER_METRIC
    learning_rate: float | None = _LEARNER_METRIC
    module_steps_trained: int = Field(
        default=0, ge=0, description="Agent steps this policy trained on"
    )
    trainable_parameters: int = Field(default=0, ge=0, description="Parameters of its RLModule")

    @field_validator(
        "policy_loss",
        "vf_loss",
        "total_loss",
        "entropy",
        "mean_kl_loss",
        "vf_explained_var",
        "learning_rate",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return finite_or_none(value)


class RLlibIteration(FrozenDTO):
    """One ``algo.train()`` call."""

    iteration: int = Field(ge=1)
    timesteps: int = Field(ge=0, description="Env steps sampled so far (lifetime)")
    episodes: int = Field(ge=0, description="Episodes finished so far (lifetime)")
    episode_return_mean: float | None = Field(
        default=None, description="None if no episode finished"
    )
    duration_sec: float = Field(ge=0, description="Wall time of this iteration")

    @field_validator("episode_return_mean", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return finite_or_none(value)


class RLlibTrainingResult(FrozenDTO):
    """One RLlib PPO run: what RLlib reported after the last iteration, and the config.

    The top-level losses are those of the only policy (single-agent envs, or ``policies=
    "shared"``); with one policy per agent they are None and ``policies`` has each one's.
    """

    env_id: str = Field(description="The env's name (see training.rllib.envs.ENV_NAMES)")
    algorithm: Literal["PPO"] = Field(default="PPO", description="RLlib's algorithm")
    framework: Literal["torch"] = Field(default="torch")
    masked: bool = Field(description="The RLModule masked illegal actions (chess)")
    multi_agent: bool = Field(description="A MultiAgentEnv (PettingZoo) with a policy mapping")
    seed: int = Field(ge=0)
    ray_version: str = Field(description="ray.__version__ of the driver")
    cluster: str = Field(description="'local' (a Ray started for this run) or the address joined")
    num_env_runners: int = Field(ge=0, description="Remote env runners (0: the driver sampled)")
    cluster_cpus: float = Field(ge=0, description="CPUs the Ray cluster had")
    iterations: int = Field(ge=1, description="Training iterations run")
    total_timesteps: int = Field(ge=0, description="Env steps sampled (lifetime)")
    agent_timesteps: int = Field(ge=0, description="Agent steps sampled (all agents)")
    episodes: int = Field(ge=0, description="Episodes finished during training")
    mean_episode_reward: float | None = Field(
        default=None,
        description="Mean return (summed over agents) over RLlib's window of recent episodes",
    )
    mean_episode_length: float | None = Field(
        default=None, description="Mean env steps per episode"
    )
    agent_episode_rewards: dict[str, float] = Field(
        default_factory=dict, description="Mean return per agent (multi-agent envs)"
    )
    illegal_actions: int | None = Field(
        default=None, ge=0, description="Actions outside the mask, all episodes (None: no mask)"
    )
    loss_policy: float | None = _LEARNER_METRIC
    loss_value: float | None = _LEARNER_METRIC
    loss_total: float | None = _LEARNER_METRIC
    entropy: float | None = Field(default=None, description="Mean entropy (SB3 logs its negative)")
    approx_kl: float | None = Field(default=None, description="RLlib's mean_kl_loss")
    explained_variance: float | None = Field(default=None, description="RLlib's vf_explained_var")
    learning_rate: float | None = _LEARNER_METRIC
    policies: dict[str, RLlibPolicyStats] = Field(description="Learner statistics by policy")
    history: tuple[RLlibIteration, ...] = Field(description="Every iteration, in order")
    duration_sec: float = Field(ge=0, description="Wall time of the iterations")
    setup_sec: float = Field(ge=0, description="Wall time of Ray start and algorithm build")
    steps_per_sec: float = Field(ge=0, description="total_timesteps / duration_sec")
    checkpoint: str | None = Field(default=None, description="Where the algorithm was saved")
    config: RLlibConfig = Field(description="The configuration the run used")

    @field_validator(
        "mean_episode_reward",
        "mean_episode_length",
        "loss_policy",
        "loss_value",
        "loss_total",
        "entropy",
        "approx_kl",
        "explained_variance",
        "learning_rate",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return finite_or_none(value)

    @field_validator("agent_episode_rewards", mode="before")
    @classmethod
    def _finite_agents(cls, value: Any) -> dict[str, float]:
        pairs = {
            str(agent): finite_or_none(reward) for agent, reward in sorted(dict(value).items())
        }
        return {agent: reward for agent, reward in pairs.items() if reward is not None}
