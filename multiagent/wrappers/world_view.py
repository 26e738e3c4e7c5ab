"""``WorldViewWrapper``: the base of wrappers that build observations from the ground truth."""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils import BaseParallelWrapper

__all__ = ["WorldViewWrapper"]


class WorldViewWrapper(BaseParallelWrapper):
    """Replaces the inner observations by ``observe(observers)``, computed from ``world_env``.

    After a step, the agents that acted (those just finished included) get observations, as
    PettingZoo's parallel API expects.

    Example:
        >>> from multiagent import parallel_env
        >>> class TurnView(WorldViewWrapper):  # each agent observes the turn number only
        ...     def observe(self, observers):
        ...         return {agent: self.world_env.world.turn for agent in observers}
        >>> env = TurnView(parallel_env("forage"))
        >>> _ = env.reset(seed=0)
        >>> env.step(dict.fromkeys(env.agents, {"move": "up"}))[0]
        {'Forager_1': 1, 'Forager_2': 1, 'Forager_3': 1}
    """

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self.world_env = env.unwrapped

    def observe(self, observers: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        _, infos = self.env.reset(seed=seed, options=options)
        return self.observe(list(self.env.agents)), infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        acting = list(self.env.agents)
        _, rewards, terminations, truncations, infos = self.env.step(actions)
        return self.observe(acting), rewards, terminations, truncations, infos
