"""Envs for training, by id or factory, and their vectorised form.

- ``env_factory(env, env_kwargs, learner)``: a zero-argument factory from a Gymnasium id
  (``chess_env/Chess-v0``), ``world:trade`` / ``world:forage`` / ``world:PATH.yaml`` (one
  learner, the other agents random, the world's observability applied, flattened for SB3), or a
  factory given as is.
- ``world_factory(world, env_kwargs, learner)``: the ``world:WORLD`` factory, typed as the
  ``FlattenForSB3`` it makes.
- ``is_world_file(world)`` and ``load_training_world(world)``: a ``world:`` env names a YAML file
  when it is an existing file or ends in ``.yaml`` / ``.yml``, else a built-in world.
- ``env_id(env)``: the name a result records.
- ``has_action_masks(env)``: sb3-contrib's convention, ``action_masks()`` on the env.
- ``make_vec(factory, n_envs, seed, kind)``: SB3's ``make_vec_env`` (each env in a ``Monitor``),
  in subprocesses when there is more than one env.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import gymnasium as gym

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

    from multiagent.config import SimulationConfig
    from multiagent.wrappers import FlattenForSB3

__all__ = [
    "WORLD_PREFIX",
    "WORLD_SUFFIXES",
    "EnvSpec",
    "default_n_envs",
    "env_factory",
    "env_id",
    "has_action_masks",
    "is_world_file",
    "load_training_world",
    "make_vec",
    "world_factory",
]

EnvSpec = str | Callable[[], gym.Env]
WORLD_PREFIX = "world:"
WORLD_SUFFIXES = (".yaml", ".yml")


def default_n_envs() -> int:
    """One env per CPU core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def env_id(env: EnvSpec) -> str:
    """``env`` itself for an id, else the factory's name."""
    return env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)


def env_factory(
    env: EnvSpec, env_kwargs: dict[str, Any] | None = None, learner: str | None = None
) -> Callable[[], gym.Env]:
    """A factory making ``env``; a bad id or world name fails here, not in a subprocess."""
    kwargs = dict(env_kwargs or {})
    if not isinstance(env, str):
        if kwargs or learner:
            raise ValueError("env_kwargs and learner apply to env ids, not to a factory")
        return env
    if env.startswith(WORLD_PREFIX):
        return world_factory(env.removeprefix(WORLD_PREFIX), kwargs, learner)
    import chess_env  # noqa: F401  (registers chess_env/Chess-v0 and ChessText-v0)

    gym.spec(env)  # an unknown id raises gymnasium's error naming close ids

    def make() -> gym.Env:
        import chess_env  # noqa: F401, F811  (a SubprocVecEnv worker starts unregistered)

        return gym.make(env, **kwargs)

    make.__name__ = env
    return make


def is_world_file(world: str) -> bool:
    """True when ``world`` (what follows ``world:``) names a YAML file rather than a built-in
    world: an existing file, or a name ending in .yaml / .yml (so a missing file is reported as
    missing, not as an unknown world).

    Example:
        >>> is_world_file("trade"), is_world_file("./my_world.yaml"), is_world_file("w.YML")
        (False, True, True)
    """
    return world.lower().endswith(WORLD_SUFFIXES) or Path(world).is_file()


def load_training_world(world: str) -> SimulationConfig:
    """The config of a built-in world or a world YAML file (relative to the working directory);
    ``ValueError`` for a missing file or an unknown name, ``WorldConfigError`` for a bad file."""
    from multiagent.config import load_config
    from multiagent.worlds import load_world

    if not is_world_file(world):
        return load_world(world)
    if not Path(world).is_file():
        raise ValueError(f"world file {world!r} does not exist")
    return load_config(world)


def world_factory(
    world: str, env_kwargs: dict[str, Any] | None = None, learner: str | None = None
) -> Callable[[], FlattenForSB3]:
    """A factory making ``world`` (a built-in name or a YAML file) as ``learner`` (default: its
    first agent) sees it: ``FlattenForSB3(SingleAgentEnv(...))``, observability on; a bad world
    or learner fails here. The config is loaded once, so subprocess workers never read the file.
    """
    from multiagent import parallel_env
    from multiagent.wrappers import FlattenForSB3, SingleAgentEnv

    config = load_training_world(world)
    agents = [agent.name for agent in config.agents]
    agent = learner or agents[0]
    if agent not in agents:
        raise ValueError(f"unknown learner {agent!r} in world {world!r}; the agents are {agents}")

    def make() -> FlattenForSB3:
        env = parallel_env(config, observability=True, **(env_kwargs or {}))
        return FlattenForSB3(SingleAgentEnv(env, agent))

    make.__name__ = f"{WORLD_PREFIX}{world}"
    return make


def has_action_masks(env: gym.Env) -> bool:
    """True when the env (through its wrappers) offers ``action_masks()``."""
    try:
        return callable(env.get_wrapper_attr("action_masks"))
    except AttributeError:
        return False


def make_vec(
    factory: Callable[[], gym.Env],
    n_envs: int | None = None,
    seed: int = 0,
    kind: Literal["subproc", "dummy"] = "subproc",
) -> VecEnv:
    """``n_envs`` (default: the cores) monitored copies, seeded ``seed``, ``seed + 1``, ..."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    count = n_envs or default_n_envs()
    vec_class = SubprocVecEnv if kind == "subproc" and count > 1 else DummyVecEnv
    return make_vec_env(factory, n_envs=count, seed=seed, vec_env_cls=vec_class)
