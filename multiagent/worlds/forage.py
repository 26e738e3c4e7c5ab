"""The forage world's dynamics: foragers on a small grid race for one food item that respawns.

Each turn every forager moves one cell (``up`` is row - 1, ``left`` is column - 1; the grid's edge
stops it) for ``move_cost`` energy, or stays for ``stay_cost``; one with too little energy to move
stays. The first forager on the food's cell, in an order drawn from ``rng``, collects it: reward
``food_reward``, the item goes into its pouch (``carrying``; eaten at once when the pouch is full)
and the food respawns on a random cell no forager stands on. A forager whose energy is below
``hungry`` eats one item from its pouch. Everyone pays ``step_penalty`` per turn, so the shortest
way to the food pays best: a policy that walks toward the (noisily observed) food beats a random
one by a wide margin, which is what makes the world a learning benchmark.

``walk_to_food`` is that policy as a scripted baseline
(``scripted:multiagent.worlds.forage:walk_to_food``): it reads the seat's
``ObservationEnvelope`` (``turn.envelope``) and returns a plain action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from multiagent.world_state import Transition, WorldState

if TYPE_CHECKING:
    import numpy as np

    from multiagent.dto import ObservationEnvelope

__all__ = ["MOVES", "ForageParams", "dynamics", "walk_to_food"]

MOVES = {"stay": (0, 0), "up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


@dataclass(frozen=True)
class ForageParams:
    """The ``engine`` section's parameters; the defaults are the packaged world's values.

    Example:
        >>> from multiagent.worlds import load_world
        >>> ForageParams(**load_world("forage").engine.params) == ForageParams()
        True
        >>> ForageParams(grid_size=5, pouch=2).max_energy
        100.0
    """

    grid_size: int = 7  # cells per side; forage.yaml bounds positions to 0..grid_size - 1
    food_reward: float = 1.0
    step_penalty: float = 0.01  # paid by every forager every turn
    move_cost: float = 1.0  # energy
    stay_cost: float = 0.25
    hungry: float = 50.0  # energy below which a forager eats from its pouch
    meal: float = 25.0  # energy one food item gives
    pouch: int = 5  # items a forager can carry
    max_energy: float = 100.0


def dynamics(
    state: WorldState,
    actions: dict[str, dict[str, Any]],
    rng: np.random.Generator,
    params: dict[str, Any],
) -> Transition:
    """One turn of the forage world (the rules are in the module docstring)."""
    p = ForageParams(**params)
    agents = {
        name: _moved(agent, actions.get(name, {}).get("move", "stay"), p)
        for name, agent in state.agents.items()
    }
    rewards = dict.fromkeys(agents, -p.step_penalty)
    food, eaten = tuple(state.global_state["food"]), state.global_state["eaten"]
    names = list(agents)
    collector = next(
        (names[i] for i in rng.permutation(len(names)) if agents[names[i]]["position"] == food),
        None,
    )
    if collector is not None:
        rewards[collector] += p.food_reward
        _collect(agents[collector], p)
        food, eaten = _free_cell(agents, rng, p), eaten + 1
    for agent in agents.values():
        if agent["energy"] < p.hungry and agent["carrying"] > 0:
            agent["carrying"] -= 1
            agent["energy"] = min(p.max_energy, agent["energy"] + p.meal)
    return Transition(
        state=WorldState(
            turn=state.turn + 1,
            agents=agents,
            global_state={**state.global_state, "food": food, "eaten": eaten},
        ),
        rewards=rewards,
        terminations=dict.fromkeys(agents, False),
        infos={name: {"collected": name == collector} for name in agents},
    )


def _moved(agent: Mapping[str, Any], move: str, p: ForageParams) -> dict[str, Any]:
    """A copy of ``agent`` after its move (a tired forager stays)."""
    if agent["energy"] < p.move_cost:
        move = "stay"
    (row, col), (d_row, d_col) = agent["position"], MOVES[move]
    last = p.grid_size - 1
    cost = p.stay_cost if move == "stay" else p.move_cost
    return {
        **agent,
        "position": (min(max(row + d_row, 0), last), min(max(col + d_col, 0), last)),
        "energy": max(0.0, agent["energy"] - cost),
    }


def _collect(agent: dict[str, Any], p: ForageParams) -> None:
    if agent["carrying"] < p.pouch:
        agent["carrying"] += 1
    else:
        agent["energy"] = min(p.max_energy, agent["energy"] + p.meal)


def _free_cell(
    agents: Mapping[str, Mapping[str, Any]], rng: np.random.Generator, p: ForageParams
) -> tuple[int, int]:
    """A uniformly drawn cell no forager stands on (any cell if they fill the grid)."""
    taken = {agent["position"] for agent in agents.values()}
    cells = [(r, c) for r in range(p.grid_size) for c in range(p.grid_size)]
    free = [cell for cell in cells if cell not in taken] or cells
    return free[int(rng.integers(len(free)))]


class _Turn(Protocol):
    """What a scripted policy is given: the seat's observation (a players ``SeatTurn``)."""

    @property
    def envelope(self) -> ObservationEnvelope: ...


def walk_to_food(turn: _Turn) -> dict[str, str]:
    """One step toward the food where this forager sees it: rows first, then columns.

    The forager's own position is exact (it is its own insider); the food's cell comes through
    the global observation's noise, so the walk wobbles near the food. A forager that sees no
    food (or does not see itself) stays.

    Example:
        >>> from types import SimpleNamespace
        >>> from multiagent.dto import AgentObservation, GlobalObservation, ObservationEnvelope
        >>> me = AgentObservation(name="Forager_1", variables={"position": (0, 0)},
        ...                       level="insider", noise=0)
        >>> food = GlobalObservation(variables={"food": (0, 4)}, level="external", noise=0.15)
        >>> envelope = ObservationEnvelope(turn=0, observer="Forager_1",
        ...                                agents={"Forager_1": me}, global_context=food)
        >>> walk_to_food(SimpleNamespace(envelope=envelope))
        {'move': 'right'}
    """
    envelope = turn.envelope
    me, context = envelope.agents.get(envelope.observer), envelope.global_context
    if me is None or context is None or "food" not in context.variables:
        return {"move": "stay"}
    (row, col), (food_row, food_col) = me.variables["position"], context.variables["food"]
    if food_row != row:
        return {"move": "down" if food_row > row else "up"}
    if food_col != col:
        return {"move": "right" if food_col > col else "left"}
    return {"move": "stay"}
