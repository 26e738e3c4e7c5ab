"""``ModelPlayer``: a Stable-Baselines3 model trained on one seat plays it (``model:PATH``).

A model trained with ``python -m training ppo --set env=world:...`` saw its seat through
``FlattenForSB3(SingleAgentEnv(parallel_env(config, observability=True), seat))``
(``training.envs.world_factory``). The player builds that same wrapper stack for each seat it
plays and uses its methods, so observations are flattened, and the model's actions decoded,
exactly as in training: ``FlattenForSB3.observation`` on the seat's observation,
``model.predict(..., deterministic=True)``, ``FlattenForSB3.action`` back to an element of the
world's action space, and ``multiagent.spaces.from_space_value`` to plain values.

The model is loaded on first use (SB3 and torch are imported only then). A seat whose flattened
observation space differs from the model's (another world, another seat's layout, or full
observability where the model was trained on the configured one) is refused with both spaces
named.
"""

from __future__ import annotations

import os
from typing import Any

from envkit.sb3_models import load_sb3_model
from multiagent.config import SimulationConfig
from multiagent.players.base import SeatTurn, WorldPlayer, WorldPlayerSpecError
from multiagent.spaces import from_space_value
from multiagent.variables import VariableDefinition

__all__ = ["ModelPlayer", "load_world_model"]


def load_world_model(path: str | os.PathLike[str]) -> Any:
    """The PPO (or MaskablePPO) model saved at ``path`` (``.zip`` may be left off).

    Raises ``FileNotFoundError`` when there is no such file and ``WorldPlayerSpecError`` when
    the file is not a saved model or SB3 is missing.

    Example:
        >>> load_world_model("runs/nowhere/model.zip")
        Traceback (most recent call last):
        ...
        FileNotFoundError: no saved model at 'runs/nowhere/model.zip'
    """
    return load_sb3_model(path, missing=FileNotFoundError, invalid=WorldPlayerSpecError)


class ModelPlayer(WorldPlayer):
    """A saved SB3 model playing any seat whose flattened observation space matches its own.

    Args:
        config: the world.
        path: the saved model (``.zip``), loaded on the first ``act``.
        name: the player's name (default: the path).

    Actions are the model's deterministic choice, so ``reset``'s seed changes nothing.
    """

    def __init__(self, config: SimulationConfig, path: str, name: str | None = None) -> None:
        self.config, self.path = config, path
        self.name = name or f"model:{path}"
        self._definition = VariableDefinition(type="object", schema_=config.actions)
        self._model: Any = None
        self._flatteners: dict[str, Any] = {}

    @property
    def model(self) -> Any:
        """The SB3 model, loaded on first use."""
        if self._model is None:
            self._model = load_world_model(self.path)
        return self._model

    def flattener(self, agent: str) -> Any:
        """The ``FlattenForSB3`` stack the seat ``agent`` was trained through (built once)."""
        if agent not in self._flatteners:
            from multiagent.env import parallel_env
            from multiagent.wrappers import FlattenForSB3, SingleAgentEnv

            env = parallel_env(self.config, observability=True)
            flattener = FlattenForSB3(SingleAgentEnv(env, agent))
            if flattener.observation_space != self.model.observation_space:
                raise WorldPlayerSpecError(
                    f"player {self.name!r}: seat {agent}'s flattened observation differs from "
                    f"the model's ({_difference(flattener.observation_space, self.model)}); a "
                    "model plays the seat (and the observability) of the world it was trained on"
                )
            self._flatteners[agent] = flattener
        return self._flatteners[agent]

    def act(self, turn: SeatTurn) -> dict[str, Any]:
        first = turn.agent not in self._flatteners
        flattener = self.flattener(turn.agent)
        if first and not flattener.env.observation_space.contains(turn.observation):
            raise WorldPlayerSpecError(
                f"player {self.name!r}: seat {turn.agent}'s observation is not in the space the "
                "model was trained on (the configured observability); play it with that"
            )
        flat, _ = self.model.predict(flattener.observation(turn.observation), deterministic=True)
        action: dict[str, Any] = from_space_value(self._definition, flattener.action(flat))
        return action


def _difference(seat_space: Any, model: Any) -> str:
    """The first keys (or the spaces) in which the seat's flattened space and the model's differ."""
    seat, trained = dict(seat_space.spaces), dict(getattr(model.observation_space, "spaces", {}))
    only_seat = [key for key in seat if key not in trained][:3]
    only_model = [key for key in trained if key not in seat][:3]
    changed = [key for key in seat if key in trained and seat[key] != trained[key]][:3]
    parts = [f"the seat has {only_seat}"] if only_seat else []
    parts += [f"the model has {only_model}"] if only_model else []
    parts += [f"{key}: {seat[key]} here, {trained[key]} in training" for key in changed]
    return "; ".join(parts) or f"{model.observation_space} in training"
