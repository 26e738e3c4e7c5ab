"""``SingleAgentEnv``: one agent of a world learns; the others act by given policies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

__all__ = ["Policy", "SingleAgentEnv"]

Policy = Callable[[Any], Any]  # an agent's observation -> an element of its action space


class SingleAgentEnv(gym.Env):
    """A Gymnasium view of a ``ParallelEnv`` in which ``agent`` learns.

    Args:
        env: the world (``parallel_env(...)``, usually wrapped for observability).
        agent: the learning agent.
        others: how the other agents act: None (uniformly random actions from their action
            spaces, seeded by ``reset``), one policy for all of them, or ``{agent: policy}``
            (agents left out act randomly). A policy maps the agent's observation to an
            element of its action space.

    The episode ends when the learning agent terminates or is truncated; agents that finish
    before it simply stop acting.

    Example:
        >>> from multiagent import parallel_env
        >>> env = SingleAgentEnv(parallel_env("forage"), "Forager_1")
        >>> obs, info = env.reset(seed=0)
        >>> env.observation_space.contains(obs)
        True
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        env: ParallelEnv,
        agent: str,
        others: Policy | Mapping[str, Policy] | None = None,
    ) -> None:
        if agent not in env.possible_agents:
            raise ValueError(f"unknown agent {agent!r}; the agents are {env.possible_agents}")
        self.env, self.agent = env, agent
        if isinstance(others, Mapping):
            unknown = sorted(set(others) - set(env.possible_agents) - {agent})
            if unknown:
                raise ValueError(f"policies given for unknown agents {unknown}")
        self.others = others
        self.observation_space = env.observation_space(agent)
        self.action_space = env.action_space(agent)
        self.render_mode = getattr(env, "render_mode", None)
        self._observations: dict[str, Any] = {}
        self._others_rng = np.random.default_rng()

    def _policy(self, agent: str) -> Policy | None:
        if isinstance(self.others, Mapping):
            return self.others.get(agent)
        return self.others

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._others_rng = np.random.default_rng(self.np_random.integers(2**63 - 1))
        for agent in self.env.possible_agents:
            if agent != self.agent:
                self.env.action_space(agent).seed(int(self._others_rng.integers(2**31)))
        self._observations, infos = self.env.reset(seed=seed, options=options)
        return self._observations[self.agent], infos.get(self.agent, {})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.agent not in self.env.agents:
            raise RuntimeError(f"{self.agent}'s episode is over; call reset()")
        actions = {self.agent: action}
        for agent in self.env.agents:
            if agent != self.agent:
                policy = self._policy(agent)
                observation = self._observations.get(agent)
                actions[agent] = (
                    policy(observation) if policy is not None
                    else self.env.action_space(agent).sample()
                )  # fmt: skip
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        self._observations = observations
        return (
            observations[self.agent],
            float(rewards[self.agent]),
            bool(terminations[self.agent]),
            bool(truncations[self.agent]),
            infos.get(self.agent, {}),
        )

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
