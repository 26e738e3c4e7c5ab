"""The ground-truth state of a world and what a dynamics function returns.

A dynamics function (named in ``engine.dynamics`` as ``"package.module:function"``) has the
signature ``dynamics(state, actions, rng, params) -> Transition``:

- ``state``: the current ``WorldState`` (treat it as read-only; build the new one);
- ``actions``: ``{agent: {field: value}}``, already validated against the ``actions`` definitions
  (an agent whose action was invalid, under ``invalid_action="noop"``, is absent);
- ``rng``: a ``numpy.random.Generator`` seeded from the env: the only randomness allowed;
- ``params``: the engine section's other keys.

The env validates the returned state against the definitions, so a dynamics bug that breaks a
bound is reported with the variable's path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Transition", "WorldState"]


@dataclass(frozen=True)
class WorldState:
    """``turn``, ``agents`` (``{name: {variable: value}}``, each with its ``name``) and globals.

    Example:
        >>> state = WorldState(turn=0, agents={"A": {"name": "A", "gold": 5}}, global_state={})
        >>> state.agents["A"]["gold"], state.reasoning_chains
        (5, ())
    """

    turn: int
    agents: dict[str, dict[str, Any]]
    global_state: dict[str, Any]
    reasoning_chains: tuple[Any, ...] = ()  # kept for LLM runners; observations carry none


@dataclass(frozen=True)
class Transition:
    """What one turn of dynamics produced; missing agents get reward 0 and no termination.

    Example:
        >>> def dynamics(state, actions, rng, params):  # every agent earns one gold a turn
        ...     agents = {name: {**a, "gold": a["gold"] + 1} for name, a in state.agents.items()}
        ...     next_state = WorldState(state.turn + 1, agents, state.global_state)
        ...     return Transition(next_state, rewards=dict.fromkeys(agents, 1.0))
        >>> start = WorldState(turn=0, agents={"A": {"name": "A", "gold": 5}}, global_state={})
        >>> transition = dynamics(start, {}, None, {})
        >>> transition.state.agents, transition.rewards, transition.terminations
        ({'A': {'name': 'A', 'gold': 6}}, {'A': 1.0}, {})
    """

    state: WorldState
    rewards: dict[str, float] = field(default_factory=dict)
    terminations: dict[str, bool] = field(default_factory=dict)
    infos: dict[str, dict[str, Any]] = field(default_factory=dict)
