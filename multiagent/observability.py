"""Partial observability: who sees whom, which variables, and how noisily.

- ``ObservabilityLevel``: unaware (the target is absent), external (its external variables),
  insider (all of them). A variable not listed in ``variable_visibility`` is external; an agent's
  ``name`` is always visible.
- ``ObservabilityPlan``: the per-(observer, target) view, resolved once per config (matrix
  entries, then the default). Full observability when the section is absent or disabled.
- ``construct_observation(observer, state, config, *, seed, turn)``: a new ``WorldState`` with
  unaware targets removed, internal variables removed for external observers, global variables
  filtered the same way, noise applied (``multiagent.noise``) and no reasoning chains.
- ``observe_all(state, plan, *, seed, turn)``: every observer's view of one turn at once (the
  noise of each target is drawn for all its observers together).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from multiagent.config import GLOBAL_TARGET, ObservabilityLevel, SimulationConfig
from multiagent.noise import NoisyTarget, draw_noise, pair_keys, stable_hash
from multiagent.variables import VariableDefinition
from multiagent.world_state import WorldState

__all__ = [
    "GLOBAL_TARGET",
    "ObservabilityLevel",
    "ObservabilityPlan",
    "View",
    "construct_observation",
    "observe_all",
]


@dataclass(frozen=True)
class View:
    """What one observer sees of one target: its level, noise and visible variables."""

    target: str
    level: ObservabilityLevel
    noise: float
    variables: tuple[str, ...]


class ObservabilityPlan:
    """Every observer's views, resolved once from a config.

    Args:
        config: the world definition.
        full: ignore the observability section (everyone an insider, no noise): what the
            unwrapped env returns.
    """

    def __init__(self, config: SimulationConfig, *, full: bool = False) -> None:
        self.config = config
        section = config.observability
        self.enabled = not full and section is not None and section.enabled
        self.gaussian = bool(section and section.distribution == "gaussian")
        self.agent_names = config.agent_names
        self.layouts: dict = {}  # NoisyTarget layouts of this plan's definitions, across turns
        variables = config.state_variables
        internal = set(section.variable_visibility.internal) if section else set()
        self._visible = {
            (ObservabilityLevel.INSIDER, False): tuple(variables.agent_vars),
            (ObservabilityLevel.EXTERNAL, False): tuple(
                v for v in variables.agent_vars if v not in internal
            ),
            (ObservabilityLevel.INSIDER, True): tuple(variables.global_vars),
            (ObservabilityLevel.EXTERNAL, True): tuple(
                v for v in variables.global_vars if v not in internal
            ),
        }
        self.views: dict[str, list[View]] = {
            observer: [
                view
                for target in [*self.agent_names, GLOBAL_TARGET]
                if (view := self._resolve(observer, target)) is not None
            ]
            for observer in self.agent_names
        }

    def _resolve(self, observer: str, target: str) -> View | None:
        if not self.enabled:
            level, noise = ObservabilityLevel.INSIDER, 0.0
        else:
            section = self.config.observability
            assert section is not None
            entry = self._matrix.get((observer, target))
            level, noise = (entry.level, entry.noise) if entry else (
                section.default.level, section.default.noise
            )  # fmt: skip
        if level == ObservabilityLevel.UNAWARE:
            return None
        variables = self._visible[(level, target == GLOBAL_TARGET)]
        return View(target, level, noise, variables)

    @cached_property
    def _matrix(self) -> dict:
        section = self.config.observability
        return {(e.observer, e.target): e for e in section.matrix} if section else {}

    def view(self, observer: str, target: str) -> View | None:
        """The observer's view of ``target`` (an agent or "global"), None when unaware."""
        return next((v for v in self.views[observer] if v.target == target), None)

    def can_ever_see(self, observer: str, target: str) -> bool:
        return self.view(observer, target) is not None


_NAME_HASHES: dict[str, int] = {}


def _name_hash(name: str) -> int:
    value = _NAME_HASHES.get(name)
    if value is None:
        value = _NAME_HASHES[name] = stable_hash(f"name:{name}")
    return value


def copy_value(defn: VariableDefinition, value: Any) -> Any:
    """A copy sharing nothing mutable with ``value`` (tuples and scalars are immutable, so only
    dicts and lists are rebuilt; far cheaper than ``copy.deepcopy``)."""
    if value is None or defn.type in ("float", "int", "bool", "categorical", "str"):
        return value
    if defn.schema_ is not None:
        return {k: copy_value(defn.schema_[k], v) for k, v in value.items()}
    if defn.type == "dict":
        child = defn.value_type
        if child is not None and child.type in ("float", "int", "bool", "categorical", "str"):
            return dict(value)
        return {k: copy_value(child, v) for k, v in value.items()}  # type: ignore[arg-type]
    if defn.type == "list":
        child = defn.item_type
        if child is not None and (child.type in ("float", "int", "bool", "categorical", "str")
                                  or _immutable(child)):  # fmt: skip
            return list(value)
        return [copy_value(child, v) for v in value]  # type: ignore[arg-type]
    if _immutable(defn):
        return value
    return tuple(copy_value(c, v) for c, v in zip(defn.item_types or [], value, strict=True))


def _immutable(defn: VariableDefinition) -> bool:
    """A tuple of scalars or of such tuples: nothing in it can be mutated."""
    return defn.type == "tuple" and all(
        child.type in ("float", "int", "bool", "categorical", "str") or _immutable(child)
        for child in defn.item_types or []
    )


def copy_values(
    definitions: dict[str, VariableDefinition], values: dict[str, Any], names: Sequence[str]
) -> dict[str, Any]:
    return {name: copy_value(definitions[name], values[name]) for name in names}


def observe_all(
    state: WorldState,
    plan: ObservabilityPlan,
    *,
    seed: int,
    turn: int | None = None,
    observers: Sequence[str] | None = None,
) -> dict[str, WorldState]:
    """Each observer's filtered, noisy view of ``state`` (turn defaults to ``state.turn``)."""
    turn = state.turn if turn is None else turn
    observers = list(plan.agent_names if observers is None else observers)
    variables = plan.config.state_variables
    # Group by (target, visible variables): one walk of the target serves all its observers.
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[str, float]]] = defaultdict(list)
    for observer in observers:
        for view in plan.views[observer]:
            groups[(view.target, view.variables)].append((observer, view.noise))
    views: dict[tuple[str, str], dict] = {}
    noisy_targets, noisy_members, keys, levels = [], [], [], []
    for (target, names), members in groups.items():
        is_global = target == GLOBAL_TARGET
        values = state.global_state if is_global else state.agents[target]
        definitions = variables.global_vars if is_global else variables.agent_vars
        exact = [(o, n) for o, n in members if n == 0]
        noisy = [(o, n) for o, n in members if n > 0]
        named = {} if is_global else {"name": target}
        if exact:
            views.update(
                ((observer, target), {**copy_values(definitions, values, names), **named})
                for observer, _ in exact
            )
        if noisy:
            noisy_targets.append(
                NoisyTarget(values, definitions, names, plan.layouts, cache_key=(is_global,))
            )
            noisy_members.append((target, noisy, named))
            keys.append(pair_keys(
                seed & 0xFFFFFFFFFFFFFFFF, turn,
                np.asarray([_name_hash(o) for o, _ in noisy], dtype=np.uint64),
                np.uint64(_name_hash(target)),
            ))  # fmt: skip
            levels.append(np.asarray([n for _, n in noisy], dtype=np.float64))
    if noisy_targets:
        drawn = draw_noise(noisy_targets, keys, levels, gaussian=plan.gaussian)
        for noisy_target, (target, members, named), result in zip(
            noisy_targets, noisy_members, drawn, strict=True
        ):
            observed = noisy_target.assemble(result, named)
            views.update(
                ((observer, target), seen)
                for (observer, _), seen in zip(members, observed, strict=True)
            )
    return {
        observer: WorldState(
            turn=state.turn,
            agents={
                target: views[(observer, target)]
                for target in plan.agent_names
                if (observer, target) in views
            },
            global_state=views.get((observer, GLOBAL_TARGET), {}),
        )
        for observer in observers
    }


def construct_observation(
    observer: str,
    state: WorldState,
    config: SimulationConfig | ObservabilityPlan,
    *,
    seed: int,
    turn: int | None = None,
) -> WorldState:
    """``observer``'s view of ``state`` under ``config``'s observability (see the module doc).

    Pass an ``ObservabilityPlan`` instead of the config to skip resolving the matrix each call.
    """
    plan = config if isinstance(config, ObservabilityPlan) else ObservabilityPlan(config)
    if observer not in plan.views:
        raise ValueError(f"unknown observer {observer!r}; agents are {plan.agent_names}")
    return observe_all(state, plan, seed=seed, turn=turn, observers=[observer])[observer]
