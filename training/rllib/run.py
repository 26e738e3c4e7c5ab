"""``train_rllib(config) -> RLlibTrainingResult``: PPO with Ray RLlib's new API stack.

- ``require_ray()``: ray, or ``RLlibUnavailableError`` saying which extra to install.
- ``build_algorithm_config(config)``: RLlib's ``PPOConfig`` for one of ``ENV_NAMES``: RLlib's
  ``ActionMaskingTorchRLModule`` for chess, a policy mapping for the multi-agent envs (one shared
  policy: self-play / parameter sharing; or one per agent), the illegal-action counter.
- ``train_rllib``: starts a local Ray (or joins ``config.address``), runs ``config.iterations``
  iterations, stops the algorithm and the Ray it started, and returns the frozen result.

ray is imported inside the functions: ``import training.rllib`` works without the extra.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from training.dto import finite_or_none
from training.envs import default_n_envs
from training.rllib.config import RLlibConfig
from training.rllib.dto import RLlibIteration, RLlibPolicyStats, RLlibTrainingResult
from training.rllib.envs import (
    CHESS_AEC,
    agent_ids,
    check_env_config,
    is_masked,
    is_multi_agent,
    register_envs,
)

__all__ = [
    "ILLEGAL_ACTIONS_METRIC",
    "SHARED_POLICY",
    "RLlibUnavailableError",
    "build_algorithm_config",
    "count_illegal_actions",
    "map_to_own_policy",
    "map_to_shared_policy",
    "require_ray",
    "train_rllib",
]

SHARED_POLICY = "shared"
ILLEGAL_ACTIONS_METRIC = "illegal_actions"
INSTALL_HINT = 'pip install -e ".[distributed]"'


class RLlibUnavailableError(ImportError):
    """Ray RLlib is not installed (the ``distributed`` extra)."""


def require_ray() -> Any:
    """The ``ray`` module, once RLlib imports; else an error naming the extra to install."""
    try:
        import ray
        import ray.rllib
    except ImportError as error:
        raise RLlibUnavailableError(
            f"Ray RLlib is not installed ({error}); install the distributed extra: {INSTALL_HINT}"
        ) from error
    return ray


# -- policy mapping and callbacks: module-level, so Ray pickles them by reference ---------------


def map_to_shared_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Every agent acts and learns with one policy: self-play, or parameter sharing."""
    return SHARED_POLICY


def map_to_own_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Each agent has its own policy, named after it."""
    return str(agent_id)


def count_illegal_actions(*, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
    """``on_episode_end``: log the episode's actions outside the mask (the env wrappers count
    them in ``info["illegal_actions"]``) as a lifetime sum over every env runner."""
    if metrics_logger is None:
        return
    last = episode.get_infos(-1)
    infos = last.values() if hasattr(episode, "agent_episodes") else [last]
    # The AEC wrapper counts for the whole game, so both players report the same number.
    count = max((int(info.get(ILLEGAL_ACTIONS_METRIC, 0)) for info in infos), default=0)
    metrics_logger.log_value(ILLEGAL_ACTIONS_METRIC, count, reduce="lifetime_sum")


# -- the algorithm ----------------------------------------------------------------------------


def build_algorithm_config(config: RLlibConfig) -> Any:
    """RLlib's ``PPOConfig`` for ``config`` (call ``.build_algo()`` on it with Ray running)."""
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    module_class = None
    if is_masked(config.env):
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
            ActionMaskingTorchRLModule,
        )

        module_class = ActionMaskingTorchRLModule
    algo = (
        PPOConfig()
        .environment(
            config.env,
            env_config=dict(config.env_config),
            # RLlib's multi-agent env check steps a random action, which is almost always an
            # illegal move (a PettingZoo warning, and a game lost before training starts).
            disable_env_checking=config.env == CHESS_AEC,
        )
        .framework("torch")
        .env_runners(
            num_env_runners=config.num_env_runners,
            num_envs_per_env_runner=config.num_envs_per_env_runner,
            num_cpus_per_env_runner=config.num_cpus_per_env_runner,
        )
        .training(
            train_batch_size_per_learner=config.train_batch_size,
            minibatch_size=config.minibatch_size,
            num_epochs=config.num_epochs,
            lr=config.lr,
            gamma=config.gamma,
            lambda_=config.lambda_,
            clip_param=config.clip_param,
            entropy_coeff=config.entropy_coeff,
            vf_loss_coeff=config.vf_loss_coeff,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(config.fcnet_hiddens)))
        .debugging(seed=config.seed, log_level="ERROR")
    )
    if is_masked(config.env):
        algo = algo.callbacks(on_episode_end=count_illegal_actions)
    if not is_multi_agent(config.env):
        return algo.rl_module(rl_module_spec=RLModuleSpec(module_class=module_class))
    policy_ids: tuple[str, ...]
    if config.policies == "shared":
        policy_ids, mapping = (SHARED_POLICY,), map_to_shared_policy
    else:
        policy_ids, mapping = agent_ids(config.env), map_to_own_policy
    specs = {policy: RLModuleSpec(module_class=module_class) for policy in policy_ids}
    return algo.multi_agent(policies=set(policy_ids), policy_mapping_fn=mapping).rl_module(
        rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs)
    )


@contextlib.contextmanager
def _quiet_ray_loggers() -> Iterator[None]:
    """RLlib warns at INFO/WARNING about its own defaults on every build; errors still show."""
    loggers = [logging.getLogger(name) for name in ("ray", "ray.rllib", "ray.tune")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _local_cpus(config: RLlibConfig) -> int:
    needed = math.ceil(config.num_env_runners * config.num_cpus_per_env_runner)
    if config.num_cpus is not None:
        if needed > config.num_cpus:
            raise ValueError(
                f"{config.num_env_runners} env runners x {config.num_cpus_per_env_runner} CPU "
                f"need {needed} CPUs, but num_cpus={config.num_cpus}"
            )
        return config.num_cpus
    return max(default_n_envs(), needed)


@contextlib.contextmanager
def _ray_session(config: RLlibConfig) -> Iterator[str]:
    """Ray for the run: one already running in this process is used as it is (and left
    running); otherwise join ``config.address`` or start a local Ray, and shut it down after.
    Yields where the run went: "local" or the address."""
    ray = require_ray()
    if ray.is_initialized():
        yield config.address or "local"
        return
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }
    if config.address is None:
        options["num_cpus"] = _local_cpus(config)
    try:
        # "local": never join a cluster that `ray start` or RAY_ADDRESS left for ray.init().
        ray.init(address=config.address or "local", **options)
    except ConnectionError as error:
        raise ConnectionError(
            f"could not join the Ray cluster at {config.address!r}: {str(error).rstrip('.')}. "
            "Is it running (ray start --head)? Its clusters use token authentication: 'auto' "
            "finds this machine's ~/.ray/auth_token; for an explicit address set "
            "RAY_AUTH_MODE=token and give the cluster's token (~/.ray/auth_token or "
            "RAY_AUTH_TOKEN)."
        ) from error
    try:
        yield config.address or "local"
    finally:
        ray.shutdown()


def train_rllib(config: RLlibConfig | None = None, **fields: Any) -> RLlibTrainingResult:
    """Run PPO on RLlib for ``config.iterations`` iterations and return the frozen result.

    Args:
        config: the run's ``RLlibConfig``; or give its fields as keyword arguments instead
            (``train_rllib(env="world:forage", iterations=2)``).

    A bad env name or field is a ``ValueError`` (pydantic's names the field), a bad
    ``env_config`` a ``ValueError`` naming the env, all before Ray starts; a missing ray is
    ``RLlibUnavailableError``; a cluster that cannot be joined a ``ConnectionError``.
    """
    if config is None:
        config = RLlibConfig(**fields)
    elif fields:
        raise ValueError("give either a config or its fields, not both")
    ray = require_ray()
    try:
        import torch
    except ImportError as error:  # ray[rllib] does not bring it; the RLModules here are torch
        raise RLlibUnavailableError(
            f"RLlib's PPO here runs on torch, which is not installed ({error}): "
            f'pip install torch, then pip install -e ".[train,distributed]"'
        ) from error

    check_env_config(config.env, config.env_config)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)  # small networks: one thread is fastest here
    start = time.perf_counter()
    try:
        with _quiet_ray_loggers(), _ray_session(config) as cluster:
            register_envs()
            algo = build_algorithm_config(config).build_algo()
            try:
                setup = time.perf_counter() - start
                history, result = _train(algo, config.iterations)
                checkpoint = _save(algo, config.checkpoint_dir)
            finally:
                algo.stop()
            cpus = float(ray.cluster_resources().get("CPU", 0.0))
    finally:
        torch.set_num_threads(threads)
    return _result_dto(config, result, history, setup, cluster, cpus, checkpoint, ray.__version__)


def _train(algo: Any, iterations: int) -> tuple[list[RLlibIteration], dict[str, Any]]:
    """Run the iterations; the last result, with each policy's parameter count carried over
    from the iteration that reported it (RLlib reports it once, then NaN)."""
    history: list[RLlibIteration] = []
    result: dict[str, Any] = {}
    parameters: dict[str, int] = {}
    for iteration in range(1, iterations + 1):
        began = time.perf_counter()
        result = dict(algo.train())
        runners = result.get("env_runners", {})
        history.append(
            RLlibIteration(
                iteration=iteration,
                timesteps=_count(result.get("num_env_steps_sampled_lifetime")),
                episodes=_count(runners.get("num_episodes_lifetime")),
                episode_return_mean=runners.get("episode_return_mean"),
                duration_sec=time.perf_counter() - began,
            )
        )
        for name, stats in _learner_stats(result).items():
            count = _count(stats.get("num_trainable_parameters"))
            parameters[name] = count or parameters.get(name, 0)
    learners = _learner_stats(result)
    result["learners"] = {
        name: {**stats, "num_trainable_parameters": parameters.get(name, 0)}
        for name, stats in learners.items()
    }
    return history, result


def _learner_stats(result: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """RLlib's learner results by policy (without its ``__all_modules__`` totals)."""
    return {
        name: stats
        for name, stats in result.get("learners", {}).items()
        if name != "__all_modules__" and isinstance(stats, Mapping)
    }


def _save(algo: Any, directory: str | None) -> str | None:
    if directory is None:
        return None
    path = Path(directory).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return str(algo.save_to_path(str(path)))


def _count(value: Any) -> int:
    """A count RLlib reported, 0 when it did not (it reports NaN for some in later iterations)."""
    number = finite_or_none(value)
    return int(number) if number is not None else 0


def _policy_stats(stats: Mapping[str, Any]) -> RLlibPolicyStats:
    return RLlibPolicyStats(
        policy_loss=stats.get("policy_loss"),
        vf_loss=stats.get("vf_loss"),
        total_loss=stats.get("total_loss"),
        entropy=stats.get("entropy"),
        mean_kl_loss=stats.get("mean_kl_loss"),
        vf_explained_var=stats.get("vf_explained_var"),
        learning_rate=stats.get("default_optimizer_learning_rate"),
        module_steps_trained=_count(stats.get("num_module_steps_trained_lifetime")),
        trainable_parameters=_count(stats.get("num_trainable_parameters")),
    )


def _result_dto(
    config: RLlibConfig,
    result: Mapping[str, Any],
    history: list[RLlibIteration],
    setup_sec: float,
    cluster: str,
    cpus: float,
    checkpoint: str | None,
    ray_version: str,
) -> RLlibTrainingResult:
    runners = result.get("env_runners", {})
    policies = {name: _policy_stats(stats) for name, stats in sorted(result["learners"].items())}
    only = next(iter(policies.values())) if len(policies) == 1 else RLlibPolicyStats()
    steps = history[-1].timesteps
    duration = sum(item.duration_sec for item in history)
    agent_steps = runners.get("num_agent_steps_sampled_lifetime", {})
    return RLlibTrainingResult(
        env_id=config.env,
        masked=is_masked(config.env),
        multi_agent=is_multi_agent(config.env),
        seed=config.seed,
        ray_version=ray_version,
        cluster=cluster,
        num_env_runners=config.num_env_runners,
        cluster_cpus=cpus,
        iterations=len(history),
        total_timesteps=steps,
        agent_timesteps=sum(_count(count) for count in agent_steps.values()) or steps,
        episodes=history[-1].episodes,
        mean_episode_reward=runners.get("episode_return_mean"),
        mean_episode_length=runners.get("episode_len_mean"),
        agent_episode_rewards=runners.get("agent_episode_returns_mean", {})
        if is_multi_agent(config.env)
        else {},
        illegal_actions=_count(runners.get(ILLEGAL_ACTIONS_METRIC))
        if is_masked(config.env)
        else None,
        loss_policy=only.policy_loss,
        loss_value=only.vf_loss,
        loss_total=only.total_loss,
        entropy=only.entropy,
        approx_kl=only.mean_kl_loss,
        explained_variance=only.vf_explained_var,
        learning_rate=only.learning_rate,
        policies=policies,
        history=tuple(history),
        duration_sec=duration,
        setup_sec=setup_sec,
        steps_per_sec=steps / duration if duration > 0 else 0.0,
        checkpoint=checkpoint,
        config=config,
    )
