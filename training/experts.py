"""Experts whose moves behaviour cloning imitates; each can also play as an opponent.

- ``chess_expert(spec)``: ``stockfish:DEPTH``, ``alphabeta:DEPTH`` or ``auto`` as an ``Opponent``,
  made by ``chess_env.core.players`` (the alpha-beta searcher, the expert when Stockfish is not
  installed, is ``chess_env.core.alphabeta.AlphaBetaOpponent``).
- ``ForageExpert`` and ``TradeExpert``: scripted policies for the built-in worlds, reading the
  observation a learner gets (``SingleAgentEnv`` on the world with its observability) and
  answering an element of the world's Dict action space; ``world_expert(world)`` picks one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from chess_env.core.opponents import Opponent
from chess_env.core.players import check_player, make_player, stockfish_installed
from multiagent.config import SimulationConfig
from multiagent.worlds import load_world
from multiagent.worlds.forage import MOVES
from multiagent.worlds.trade import GOODS, SEASONS, TradeParams, local_price

__all__ = [
    "CHESS_EXPERTS",
    "ForageExpert",
    "ScriptedWorld",
    "TradeExpert",
    "chess_expert",
    "world_expert",
]

# -- chess ----------------------------------------------------------------------------------------

CHESS_EXPERTS = ("stockfish", "alphabeta")


def chess_expert(spec: str) -> Opponent:
    """The chess expert ``spec`` names: ``stockfish:DEPTH``, ``alphabeta:DEPTH`` (the depth may
    be left out: Stockfish 1, alpha-beta 2) or ``auto`` (Stockfish at depth 1 when installed,
    else alpha-beta at depth 2).

    Example:
        >>> chess_expert("alphabeta:3")
        AlphaBetaOpponent(depth=3)
    """
    if spec == "auto":
        spec = "stockfish:1" if stockfish_installed() else "alphabeta:2"
    if check_player(spec).kind not in CHESS_EXPERTS:
        raise ValueError(
            f"chess expert {spec!r}: an expert is stockfish[:DEPTH], alphabeta[:DEPTH] or auto, "
            "players that search (their labels are what BC imitates)"
        )
    return make_player(spec)


# -- worlds ---------------------------------------------------------------------------------------


class ForageExpert:
    """Walks toward the food it sees, the longer axis first, and stays when it sees it underfoot.

    The food's cell is observed with noise that is drawn afresh every turn, so standing still on
    a wrong reading costs only ``stay_cost`` energy until the next reading points the way.

    Args:
        config: the forage world (default: the built-in one); the action indices come from its
            ``actions.move.values``.

    Example:
        >>> expert = ForageExpert()
        >>> expert({"self": {"position": (0, 0)}, "global": {"food": (3, 1)}})
        {'move': 2}
    """

    def __init__(self, config: SimulationConfig | None = None) -> None:
        config = config or load_world("forage")
        values = list(config.actions["move"].values or ())
        if set(values) != set(MOVES):
            raise ValueError(f"ForageExpert needs the moves {list(MOVES)}, the world has {values}")
        self._index = {name: values.index(name) for name in MOVES}

    def __call__(self, observation: dict[str, Any]) -> dict[str, int]:
        row, column = (int(x) for x in observation["self"]["position"])
        food = observation.get("global", {}).get("food")
        if food is None:
            return {"move": self._index["stay"]}
        down, right = int(food[0]) - row, int(food[1]) - column
        if down == right == 0:
            move = "stay"
        elif abs(down) >= abs(right):
            move = "down" if down > 0 else "up"
        else:
            move = "right" if right > 0 else "left"
        return {"move": self._index[move]}


def _floats(pairs: Any) -> dict[str, float]:
    """A dynamic dict as the observation gives it, ``((key, array([value])), ...)``, as floats."""
    return {key: float(np.asarray(value).ravel()[0]) for key, value in pairs}


def _point(position: Any) -> tuple[float, float]:
    return float(np.asarray(position[0]).ravel()[0]), float(np.asarray(position[1]).ravel()[0])


class TradeExpert:
    """A one-turn-greedy trader: the action that adds most to its economic strength now.

    The world's reward is the change in economic strength (gold plus goods at the global prices),
    so each candidate is scored by that change, with the world's own local-price formula
    (``multiagent.worlds.trade.local_price``):

    - sell a good where its local price is above the global one (the gain is the difference);
    - buy a good where it is below (gold turned into goods worth more);
    - produce the good whose harvest at the nearest town is worth most (stamina and mana);
    - travel toward the place where the goods it holds would sell for the most above the global
      price, the expected gain spread over the turns the journey takes;
    - rest when the stamina to produce or travel is missing and nothing can be traded.

    Trades need the market open and a town within ``trade_radius``; amounts are always the
    maximum (the world caps them by gold, stock and holdings), which is a bin of
    ``FlattenForSB3``'s discretised amount.

    Args:
        config: the trade world (default: the built-in one): goods, towns, verbs and engine
            parameters come from it.

    Example:
        >>> from multiagent import parallel_env
        >>> env = parallel_env("trade", observability=True)
        >>> observations, _ = env.reset(seed=0)
        >>> action = TradeExpert()(observations["Trader_1"])
        >>> env.action_space("Trader_1").contains(action)
        True
    """

    def __init__(self, config: SimulationConfig | None = None) -> None:
        config = config or load_world("trade")
        self.params = TradeParams(**config.engine.params)
        self._engine = dict(config.engine.params)
        self._values = {name: list(d.values or ()) for name, d in config.actions.items()}
        amount = config.actions["amount"]
        self._amount = float(amount.max if amount.max is not None else 10.0)

    def _action(self, verb: str, good: str = GOODS[0], town: str | None = None) -> dict[str, Any]:
        towns = self._values["target_town"]
        return {
            "verb": self._values["verb"].index(verb),
            "good": self._values["good"].index(good),
            "target_town": towns.index(town) if town in towns else 0,
            "amount": np.array([self._amount], dtype=np.float32),
        }

    def __call__(self, observation: dict[str, Any]) -> dict[str, Any]:
        me, world = observation["self"], observation.get("global", {})
        venues = _venues(world)
        prices = {
            good: float(entry["value"][0])
            for good, entry in world.get("prices", {}).items()
            if entry["present"][0]
        }
        location = _point(me["location"])
        held = _floats(me.get("inventory", ()))
        gold = float(me["gold"][0])
        stamina = int(me["stats"]["stamina"])
        options: list[tuple[float, dict[str, Any]]] = [(0.0, self._action("rest"))]
        here = min(venues, key=lambda v: math.dist(location, venues[v]["position"]), default=None)
        near = here is not None and math.dist(location, venues[here]["position"]) <= (
            self.params.trade_radius
        )
        if here is not None and near and bool(world.get("market_open", [0])[0]):
            for good in prices:
                local = self._local_price(here, venues[here], good, prices)
                stock = venues[here]["resources"].get(good, 0.0)
                sold = min(self._amount, held.get(good, 0.0)) * (local - prices[good])
                bought = min(self._amount, stock, gold / local) * (prices[good] - local)
                options += [(sold, self._action("sell", good, here))]
                options += [(bought, self._action("buy", good, here))]
        if stamina >= self.params.produce_stamina and here is not None:
            options += [self._produce(me, world, venues[here], prices)]
        if stamina >= 1:
            options += [self._journey(location, held, prices, venues)]
        return max(options, key=lambda option: option[0])[1]

    def _local_price(
        self, name: str, venue: dict[str, Any], good: str, prices: dict[str, float]
    ) -> float:
        """The world's own local price, asked of a state that holds just this venue."""
        state = {"towns": {}, "capital": {"name": name, **venue}, "prices": prices}
        return local_price(state, name, good, self._engine)

    def _produce(
        self,
        me: dict[str, Any],
        world: dict[str, Any],
        venue: dict[str, Any],
        prices: dict[str, float],
    ) -> tuple[float, dict[str, Any]]:
        """The most valuable harvest at the nearest town (the world's harvest formula)."""
        p = self.params
        season = SEASONS[int(world.get("season", 0))]
        focus = 0.5 + float(me["stats"]["mana"][0]) / 200.0
        best = (0.0, GOODS[0])
        for good, price in prices.items():
            stock = venue["resources"].get(good, 0.0)
            boost = p.season_yield.get(season, 1.0) if good == "food" else 1.0
            harvest = min(stock, self._amount * stock / (stock + p.half_saturation) * boost * focus)
            best = max(best, (harvest * price, good))
        return best[0], self._action("produce", best[1])

    def _journey(
        self,
        location: tuple[float, float],
        held: dict[str, float],
        prices: dict[str, float],
        venues: dict[str, dict[str, Any]],
    ) -> tuple[float, dict[str, Any]]:
        """Travel to the place where the goods held sell best, the gain per turn of travel."""
        best_gain, best_town = 0.0, None
        for town, venue in venues.items():
            distance = math.dist(location, venue["position"])
            if distance <= self.params.trade_radius:
                continue
            gain = sum(
                amount * max(0.0, self._local_price(town, venue, good, prices) - prices[good])
                for good, amount in held.items()
                if good in prices
            )
            turns = math.ceil((distance - self.params.trade_radius) / self.params.speed)
            if gain / (turns + 1) > best_gain:
                best_gain, best_town = gain / (turns + 1), town
        if best_town is None:
            return 0.0, self._action("rest")
        return best_gain, self._action("move", town=best_town)


def _venues(world: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The towns and (when visible) the capital, in the world's own layout."""
    venues = {
        name: {"position": _point(town["position"]), "resources": _floats(town["resources"])}
        for name, town in world.get("towns", ())
    }
    capital = world.get("capital")
    if capital is not None:
        venues[str(capital["name"])] = {
            "position": _point(capital["position"]),
            "resources": _floats(capital["resources"]),
        }
    return venues


ScriptedWorld = Literal["trade", "forage"]  # the built-in worlds with a scripted expert
WORLD_EXPERTS: dict[str, Callable[[], Callable[[Any], dict[str, Any]]]] = {
    "forage": ForageExpert,
    "trade": TradeExpert,
}


def world_expert(world: ScriptedWorld) -> Callable[[Any], dict[str, Any]]:
    """The scripted expert of a built-in world: ``observation -> action`` for any of its agents.

    Example:
        >>> world_expert("forage")({"self": {"position": (2, 2)}, "global": {"food": (2, 0)}})
        {'move': 3}
    """
    if world not in WORLD_EXPERTS:
        raise ValueError(
            f"no scripted expert for world {world!r}; expected one of {sorted(WORLD_EXPERTS)}"
        )
    return WORLD_EXPERTS[world]()
