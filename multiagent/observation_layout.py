"""Per-agent observation spaces and encoding, generated from the definitions and a plan.

An agent's observation is ``Dict{"self", "others", "global", "turn"}``:
- ``self``: the agent's own variables as its plan's view of itself shows them;
- ``others``: ``{target: Dict{"_visible": MultiBinary(1), <visible variables>}}`` for every
  target the agent can ever see (targets it can never see are left out of its space); a target
  that is not visible right now (it left the episode) is zero-filled with ``_visible = 0``;
- ``global``: the visible global variables (left out when the global state is never visible);
- ``turn``: ``Discrete(max_turns + 1)``.
Spaces never change shape during an episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from multiagent.observability import GLOBAL_TARGET, ObservabilityPlan
from multiagent.spaces import ordered_dict, space_for, to_space_value, zero_value
from multiagent.variables import VariableDefinition
from multiagent.world_state import WorldState

__all__ = ["ObservationLayout"]

_VISIBLE = np.ones(1, dtype=np.int8)


@dataclass
class ObservationLayout:
    """What one observer's observation holds, and how to encode a view of the world into it.

    Example:
        >>> from multiagent.worlds import load_world
        >>> plan = ObservabilityPlan(load_world("forage"))
        >>> layout = ObservationLayout.from_plan(plan, "Forager_1")
        >>> layout.self_variables, layout.targets["Forager_2"], layout.global_variables
        (('position', 'energy', 'carrying'), ('position',), ('food', 'eaten'))
        >>> layout.space()["others"]["Forager_2"]
        Dict('_visible': MultiBinary(1), 'position': Tuple(Discrete(7), Discrete(7)))
    """

    observer: str
    self_variables: tuple[str, ...] | None
    targets: dict[str, tuple[str, ...]]
    global_variables: tuple[str, ...] | None
    agent_vars: dict[str, VariableDefinition]
    global_vars: dict[str, VariableDefinition]
    max_turns: int

    @classmethod
    def from_plan(cls, plan: ObservabilityPlan, observer: str) -> ObservationLayout:
        views = {view.target: view.variables for view in plan.views[observer]}
        variables = plan.config.state_variables
        return cls(
            observer=observer,
            self_variables=views.get(observer),
            targets={t: v for t, v in views.items() if t not in (observer, GLOBAL_TARGET)},
            global_variables=views.get(GLOBAL_TARGET),
            agent_vars=variables.agent_vars,
            global_vars=variables.global_vars,
            max_turns=plan.config.simulation.max_turns,
        )

    def space(self) -> spaces.Dict:
        """A fresh observation space (spaces carry an RNG, so each env gets its own)."""
        parts: dict[str, spaces.Space[Any]] = {}
        if self.self_variables is not None:
            parts["self"] = self._variables_space(self.agent_vars, self.self_variables)
        parts["others"] = ordered_dict(
            {
                target: self._variables_space(self.agent_vars, names, visible_flag=True)
                for target, names in self.targets.items()
            }
        )
        if self.global_variables is not None:
            parts["global"] = self._variables_space(self.global_vars, self.global_variables)
        parts["turn"] = spaces.Discrete(self.max_turns + 1)
        return ordered_dict(parts)

    @staticmethod
    def _variables_space(
        definitions: dict[str, VariableDefinition],
        names: tuple[str, ...],
        visible_flag: bool = False,
    ) -> spaces.Dict:
        parts: dict[str, spaces.Space[Any]] = (
            {"_visible": spaces.MultiBinary(1)} if visible_flag else {}
        )
        parts.update((name, space_for(definitions[name])) for name in names)
        return ordered_dict(parts)

    def encode(self, view: WorldState, space: spaces.Dict) -> dict[str, Any]:
        """``view`` (this observer's view of the world) as an element of ``space``."""
        observation: dict[str, Any] = {}
        if self.self_variables is not None:
            own = view.agents.get(self.observer)
            observation["self"] = (
                self._encode(self.agent_vars, self.self_variables, own)
                if own is not None
                else zero_value(space["self"])
            )
        others_space = space["others"]
        assert isinstance(others_space, spaces.Dict)  # space() makes it a Dict by target
        others = {}
        for target, names in self.targets.items():
            seen = view.agents.get(target)
            if seen is None:
                others[target] = zero_value(others_space[target])
            else:
                others[target] = {
                    "_visible": _VISIBLE.copy(),
                    **self._encode(self.agent_vars, names, seen),
                }
        observation["others"] = others
        if self.global_variables is not None:
            observation["global"] = self._encode(
                self.global_vars, self.global_variables, view.global_state
            )
        observation["turn"] = min(view.turn, self.max_turns)
        return observation

    @staticmethod
    def _encode(
        definitions: dict[str, VariableDefinition], names: tuple[str, ...], values: dict[str, Any]
    ) -> dict[str, Any]:
        return {name: to_space_value(definitions[name], values[name]) for name in names}
