"""Partially observable multi-agent worlds defined in YAML, as PettingZoo envs.

- ``load_config(path | dict)`` -> ``SimulationConfig`` (``WorldConfigError`` names the field path;
  ``WorldConfigWarning`` for a world without dynamics);
  ``VariableDefinition``: typed variables (float, int, bool, categorical, dict, list, tuple,
  str, object).
- ``parallel_env(config)`` / ``aec_env(config)``: the world, ground truth; wrappers in
  ``multiagent.wrappers`` add observability, noise, SB3 flattening, a single-agent view, text.
- ``multiagent.spaces.space_for``: Gymnasium spaces generated from definitions.
- ``multiagent.observability.construct_observation``: one observer's filtered, noisy view.
- ``multiagent.worlds.load_world(name)``: the built-in worlds ("trade", "forage", "commons").
- ``multiagent.players``: any player in any seat (``random``, ``noop``, ``scripted:``,
  ``model:``, ``openai:``, your own); ``multiagent.play.play_episode`` plays one episode.
- ``multiagent.evaluation.evaluate``: scenarios played by the players under test, scored with
  intervals (``python -m multiagent eval``).
"""

from multiagent.config import ObservabilityLevel, SimulationConfig, load_config
from multiagent.env import DynamicsError, WorldEnv, aec_env, parallel_env
from multiagent.errors import (
    CircularSchemaError,
    StateValidationError,
    WorldConfigError,
    WorldConfigWarning,
)
from multiagent.state import create_agent_state_model, create_global_state_model
from multiagent.variables import VariableDefinition
from multiagent.world_state import Transition, WorldState

__all__ = [
    "CircularSchemaError",
    "DynamicsError",
    "ObservabilityLevel",
    "SimulationConfig",
    "StateValidationError",
    "Transition",
    "VariableDefinition",
    "WorldConfigError",
    "WorldConfigWarning",
    "WorldEnv",
    "WorldState",
    "aec_env",
    "create_agent_state_model",
    "create_global_state_model",
    "load_config",
    "parallel_env",
]
