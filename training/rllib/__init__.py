"""PPO with Ray RLlib on the project's envs, on one machine or a Ray cluster.

- ``train_rllib(config) -> RLlibTrainingResult`` (``training.rllib.run``);
  ``python -m training rllib --env ... --num-env-runners N --iterations K [--address auto]``.
- ``RLlibConfig`` (``training.rllib.config``) and the result DTOs (``training.rllib.dto``).
- ``ENV_NAMES``, the wrappers and ``register_envs`` (``training.rllib.envs``):
  ``chess_env/Chess-v0`` (single agent, masked through RLlib's action-masking RLModule),
  ``chess:selfplay`` (AEC chess through ``PettingZooEnv``, self-play by policy mapping),
  ``world:forage`` / ``world:trade`` (through ``ParallelPettingZooEnv``, shared or per-agent).

Needs the ``distributed`` extra (``ray[rllib]``) to train; the names load on first use and no
module here imports ray at import time, so ``import training.rllib`` works without it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ENV_NAMES",
    "RLlibConfig",
    "RLlibTrainingResult",
    "RLlibUnavailableError",
    "build_algorithm_config",
    "load_rllib_config",
    "register_envs",
    "train_rllib",
]

_HOMES = {
    "ENV_NAMES": "training.rllib.envs",
    "register_envs": "training.rllib.envs",
    "RLlibConfig": "training.rllib.config",
    "load_rllib_config": "training.rllib.config",
    "RLlibTrainingResult": "training.rllib.dto",
    "RLlibUnavailableError": "training.rllib.run",
    "build_algorithm_config": "training.rllib.run",
    "train_rllib": "training.rllib.run",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'training.rllib' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
