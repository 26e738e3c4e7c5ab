"""Partial observability: who sees whom, which variables, and how noisily.

- ``ObservabilityLevel``: unaware (the target is absent), external (its external variables),
  insider (all of them). A variable not listed in ``variable_visibility`` is external; an agent's
  ``name`` is always visible.
- ``ObservabilityPlan``: the per-(observer, target) view, resolved once per config: a matrix
  entry, else (an agent looking at itself) insider without noise, else the section's default.
  Full observability when the section is absent or disabled.
- ``construct_observation(observer, state, config, *, seed, turn)``: a new ``WorldState`` with
  unaware targets removed, internal variables removed for external observers, global variables
  filtered the same way, noise applied (``multiagent.noise``) and no reasoning chains.
- ``observe_all(state, plan, *, seed, turn)``: every observer's view of one turn at once (the
  noise of each target is drawn for all its observers together).
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import count
from typing import Any

import numpy as np

from multiagent.config import GLOBAL_TARGET, ObservabilityLevel, SimulationConfig
from multiagent.dict_builders import dict_builder
from multiagent.noise import (
    NoiseCache,
    NoiseLayout,
    NoisyTarget,
    items_getter,
    noisy_views,
    pair_keys,
    stable_hash,
)
from multiagent.variables import VariableDefinition
from multiagent.world_state import WorldState

__all__ = [
    "GLOBAL_TARGET",
    "ObservabilityLevel",
    "ObservabilityPlan",
    "View",
    "collector_paused",
    "construct_observation",
    "observe_all",
]


@dataclass(frozen=True)
class View:
    """What one observer sees of one target: its level, noise and visible variables.

    Example:
        >>> from multiagent.worlds import load_world
        >>> view = ObservabilityPlan(load_world("forage")).view("Forager_1", "global")
        >>> view.level, view.noise, view.variables
        (<ObservabilityLevel.EXTERNAL: 'external'>, 0.15, ('food', 'eaten'))
    """

    target: str
    level: ObservabilityLevel
    noise: float
    variables: tuple[str, ...]


class ObservabilityPlan:
    """Every observer's views, resolved once from a config.

    A pair's view comes from its matrix row; without one, an agent sees itself as an insider
    without noise (a self row, e.g. ``[A, A, external, 0.1]``, overrides that) and any other
    target as the section's ``default`` says.

    Args:
        config: the world definition.
        full: ignore the observability section (everyone an insider, no noise): what the
            unwrapped env returns.

    Example:
        >>> from multiagent.worlds import load_world
        >>> plan = ObservabilityPlan(load_world("forage"))
        >>> seen = plan.view("Forager_1", "Forager_2")
        >>> seen.level.value, seen.noise, seen.variables  # energy and carrying are internal
        ('external', 0.2, ('position',))
        >>> ObservabilityPlan(load_world("forage"), full=True).view("Forager_1", "Forager_2").noise
        0.0
    """

    def __init__(self, config: SimulationConfig, *, full: bool = False) -> None:
        self.config = config
        section = config.observability
        self.enabled = not full and section is not None and section.enabled
        self.gaussian = bool(section and section.distribution == "gaussian")
        self.agent_names = config.agent_names
        self.noise_cache = NoiseCache()  # layouts and leaf facts of this plan's definitions
        self._mutable: dict[tuple[bool, tuple[str, ...]], list[str]] = {}
        self._schedules: dict[tuple[str, ...], _Schedule] = {}
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
            if entry is not None:
                level, noise = entry.level, entry.noise
            elif observer == target:  # an agent knows its own state unless a row says otherwise
                level, noise = ObservabilityLevel.INSIDER, 0.0
            else:
                level, noise = section.default.level, section.default.noise
        if level == ObservabilityLevel.UNAWARE:
            return None
        variables = self._visible[(level, target == GLOBAL_TARGET)]
        return View(target, level, noise, variables)

    @cached_property
    def _matrix(self) -> dict:
        section = self.config.observability
        return {(e.observer, e.target): e for e in section.matrix} if section else {}

    def schedule(self, observers: tuple[str, ...]) -> _Schedule:
        """The static part of observing for these observers (cached: live sets change rarely)."""
        if observers not in self._schedules:
            unknown = [o for o in observers if o not in self.views]
            if unknown:
                raise ValueError(f"unknown observer(s) {unknown}; agents are {self.agent_names}")
            self._schedules[observers] = _schedule(self, observers)
        return self._schedules[observers]

    def mutable_variables(self, is_global: bool, names: tuple[str, ...]) -> list[str]:
        """Of ``names``, the variables whose values can hold dicts or lists (copied per view)."""
        key = (is_global, names)
        if key not in self._mutable:
            variables = self.config.state_variables
            definitions = variables.global_vars if is_global else variables.agent_vars
            self._mutable[key] = [n for n in names if _mutable(definitions[n])]
        return self._mutable[key]

    def view(self, observer: str, target: str) -> View | None:
        """The observer's view of ``target`` (an agent or "global"), None when unaware."""
        return next((v for v in self.views[observer] if v.target == target), None)

    def can_ever_see(self, observer: str, target: str) -> bool:
        return self.view(observer, target) is not None


_NAME_HASHES: dict[str, int] = {}
_SCALARS = ("float", "int", "bool", "categorical", "str")


def _name_hash(name: str) -> int:
    value = _NAME_HASHES.get(name)
    if value is None:
        value = _NAME_HASHES[name] = stable_hash(f"name:{name}")
    return value


def copy_value(defn: VariableDefinition, value: Any) -> Any:
    """A copy sharing nothing mutable with ``value`` (tuples and scalars are immutable, so only
    dicts and lists are rebuilt; far cheaper than ``copy.deepcopy``)."""
    if value is None or defn.type in _SCALARS:
        return value
    if defn.schema_ is not None:
        return {k: copy_value(defn.schema_[k], v) for k, v in value.items()}
    if defn.type == "dict":
        child = defn.value_type
        if child is not None and child.type in _SCALARS:
            return dict(value)
        return {k: copy_value(child, v) for k, v in value.items()}  # type: ignore[arg-type]
    if defn.type == "list":
        child = defn.item_type
        if child is not None and (child.type in _SCALARS or _immutable(child)):
            return list(value)
        return [copy_value(child, v) for v in value]  # type: ignore[arg-type]
    if _immutable(defn):
        return value
    return tuple(copy_value(c, v) for c, v in zip(defn.item_types or [], value, strict=True))


def _immutable(defn: VariableDefinition) -> bool:
    """A tuple of scalars or of such tuples: nothing in it can be mutated."""
    return defn.type == "tuple" and all(
        child.type in _SCALARS or _immutable(child) for child in defn.item_types or []
    )


def _mutable(defn: VariableDefinition) -> bool:
    return defn.type in ("dict", "list", "object") or (
        defn.type == "tuple" and not _immutable(defn)
    )


def _copier(defn: VariableDefinition) -> Callable[[Any], Any]:
    """``copy_value`` for ``defn``, with the common containers of scalars copied by a builtin."""
    kind, child = defn.type, defn.value_type or defn.item_type
    # A dict or list of scalars or of immutable tuples: a shallow copy is a full one.
    plain = child is not None and (child.type in _SCALARS or _immutable(child))
    if kind in ("dict", "list") and defn.schema_ is None and plain:
        builtin = dict if kind == "dict" else list
        return lambda value: value if value is None else builtin(value)
    return partial(copy_value, defn)


def _exact_copy(
    definitions: dict[str, VariableDefinition], names: tuple[str, ...], mutable: Sequence[str]
) -> Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """A function giving the named values of a target then ``named`` (an exact observer's copy),
    copying only the ``mutable`` ones (those that can hold dicts or lists)."""
    pick = items_getter(names)
    copies = [(name, _copier(definitions[name])) for name in mutable]

    def copy(values: dict[str, Any], named: dict[str, Any]) -> dict[str, Any]:
        copied = dict(zip(names, pick(values), strict=True))
        for name, copier in copies:
            copied[name] = copier(copied[name])
        copied.update(named)
        return copied

    return copy


@dataclass(frozen=True)
class _Group:
    """One target seen through one set of variables, by its exact and its noisy observers."""

    target: str
    names: tuple[str, ...]
    is_global: bool
    exact: tuple[str, ...]
    noisy: tuple[str, ...]
    copy: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]  # an exact observer's copy
    layout: NoiseLayout  # how the noise flattens these variables


@dataclass(frozen=True)
class _Seen:
    """Where one observer's views are among a turn's views (exact copies, then noisy ones)."""

    observer: str
    views: Callable[[list[Any]], tuple[Any, ...]]  # its views of agents, from the turn's views
    agents: Callable[..., dict[str, Any]]  # those views by agent name (a dict_builder)
    global_view: int | None  # the position of its view of the global state


@dataclass(frozen=True)
class _Schedule:
    """What ``observe_all`` does for a set of observers, minus the values: static per plan."""

    groups: tuple[_Group, ...]
    seen: tuple[_Seen, ...]  # one per observer, in the order asked
    observer_hashes: np.ndarray  # one per (noisy group, noisy observer), groups in order
    target_hashes: np.ndarray
    levels: np.ndarray
    counts: tuple[int, ...]  # noisy observers per noisy group


def _schedule(plan: ObservabilityPlan, observers: tuple[str, ...]) -> _Schedule:
    members: dict[tuple[str, tuple[str, ...]], list[tuple[str, float]]] = defaultdict(list)
    for observer in observers:
        for view in plan.views[observer]:
            members[(view.target, view.variables)].append((observer, view.noise))
    order = {name: index for index, name in enumerate([*plan.agent_names, GLOBAL_TARGET])}
    variables = plan.config.state_variables
    groups, observer_hashes, target_hashes, levels, counts = [], [], [], [], []
    for (target, names), seen_by in sorted(members.items(), key=lambda item: order[item[0][0]]):
        is_global = target == GLOBAL_TARGET
        noisy = [(observer, noise) for observer, noise in seen_by if noise > 0]
        definitions = variables.global_vars if is_global else variables.agent_vars
        mutable = plan.mutable_variables(is_global, names)
        groups.append(
            _Group(
                target,
                names,
                is_global,
                exact=tuple(observer for observer, noise in seen_by if noise == 0),
                noisy=tuple(observer for observer, _ in noisy),
                copy=_exact_copy(definitions, names, mutable),
                layout=plan.noise_cache.layout(definitions, names, (is_global,)),
            )
        )
        if noisy:
            observer_hashes += [_name_hash(observer) for observer, _ in noisy]
            target_hashes += [_name_hash(target)] * len(noisy)
            levels += [noise for _, noise in noisy]
            counts.append(len(noisy))
    # A turn's views: every group's exact copies, then every group's noisy ones, groups in
    # order; each observer's agents in the order of their views.
    positions: dict[str, list[tuple[int, str]]] = {observer: [] for observer in observers}
    position = count()
    for observers_of in ("exact", "noisy"):
        for group in groups:
            for observer in getattr(group, observers_of):
                positions[observer].append((next(position), group.target))
    seen = []
    for observer in observers:
        agents = [(p, target) for p, target in positions[observer] if target != GLOBAL_TARGET]
        global_view = [p for p, target in positions[observer] if target == GLOBAL_TARGET]
        seen.append(
            _Seen(
                observer,
                items_getter([p for p, _ in agents]),
                dict_builder([target for _, target in agents]),
                global_view[0] if global_view else None,
            )
        )
    return _Schedule(
        tuple(groups),
        tuple(seen),
        np.asarray(observer_hashes, dtype=np.uint64),
        np.asarray(target_hashes, dtype=np.uint64),
        np.asarray(levels, dtype=np.float64),
        tuple(counts),
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off meanwhile (as it was before, afterwards).

    A turn's views are thousands of new dicts, lists and tuples and never a cycle; with the
    collector on, building them sets off a dozen young-generation passes and, every few turns, a
    full one over the whole heap, each scanning objects that are all still alive.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def observe_all(
    state: WorldState,
    plan: ObservabilityPlan,
    *,
    seed: int,
    turn: int | None = None,
    observers: Sequence[str] | None = None,
) -> dict[str, WorldState]:
    """Each observer's filtered, noisy view of ``state`` (turn defaults to ``state.turn``)."""
    with collector_paused():
        return _observe_all(state, plan, seed, state.turn if turn is None else turn, observers)


def _observe_all(
    state: WorldState,
    plan: ObservabilityPlan,
    seed: int,
    turn: int,
    observers: Sequence[str] | None,
) -> dict[str, WorldState]:
    schedule = plan.schedule(tuple(plan.agent_names if observers is None else observers))
    views: list[Any] = []  # exact copies, then noisy ones (see _schedule)
    noisy_targets = []
    for group in schedule.groups:
        target = group.target
        if group.is_global:
            values, named = state.global_state, {}
        else:
            values, named = state.agents[target], {"name": target}
        views += [group.copy(values, named) for _ in group.exact]
        if group.noisy:
            noisy_targets.append(NoisyTarget(values, group.layout, named))
    if noisy_targets:
        keys = pair_keys(
            seed & 0xFFFFFFFFFFFFFFFF, turn, schedule.observer_hashes, schedule.target_hashes
        )
        views += noisy_views(
            noisy_targets,
            keys,
            schedule.levels,
            schedule.counts,
            gaussian=plan.gaussian,
            cache=plan.noise_cache,
        )
    return {
        seen.observer: WorldState(
            turn=state.turn,
            agents=seen.agents(*seen.views(views)),
            global_state={} if seen.global_view is None else views[seen.global_view],
        )
        for seen in schedule.seen
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
