"""What every world player is: ``SeatTurn`` in, plain action values out.

- ``SeatTurn``: one seat's turn as a player sees it (its observation, the same view as the DTO an
  LLM reads, its action space, and why its previous action was refused).
- ``WorldPlayer``: the base class of every world player (``reset``, ``act``, ``close``).
- ``WorldPlayerSpecError``: a spec that names no world player, or one with a bad argument.
- ``fallback_action(config)``: the action a seat takes when it does nothing (``noop``, and what a
  harness sends for a seat whose player failed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces

from envkit.errors import PlayerSpecError
from multiagent.config import SimulationConfig
from multiagent.dto import ObservationEnvelope

__all__ = ["SeatTurn", "WorldPlayer", "WorldPlayerSpecError", "fallback_action"]


class WorldPlayerSpecError(PlayerSpecError):
    """A world player spec that names no player, or names one with a bad argument or option
    (an ``envkit.errors.PlayerSpecError``, as chess's player-spec errors are)."""


@dataclass(frozen=True)
class SeatTurn:
    """What the player of one seat is given on one turn.

    Attributes:
        agent: the seat (the agent's name).
        turn: the world's turn number (0 on the first decision).
        observation: the seat's observation as ``ObservabilityWrapper`` returns it (an element of
            its ``observation_space(agent)``, noise applied), or the ground truth under full
            observability.
        envelope: the same view as the DTO an LLM reads (``observation_envelope``).
        action_space: the seat's action space in the world env.
        feedback: why the env refused this seat's previous action; None when it was accepted.
    """

    agent: str
    turn: int
    observation: Any
    envelope: ObservationEnvelope
    action_space: spaces.Space[Any]
    feedback: str | None = None


class WorldPlayer(ABC):
    """A player for any seat of a world: ``reset`` per episode, ``act`` per turn.

    ``act`` returns plain values (``{"move": "up"}``), which ``WorldEnv.step`` validates; an
    element of the action space is accepted by the env too. ``calls_endpoint`` is True for
    players that wait on a remote model, so a harness can ask them concurrently.
    """

    name: str = "player"
    calls_endpoint: bool = False

    def reset(self, seed: int | None, *, scope: str = "") -> None:  # noqa: B027 -- optional
        """Start an episode. ``seed`` fixes any randomness of the player; ``scope`` labels the
        episode and seat (e.g. ``"ep-3/Forager_1"``) for players that keep per-episode records."""

    @abstractmethod
    def act(self, turn: SeatTurn) -> dict[str, Any]:
        """The seat's action for ``turn``, as plain values."""

    def close(self) -> None:  # noqa: B027 -- optional hook
        """Release what the player holds (a client, a model)."""


def fallback_action(config: SimulationConfig) -> dict[str, Any]:
    """The action of a seat that does nothing: every action field at its default.

    A field's default is the declared one, else its type's natural one
    (``VariableDefinition.derived_default``): the first value of a categorical, the lower bound
    of a number (0 when unbounded below, capped by the upper bound), False, an empty container;
    a str without a default is None.

    Example:
        >>> from multiagent.worlds import load_world
        >>> fallback_action(load_world("forage"))
        {'move': 'stay'}
        >>> action = fallback_action(load_world("trade"))
        >>> action["verb"], action["amount"]
        ('move', 0.0)
    """
    return {name: defn.derived_default() for name, defn in config.actions.items()}
