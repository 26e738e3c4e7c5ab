"""The built-in worlds, each a packaged YAML definition plus its dynamics module.

- ``trade``: traders travel between towns, buy, sell and produce goods; it uses every variable
  type and a mixed observability matrix, a showcase for LLM agents.
- ``forage``: foragers on a 7x7 grid chase one food item they see with noise, small and fast
  enough to learn under partial observability.
- ``commons``: fishers share a lake that regrows and collapses when over-fished, seeing the others'
  catches only through noise (a GovSim-style social dilemma), with greedy and sustainable baselines.

``load_world(name)`` gives the checked ``SimulationConfig``; ``world_path(name)`` the YAML file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from multiagent.config import SimulationConfig, load_config

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["WORLDS", "load_world", "world_path"]

WORLDS = ("trade", "forage", "commons")


def _resource(name: str) -> Traversable:
    if name not in WORLDS:
        raise ValueError(f"unknown world {name!r}; the built-in worlds are {', '.join(WORLDS)}")
    return resources.files(__name__) / f"{name}.yaml"


def load_world(name: str) -> SimulationConfig:
    """A built-in world's config, read through importlib.resources (so it works when installed).

    Example:
        >>> load_world("forage").engine.dynamics
        'multiagent.worlds.forage:dynamics'
    """
    return load_config(yaml.safe_load(_resource(name).read_text(encoding="utf-8")))


def world_path(name: str) -> Path:
    """The YAML file of a built-in world, for copying it as the start of a new world."""
    return Path(str(_resource(name)))
