"""Building episode logs from a running world env.

- ``observability_cells(plan)``: a plan's matrix as ``ViewCell`` cells, each variable marked
  hidden, exact or noisy. A variable is noisy when its observer's noise is above 0 and it holds a
  value noise can change (a number, a bool, a category; strings are never noised).
- ``EpisodeRecorder``: collects one episode at a time from a ``WorldEnv`` (its ground truth) and
  the plan its observations were built with, and writes each episode as it ends. ``WorldEnv``'s
  ``record=`` and the ``RecordEpisode`` wrapper both drive one.

The recorder rebuilds every observer's view with ``observe_all`` from the same state, plan and
seed as the env did: the noise is a function of (seed, turn, observer, target, variable) alone,
so the views are the ones the agents were given, before their encoding into spaces (floats stay
float64 here, where the spaces hold float32).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic_core import to_jsonable_python

from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.recording.log import (
    GLOBAL_TARGET,
    EpisodeLog,
    Mark,
    ViewCell,
    save_episode_log,
)
from multiagent.variables import VariableDefinition

if TYPE_CHECKING:
    from multiagent.env import WorldEnv

__all__ = ["EpisodeRecorder", "Record", "observability_cells"]

Record = bool | str | os.PathLike[str]
_SCALARS = ("float", "int", "bool", "categorical")


def _noisable(defn: VariableDefinition) -> bool:
    """Whether noise can change a value of ``defn`` (it has a number, bool or category inside)."""
    if defn.type in _SCALARS:
        return True
    children = [*(defn.schema_ or {}).values(), *(defn.item_types or [])]
    children += [child for child in (defn.value_type, defn.item_type) if child is not None]
    return any(_noisable(child) for child in children)


def observability_cells(plan: ObservabilityPlan) -> list[ViewCell]:
    """Every (observer, target) of ``plan`` with its level, noise and per-variable marks.

    Example:
        >>> from multiagent.worlds import load_world
        >>> cells = observability_cells(ObservabilityPlan(load_world("trade")))
        >>> cell = next(c for c in cells if (c.observer, c.target) == ("Trader_2", "Trader_1"))
        >>> cell.level, cell.noise, cell.variables["gold"], cell.variables["agent_name"]
        ('external', 0.15, 'hidden', 'exact')
        >>> cell.variables["economic_strength"]
        'noisy'
    """
    variables = plan.config.state_variables
    cells = []
    for observer in plan.agent_names:
        for target in [*plan.agent_names, GLOBAL_TARGET]:
            is_global = target == GLOBAL_TARGET
            definitions = variables.global_vars if is_global else variables.agent_vars
            view = plan.view(observer, target)
            shown = set(view.variables) if view is not None else set()
            noise = view.noise if view is not None else 0.0
            marks: dict[str, Mark] = {
                name: "hidden"
                if name not in shown
                else ("noisy" if noise > 0 and _noisable(defn) else "exact")
                for name, defn in definitions.items()
            }
            level = view.level.value if view is not None else "unaware"
            cells.append(ViewCell(observer=observer, target=target, level=level,
                                     noise=noise, variables=marks))  # fmt: skip
    return cells


def _plain(value: Any) -> Any:
    """NumPy values a dynamics put in its infos, as Python values; anything else as its repr."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return repr(value)


def _json(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists, keys as strings): a fresh copy."""
    return to_jsonable_python(value, fallback=_plain)


def _without_name(agents: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t: {k: v for k, v in values.items() if k != "name"} for t, values in agents.items()}


class EpisodeRecorder:
    """One world env's episodes as ``EpisodeLog``s, written as each ends.

    Args:
        world_env: the ``WorldEnv`` whose ground truth (``world``, ``seed_value``) is recorded.
        plan: the ``ObservabilityPlan`` the agents' observations were built with (the env's own,
            full one, or an observation wrapper's).
        record: ``True`` keeps the episode in memory only (``episode_log``); a path ending in
            ``.json`` or ``.gz`` (gzipped) is the file every episode is written to (each replaces
            the last); any other path is a folder (created) where episode n goes to
            ``<world>-episode-<n>.json`` (n from 0).

    An episode is written when its last agent is done, or, unfinished (``complete=False``), when
    the env is reset or closed before that. ``paths`` lists the files written.
    """

    def __init__(self, world_env: WorldEnv, plan: ObservabilityPlan, record: Record) -> None:
        if record is False or not isinstance(record, bool | str | os.PathLike):
            raise TypeError(f"record must be True or a path, got {record!r}")
        self.world_env, self.plan = world_env, plan
        self.target = None if record is True else Path(record)  # type: ignore[arg-type]
        self.cells = observability_cells(plan)
        self.paths: list[Path] = []
        self._turns: list[dict[str, Any]] = []
        self._episodes, self._seed = 0, 0
        self._complete = self._written = False
        self._log: EpisodeLog | None = None

    @property
    def episode_log(self) -> EpisodeLog | None:
        """The episode since the last reset (in progress or ended); None before any reset."""
        if self._log is None and self._turns:
            self._log = self._build()
        return self._log

    def start(self, live: list[str]) -> None:
        """A reset: write the previous episode if it is unwritten, and record turn 0."""
        self._flush()
        self._seed = self.world_env.seed_value
        self._turns = [self._observed_turn(live)]
        self._complete = self._written = False
        self._log = None

    def step(
        self,
        actions: Mapping[str, Any],
        acting: list[str],
        rewards: Mapping[str, float],
        terminations: Mapping[str, bool],
        truncations: Mapping[str, bool],
        infos: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """One step of the env by the agents in ``acting``, with what it returned."""
        if not acting or not self._turns or self._complete:
            return
        current = self._turns[-1]
        for agent in acting:
            info = dict(infos.get(agent, {}))
            error = info.pop("action_error", None)
            info.pop("messages", None)  # the turn's messages are kept once, with their recipients
            if error is None:
                current["actions"][agent] = _json(
                    self.world_env.decode_action(agent, actions.get(agent))
                )
            else:
                current["action_errors"][agent] = str(error)
            current["rewards"][agent] = float(rewards.get(agent, 0.0))
            if info:
                current["infos"][agent] = _json(info)
        current["messages"] = [m.model_dump() for m in self.world_env.messages_sent]
        current["terminated"] = [a for a in acting if terminations.get(a)]
        current["truncated"] = [a for a in acting if truncations.get(a)]
        self._turns.append(self._observed_turn(acting))
        self._log = None
        done = set(current["terminated"]) | set(current["truncated"])
        if done >= set(acting):
            self._complete = True
            self._flush()

    def close(self) -> None:
        """Write the episode in progress, if any."""
        self._flush()

    def _observed_turn(self, live: list[str]) -> dict[str, Any]:
        world = self.world_env.world
        assert world is not None
        views = observe_all(world, self.plan, seed=self.world_env.seed_value, observers=live)
        shown = set(live)
        observations = {
            observer: {
                "agents": _json(
                    _without_name({t: v for t, v in view.agents.items() if t in shown})
                ),
                "global_state": _json(view.global_state)
                if self.plan.can_ever_see(observer, GLOBAL_TARGET)
                else None,
            }
            for observer, view in views.items()
        }
        return {
            "turn": world.turn,
            "state": {
                "agents": _json(_without_name(world.agents)),
                "global_state": _json(world.global_state),
            },
            "observations": observations,
            "actions": {},
            "action_errors": {},
            "rewards": {},
            "infos": {},
            "messages": [],
        }

    def _build(self) -> EpisodeLog:
        config = self.world_env.config
        variables = config.state_variables
        return EpisodeLog(
            world=config.simulation.name,
            config_hash=config.config_hash,
            seed=self._seed,
            agents=config.agent_names,
            agent_variables=list(variables.agent_vars),
            global_variables=list(variables.global_vars),
            observability=self.plan.enabled,
            distribution="gaussian" if self.plan.gaussian else "uniform",
            cells=self.cells,
            turns=self._turns,  # validated into TurnDTOs here
            complete=self._complete,
        )

    def _flush(self) -> None:
        if self._written or not self._turns:
            return
        self._written = True
        if self.target is None:
            return
        if self.target.suffix in (".json", ".gz"):
            path = self.target
        else:
            name = self.world_env.config.simulation.name
            path = self.target / f"{name}-episode-{self._episodes}.json"
        self._episodes += 1
        log = self.episode_log
        assert log is not None
        self.paths.append(save_episode_log(log, path))
