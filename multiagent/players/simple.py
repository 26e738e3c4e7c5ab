"""The world players that need nothing outside the package: ``random``, ``noop``, ``scripted``.

- ``RandomPlayer``: a uniform sample of the action space, from its own generator seeded by
  ``reset`` (the same seed gives the same actions).
- ``NoopPlayer``: always ``fallback_action(config)``.
- ``ScriptedPlayer``: a policy function ``policy(turn: SeatTurn) -> dict`` (``scripted:MODULE:
  FUNCTION``, or any callable given as a player).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from multiagent.config import SimulationConfig
from multiagent.players.base import SeatTurn, WorldPlayer, fallback_action
from multiagent.spaces import from_space_value, seed_space, space_for
from multiagent.variables import VariableDefinition

__all__ = ["NoopPlayer", "Policy", "RandomPlayer", "ScriptedPlayer"]

Policy = Callable[[SeatTurn], dict[str, Any]]
"""A scripted player's function: the seat's turn -> its action (plain values or a space element)."""


class RandomPlayer(WorldPlayer):
    """Uniformly random actions: a sample of the world's action space, as plain values.

    It samples its own copy of the space, seeded by ``reset`` (an unseeded reset draws fresh
    entropy), so its actions do not depend on the env's generators or on other seats.

    Example:
        >>> from multiagent.worlds import load_world
        >>> player = RandomPlayer(load_world("forage"))
        >>> player.reset(7); first = [player.act(None)["move"] for _ in range(3)]
        >>> player.reset(7); first == [player.act(None)["move"] for _ in range(3)]
        True
    """

    def __init__(self, config: SimulationConfig, name: str = "random") -> None:
        self.name = name
        self._definition = VariableDefinition(type="object", schema_=config.actions)
        self._space = space_for(self._definition) if config.actions else None

    def reset(self, seed: int | None, *, scope: str = "") -> None:
        if self._space is not None:
            seed_space(self._space, np.random.default_rng(seed))

    def act(self, turn: SeatTurn | None) -> dict[str, Any]:
        if self._space is None:
            return {}
        action: dict[str, Any] = from_space_value(self._definition, self._space.sample())
        return action


class NoopPlayer(WorldPlayer):
    """Always the world's fallback action (``fallback_action``): a seat that does nothing.

    Example:
        >>> from multiagent.worlds import load_world
        >>> NoopPlayer(load_world("forage")).act(None)
        {'move': 'stay'}
    """

    def __init__(self, config: SimulationConfig, name: str = "noop") -> None:
        self.name = name
        self._action = fallback_action(config)

    def act(self, turn: SeatTurn | None) -> dict[str, Any]:
        return dict(self._action)


class ScriptedPlayer(WorldPlayer):
    """A policy function as a player: ``policy(turn)`` is the action.

    The function gets the whole ``SeatTurn`` (the numeric observation, the envelope, the action
    space, the feedback on the last action) and returns plain values such as ``{"move": "up"}``
    (or an element of ``turn.action_space``). It is called once per turn; a policy that keeps
    state across episodes should be a ``WorldPlayer`` subclass instead (it gets ``reset``).

    Example:
        >>> player = ScriptedPlayer(lambda turn: {"move": "up"})
        >>> player.name, player.act(None)
        ('<lambda>', {'move': 'up'})
    """

    def __init__(self, policy: Policy, name: str | None = None) -> None:
        self.policy = policy
        self.name = name or str(getattr(policy, "__name__", type(policy).__name__))

    def act(self, turn: SeatTurn) -> dict[str, Any]:
        return self.policy(turn)
