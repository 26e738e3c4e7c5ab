"""The harbour world's dynamics (message_world.yaml): each fisher takes fish from the stock into
its gold; a fisher that says ``leave`` is done."""

from __future__ import annotations

from typing import Any

import numpy as np

from multiagent.world_state import Transition, WorldState


def step(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: np.random.Generator, params: dict
) -> Transition:
    """Everyone acting takes ``take`` fish (as far as the stock goes); reward = fish taken."""
    agents = {name: dict(values) for name, values in state.agents.items()}
    stock, rewards = state.global_state["stock"], {}
    for name, action in actions.items():
        taken = min(action["take"], stock)
        stock -= taken
        agents[name]["gold"] += taken
        rewards[name] = float(taken)
    terminations = {name: bool(action["leave"]) for name, action in actions.items()}
    global_state = {**state.global_state, "stock": stock}
    return Transition(WorldState(state.turn + 1, agents, global_state), rewards, terminations)
