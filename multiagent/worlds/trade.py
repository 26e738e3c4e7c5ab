"""The trade world's dynamics: travel, trade at local prices, production and a reacting market.

One turn, in this order:

1. The agents act in an order drawn from ``rng`` (earlier ones find fuller stocks). ``move``
   steps toward ``target_town`` (at most ``speed``, half that when ``carrying``; 1 stamina).
   ``buy`` / ``sell`` trade ``amount`` of ``good`` at ``target_town``'s local price, when within
   ``trade_radius`` and the market is open. ``produce`` harvests ``good`` from the nearest town's
   stock (stamina and mana; the yield grows with that stock, the trader's mana and, for food, the
   season). ``rest`` restores stamina, health and mana. Acting without the stamina costs
   ``strain`` health instead; an agent without a valid action idles.
2. Every town's stock regrows toward ``capacity`` (logistically: an empty stock only refills by
   trade), its people eat food, and its population grows when fed and shrinks when not. The
   capital is a town like the others, reached by its name.
3. Global prices move against the change in total supply; the market may close for the next turn.
4. Each agent's derived variables: ``economic_strength`` (gold plus goods at the new prices),
   ``secret_reserves`` (interest on gold), ``mood``, ``carrying`` and the two histories.

Reward: ``tanh(change in economic strength / reward_scale)``. Nobody terminates: ``max_turns``
truncates the episode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from multiagent.world_state import Transition, WorldState

if TYPE_CHECKING:
    import numpy as np

__all__ = ["GOODS", "TradeParams", "dynamics", "local_price"]

GOODS = ("food", "wood", "metal")
SEASONS = ("spring", "summer", "autumn", "winter")
# The bounds trade.yaml declares for these variables.
MAP_SIZE = 100.0
HEALTH_MAX = 100.0
MANA_MAX = 100.0
STAMINA_MAX = 10


@dataclass(frozen=True)
class TradeParams:
    """The ``engine`` section's parameters; the defaults are the packaged world's values.

    Example:
        >>> from multiagent.worlds import load_world
        >>> TradeParams(**load_world("trade").engine.params) == TradeParams()
        True
        >>> TradeParams(closure_probability=0.0).season_yield["winter"]
        0.5
    """

    speed: float = 10.0  # map units per move
    trade_radius: float = 5.0  # how close to a town a trader must be to trade there
    load_limit: float = 30.0  # goods held above which a trader is `carrying` (half speed)
    strain: float = 5.0  # health lost by acting without the stamina
    produce_stamina: int = 3
    produce_mana: float = 10.0
    half_saturation: float = 500.0  # the stock at which a harvest yields half the amount
    season_yield: dict[str, float] = field(
        default_factory=lambda: {"spring": 1.0, "summer": 1.25, "autumn": 1.0, "winter": 0.5}
    )  # multiplies food harvests
    rest_stamina: int = 3
    rest_health: float = 10.0
    rest_mana: float = 15.0
    regrowth: float = 0.02  # logistic regrowth rate of a town's stocks
    capacity: float = 1000.0  # the stock a town's regrowth tends to
    resource_max: float = 10000.0  # the declared bound of a stock
    food_per_person: float = 0.002  # food a town eats per inhabitant per turn
    fed_turns: float = 10.0  # turns of food in stock above which a town grows
    growth: float = 0.005
    decline: float = 0.01
    reference_stock: float = 500.0  # the stock at which a town's price is the global price
    local_elasticity: float = 1.0
    local_spread: float = 3.0  # a local price stays within [1/spread, spread] x the global
    elasticity: float = 0.5  # how global prices answer a change in total supply
    price_min: float = 0.5
    price_max: float = 200.0
    closure_probability: float = 0.1  # chance the market is closed on a turn
    season_length: int = 10  # turns per season
    reserve_rate: float = 0.005  # secret reserves grow by this fraction of gold per turn
    anxious_health: float = 30.0
    greedy_gain: float = 0.01  # relative gain in a turn that makes a trader greedy
    reward_scale: float = 50.0
    action_history_length: int = 10
    position_history_length: int = 20


@dataclass(frozen=True)
class _Turn:
    """What every action of one turn reads; ``venues`` are this turn's (copied) towns."""

    params: TradeParams
    venues: dict[str, dict[str, Any]]
    prices: Mapping[str, float]
    market_open: bool
    season: str


def dynamics(
    state: WorldState,
    actions: dict[str, dict[str, Any]],
    rng: np.random.Generator,
    params: dict[str, Any],
) -> Transition:
    """One turn of the trade world (the steps are in the module docstring)."""
    p = TradeParams(**params)
    world = _copy_world(state.global_state)
    venues = _venues(world)
    prices = state.global_state["prices"]
    supply = _supply(venues)
    turn = _Turn(p, venues, prices, world["market_open"], world["season"])
    agents = {name: _copy_agent(agent) for name, agent in state.agents.items()}
    names = list(agents)
    infos: dict[str, dict[str, Any]] = {}
    for index in rng.permutation(len(names)):
        name = names[index]
        action = actions.get(name)
        verb = action["verb"] if action else "idle"
        outcome = _ACTIONS[verb](agents[name], action, turn) if action else "idle"
        infos[name] = {"verb": verb, "outcome": outcome}
    for venue in venues.values():
        _regrow(venue, p)
    world["prices"] = _reprice(prices, supply, _supply(venues), p)
    world["market_open"] = bool(rng.random() >= p.closure_probability)
    world["season"] = _season(state.turn + 1, world["season"], p)
    rewards = {
        name: _settle(agent, infos[name]["verb"], _strength(state.agents[name], prices), world, p)
        for name, agent in agents.items()
    }
    return Transition(
        state=WorldState(turn=state.turn + 1, agents=agents, global_state=world),
        rewards=rewards,
        terminations=dict.fromkeys(agents, False),
        infos=infos,
    )


def local_price(
    global_state: Mapping[str, Any], town: str, good: str, params: Mapping[str, Any] | None = None
) -> float:
    """The price of ``good`` at ``town`` (or the capital): dearer where the town's stock is short.

    Local prices are what makes hauling goods between towns pay.
    """
    venue = _venues(global_state)[town]
    stock = venue["resources"].get(good, 0.0)
    return _price(global_state["prices"][good], stock, TradeParams(**(params or {})))


def _price(reference: float, stock: float, p: TradeParams) -> float:
    scarcity = (p.reference_stock / max(stock, 1.0)) ** p.local_elasticity
    return reference * _clip(scarcity, 1.0 / p.local_spread, p.local_spread)


# -- copies: the input state is read-only -------------------------------------------------------


def _copy_venue(venue: Mapping[str, Any]) -> dict[str, Any]:
    return {**venue, "resources": dict(venue["resources"])}


def _copy_world(global_state: Mapping[str, Any]) -> dict[str, Any]:
    towns = {name: _copy_venue(town) for name, town in global_state["towns"].items()}
    return {**global_state, "towns": towns, "capital": _copy_venue(global_state["capital"])}


def _copy_agent(agent: Mapping[str, Any]) -> dict[str, Any]:
    return {**agent, "inventory": dict(agent["inventory"]), "stats": dict(agent["stats"])}


def _venues(world: Mapping[str, Any]) -> dict[str, Any]:
    """Every place to travel to and trade at, by name: the towns and the capital."""
    return {**world["towns"], world["capital"]["name"]: world["capital"]}


# -- actions ------------------------------------------------------------------------------------


def _tire(agent: dict[str, Any], cost: int, p: TradeParams) -> bool:
    """Pays ``cost`` stamina; without enough, the effort costs health and fails."""
    stats = agent["stats"]
    if stats["stamina"] < cost:
        stats["health"] = max(0.0, stats["health"] - p.strain)
        return False
    stats["stamina"] -= cost
    return True


def _move(agent: dict[str, Any], action: Mapping[str, Any], turn: _Turn) -> str:
    p = turn.params
    if not _tire(agent, 1, p):
        return "exhausted"
    (x, y), (tx, ty) = agent["location"], turn.venues[action["target_town"]]["position"]
    speed = p.speed / 2 if _load(agent) > p.load_limit else p.speed
    distance = math.hypot(tx - x, ty - y)
    fraction = 1.0 if distance <= speed else speed / distance
    agent["location"] = (
        _clip(x + (tx - x) * fraction, 0.0, MAP_SIZE),
        _clip(y + (ty - y) * fraction, 0.0, MAP_SIZE),
    )
    return "moved"


def _market(
    agent: Mapping[str, Any], action: Mapping[str, Any], turn: _Turn
) -> tuple[dict[str, Any], float, float] | str:
    """(town, its stock of the good, its price), or why no trade can happen there."""
    venue = turn.venues[action["target_town"]]
    if not turn.market_open:
        return "market_closed"
    if math.dist(agent["location"], venue["position"]) > turn.params.trade_radius:
        return "too_far"
    stock = venue["resources"].get(action["good"], 0.0)
    return venue, stock, _price(turn.prices[action["good"]], stock, turn.params)


def _buy(agent: dict[str, Any], action: Mapping[str, Any], turn: _Turn) -> str:
    market = _market(agent, action, turn)
    if isinstance(market, str):
        return market
    venue, stock, price = market
    good = action["good"]
    amount = min(action["amount"], stock, agent["gold"] / price)
    agent["gold"] = max(0.0, agent["gold"] - amount * price)
    agent["inventory"][good] = agent["inventory"].get(good, 0.0) + amount
    venue["resources"][good] = max(0.0, stock - amount)
    return "bought"


def _sell(agent: dict[str, Any], action: Mapping[str, Any], turn: _Turn) -> str:
    market = _market(agent, action, turn)
    if isinstance(market, str):
        return market
    venue, stock, price = market
    good = action["good"]
    held = agent["inventory"].get(good, 0.0)
    amount = min(action["amount"], held, turn.params.resource_max - stock)
    agent["gold"] += amount * price
    agent["inventory"][good] = max(0.0, held - amount)
    venue["resources"][good] = stock + amount
    return "sold"


def _produce(agent: dict[str, Any], action: Mapping[str, Any], turn: _Turn) -> str:
    p, stats, good = turn.params, agent["stats"], action["good"]
    if not _tire(agent, p.produce_stamina, p):
        return "exhausted"
    venue = min(turn.venues.values(), key=lambda v: math.dist(agent["location"], v["position"]))
    stock = venue["resources"].get(good, 0.0)
    season = p.season_yield.get(turn.season, 1.0) if good == "food" else 1.0
    focus = 0.5 + stats["mana"] / (2 * MANA_MAX)
    abundance = stock / (stock + p.half_saturation)
    harvest = min(stock, action["amount"] * abundance * season * focus)
    stats["mana"] = max(0.0, stats["mana"] - p.produce_mana)
    agent["inventory"][good] = agent["inventory"].get(good, 0.0) + harvest
    venue["resources"][good] = stock - harvest
    return "produced"


def _rest(agent: dict[str, Any], action: Mapping[str, Any], turn: _Turn) -> str:
    p, stats = turn.params, agent["stats"]
    stats["stamina"] = min(STAMINA_MAX, stats["stamina"] + p.rest_stamina)
    stats["health"] = min(HEALTH_MAX, stats["health"] + p.rest_health)
    stats["mana"] = min(MANA_MAX, stats["mana"] + p.rest_mana)
    return "rested"


_ACTIONS: dict[str, Callable[[dict[str, Any], Mapping[str, Any], _Turn], str]] = {
    "move": _move,
    "buy": _buy,
    "sell": _sell,
    "produce": _produce,
    "rest": _rest,
}


# -- the world's own turn -----------------------------------------------------------------------


def _regrow(venue: dict[str, Any], p: TradeParams) -> None:
    resources, people = venue["resources"], venue["population"]
    eaten = p.food_per_person * people
    for good in GOODS:
        stock = resources.get(good, 0.0)
        stock += p.regrowth * stock * (1.0 - stock / p.capacity)
        resources[good] = _clip(stock - (eaten if good == "food" else 0.0), 0.0, p.resource_max)
    fed = resources["food"] >= eaten * p.fed_turns
    venue["population"] = max(0, round(people * (1 + p.growth if fed else 1 - p.decline)))


def _supply(venues: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    return {g: sum(v["resources"].get(g, 0.0) for v in venues.values()) for g in GOODS}


def _reprice(
    prices: Mapping[str, float],
    before: Mapping[str, float],
    after: Mapping[str, float],
    p: TradeParams,
) -> dict[str, float]:
    """Each price scaled by (old supply / new supply) ** elasticity: scarcity makes it dearer."""
    return {
        good: _clip(
            price * ((before.get(good, 0.0) + 1.0) / (after.get(good, 0.0) + 1.0)) ** p.elasticity,
            p.price_min,
            p.price_max,
        )
        for good, price in prices.items()
    }


def _season(turn: int, season: str, p: TradeParams) -> str:
    if turn % p.season_length:
        return season
    return SEASONS[(SEASONS.index(season) + 1) % len(SEASONS)]


# -- each agent's derived variables -------------------------------------------------------------


def _load(agent: Mapping[str, Any]) -> float:
    return sum(agent["inventory"].values())


def _strength(agent: Mapping[str, Any], prices: Mapping[str, float]) -> float:
    goods = sum(amount * prices.get(good, 0.0) for good, amount in agent["inventory"].items())
    return agent["gold"] + goods


def _settle(
    agent: dict[str, Any], verb: str, before: float, world: Mapping[str, Any], p: TradeParams
) -> float:
    """Updates the derived variables and returns the reward."""
    after = _strength(agent, world["prices"])
    stats = agent["stats"]
    agent["economic_strength"] = after
    agent["secret_reserves"] += p.reserve_rate * agent["gold"]
    agent["carrying"] = _load(agent) > p.load_limit
    if stats["health"] < p.anxious_health or stats["stamina"] == 0:
        agent["mood"] = "anxious"
    elif after - before > p.greedy_gain * max(before, 1.0):
        agent["mood"] = "greedy"
    else:
        agent["mood"] = "content"
    agent["action_history"] = [*agent["action_history"], verb][-p.action_history_length :]
    agent["position_history"] = [*agent["position_history"], agent["location"]][
        -p.position_history_length :
    ]
    return math.tanh((after - before) / p.reward_scale)


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)
