"""Wrappers for the world envs; every feature that can be a wrapper is one, so they compose.

- ``ObservabilityWrapper``: the config's observability (filter + noise) on a world env.
- ``NoiseWrapper``: noise alone, for a world env or any Gymnasium env (the chess tensor too).
- ``FlattenForSB3``: Dict observations and actions that Stable-Baselines3 accepts.
- ``SingleAgentEnv``: one agent learns (a ``gymnasium.Env``), the others follow policies.
- ``TextObservationWrapper`` / ``observation_envelope``: the DTO view for LLM agents.
- ``RecordEpisode``: every turn's ground truth, observations and actions as an episode log.
"""

from multiagent.wrappers.flatten import FlattenForSB3
from multiagent.wrappers.noise import (
    GymNoiseWrapper,
    NoiseWrapper,
    ParallelNoiseWrapper,
    noisy_element,
)
from multiagent.wrappers.observability import ObservabilityWrapper
from multiagent.wrappers.record import RecordEpisode
from multiagent.wrappers.single_agent import Policy, SingleAgentEnv
from multiagent.wrappers.text import TextObservationWrapper, observation_envelope

__all__ = [
    "FlattenForSB3",
    "GymNoiseWrapper",
    "NoiseWrapper",
    "ObservabilityWrapper",
    "ParallelNoiseWrapper",
    "Policy",
    "RecordEpisode",
    "SingleAgentEnv",
    "TextObservationWrapper",
    "noisy_element",
    "observation_envelope",
]
