"""The commons world's dynamics and its scripted baselines: fishers share a lake that regrows.

Each turn every fisher asks for ``harvest`` fish (a float in [0, 20]: a quantity, so both an LLM's
"12.5" and an RL policy's continuous action mean what they say). The catches are taken in an
order drawn from ``rng``: each fisher gets what it asked for, or what is left. Then the remaining
stock regrows: it is multiplied by a factor drawn uniformly in [``growth_low``, ``growth_high``]
(about doubling, as in GovSim, with noise so that episodes differ by seed) and capped at
``capacity``. A fisher's reward is the fish it caught; ``last_catch`` and ``total`` keep the
record, and ``infos`` say what each fisher ``asked`` for and ``caught``. The world's ``collapse``
section ends the episode for everyone once the regrown stock is below 5.

With doubling regrowth the lake yields at most half its capacity a turn forever (take half,
the rest doubles back): four fishers who each take an eighth of the stock keep it near capacity,
while four who each take the most allowed (80 of 100) empty it within three turns.

The baselines are player policies for ``scripted:multiagent.worlds.commons:NAME``: they read the
seat's ``ObservationEnvelope`` (``turn.envelope``) and return a plain action.

- ``greedy``: asks for the most allowed, whatever the stock.
- ``sustainable``: asks for its share of the sustainable yield of the stock it observes,
  ``stock / (2 N)`` with ``N`` the fishers it sees (itself included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from multiagent.world_state import Transition, WorldState

if TYPE_CHECKING:
    import numpy as np

    from multiagent.dto import ObservationEnvelope

__all__ = ["MAX_HARVEST", "CommonsParams", "dynamics", "greedy", "sustainable"]

MAX_HARVEST = 20.0  # commons.yaml's actions.harvest.max


@dataclass(frozen=True)
class CommonsParams:
    """The ``engine`` section's parameters; the defaults are the packaged world's values.

    Example:
        >>> from multiagent.worlds import load_world
        >>> CommonsParams(**load_world("commons").engine.params) == CommonsParams()
        True
    """

    capacity: float = 100.0  # fish the lake holds at most; commons.yaml bounds stock to it
    growth_low: float = 1.8  # the regrowth factor is drawn uniformly in [low, high]
    growth_high: float = 2.2


def dynamics(
    state: WorldState,
    actions: dict[str, dict[str, Any]],
    rng: np.random.Generator,
    params: dict[str, Any],
) -> Transition:
    """One turn of the commons world (the rules are in the module docstring).

    Example:
        >>> import numpy as np
        >>> fisher = {"last_catch": 0.0, "total": 0.0}
        >>> start = WorldState(0, {"A": {"name": "A", **fisher}, "B": {"name": "B", **fisher}},
        ...                    {"stock": 30.0})
        >>> turn = dynamics(start, {"A": {"harvest": 20.0}, "B": {"harvest": 20.0}},
        ...                 np.random.default_rng(0), {})
        >>> sorted(turn.rewards.values()), turn.state.global_state["stock"]
        ([10.0, 20.0], 0.0)
    """
    p = CommonsParams(**params)
    names = list(state.agents)
    asked = {name: float(actions.get(name, {}).get("harvest", 0.0)) for name in names}
    caught = dict.fromkeys(names, 0.0)
    left = float(state.global_state["stock"])
    for index in rng.permutation(len(names)):
        name = names[index]
        caught[name] = min(asked[name], left)
        left -= caught[name]
    stock = min(p.capacity, left * float(rng.uniform(p.growth_low, p.growth_high)))
    agents = {
        name: {**agent, "last_catch": caught[name], "total": agent["total"] + caught[name]}
        for name, agent in state.agents.items()
    }
    return Transition(
        state=WorldState(
            turn=state.turn + 1, agents=agents, global_state={**state.global_state, "stock": stock}
        ),
        rewards=caught,
        terminations=dict.fromkeys(names, False),
        infos={name: {"asked": asked[name], "caught": caught[name]} for name in names},
    )


class _Turn(Protocol):
    """What a scripted policy is given: the seat's observation (a players ``SeatTurn``)."""

    @property
    def envelope(self) -> ObservationEnvelope: ...


def greedy(turn: _Turn) -> dict[str, float]:
    """The most a fisher may ask for, every turn: the lake's fastest road to collapse.

    Example:
        >>> from types import SimpleNamespace
        >>> from multiagent.dto import ObservationEnvelope
        >>> greedy(SimpleNamespace(envelope=ObservationEnvelope(turn=0, observer="Fisher_1")))
        {'harvest': 20.0}
    """
    return {"harvest": MAX_HARVEST}


def sustainable(turn: _Turn) -> dict[str, float]:
    """This fisher's share of the observed stock's sustainable yield, ``stock / (2 N)``.

    ``N`` counts the fishers the envelope shows, itself included; a fisher that cannot see the
    stock takes nothing rather than guess.

    Example:
        >>> from types import SimpleNamespace
        >>> from multiagent.dto import AgentObservation, GlobalObservation, ObservationEnvelope
        >>> seen = {name: AgentObservation(name=name, variables={}, level="external", noise=0)
        ...         for name in ("Fisher_1", "Fisher_2", "Fisher_3", "Fisher_4")}
        >>> lake = GlobalObservation(variables={"stock": 96.0}, level="external", noise=0.1)
        >>> envelope = ObservationEnvelope(turn=3, observer="Fisher_1", agents=seen,
        ...                                global_context=lake)
        >>> sustainable(SimpleNamespace(envelope=envelope))
        {'harvest': 12.0}
    """
    envelope = turn.envelope
    context = envelope.global_context
    if context is None or "stock" not in context.variables:
        return {"harvest": 0.0}
    fishers = max(1, len(envelope.agents))
    share = float(context.variables["stock"]) / (2 * fishers)
    return {"harvest": min(MAX_HARVEST, share)}
