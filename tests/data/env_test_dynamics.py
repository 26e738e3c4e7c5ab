"""Dynamics for tests/multiagent/test_env.py and test_config.py: each one is wrong (or special)
in one known way.

The config of those tests has agents A and B with a ``gold`` float (min 0) and an ``action`` of
one ``delta`` float; ``engine.dynamics`` names these as ``"env_test_dynamics:<function>"`` (the
test puts ``tests/data`` on ``sys.path``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from multiagent.world_state import Transition, WorldState


def _next(state: WorldState, **agents: dict[str, Any]) -> WorldState:
    """The state one turn on, with ``agents`` replacing those named."""
    merged = {name: dict(values) for name, values in state.agents.items()}
    merged.update(agents)
    return WorldState(state.turn + 1, merged, dict(state.global_state))


def add_delta(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Adds each agent's ``delta`` to its gold; reward = delta; a valid world."""
    agents = {
        name: {**values, "gold": values["gold"] + actions.get(name, {}).get("delta", 0.0)}
        for name, values in state.agents.items()
    }
    rewards = {name: float(action["delta"]) for name, action in actions.items()}
    return Transition(_next(state, **agents), rewards=rewards)


def break_bound(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Sets A's gold below its declared minimum of 0."""
    return Transition(_next(state, A={**state.agents["A"], "gold": -5.0}))


def wrong_turn(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Skips a turn."""
    return Transition(WorldState(state.turn + 2, state.agents, state.global_state))


def not_a_transition(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Any:
    """Returns the bare state instead of a ``Transition``."""
    return _next(state)


def drop_agent(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Loses agent B."""
    agents = {"A": dict(state.agents["A"])}
    return Transition(WorldState(state.turn + 1, agents, dict(state.global_state)))


def terminate_a(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Terminates A after its first turn; B plays on."""
    return Transition(_next(state), terminations={"A": True})


# Not a function: a config naming it (tests/multiagent/test_config.py) must not load.
DELTA_FIELD = "delta"
