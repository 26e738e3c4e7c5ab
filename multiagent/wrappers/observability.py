"""``ObservabilityWrapper``: every agent sees the world as the config's observability says."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.observation_layout import ObservationLayout
from multiagent.wrappers.world_view import WorldViewWrapper

__all__ = ["ObservabilityWrapper"]


class ObservabilityWrapper(WorldViewWrapper):
    """Filters and noises every agent's observation by the config's observability matrix.

    Unaware targets are left out of an observer's space, external ones show only their external
    variables, and noise follows ``multiagent.noise`` (deterministic from the env's seed, the
    turn, the observer, the target and the variable). It reads the ground truth from the world
    env, so put it directly on ``parallel_env(...)``; other wrappers go on top of it.

    Example:
        >>> from multiagent import parallel_env
        >>> env = ObservabilityWrapper(parallel_env("trade"))
        >>> observations, _ = env.reset(seed=0)
        >>> sorted(observations["Trader_1"]["others"])  # Trader_4 is unaware to Trader_1
        ['Trader_2', 'Trader_3']
    """

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self.plan = ObservabilityPlan(self.world_env.config)
        self._layouts = {
            agent: ObservationLayout.from_plan(self.plan, agent) for agent in env.possible_agents
        }
        self._spaces = {agent: layout.space() for agent, layout in self._layouts.items()}

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[agent]

    def observe(self, observers: list[str]) -> dict[str, Any]:
        world = self.world_env.world
        views = observe_all(world, self.plan, seed=self.world_env.seed_value, observers=observers)
        live = set(observers)
        return {
            agent: self.world_env.encode_view(
                agent, views[agent], live, self._layouts[agent], self._spaces[agent]
            )
            for agent in observers
        }
