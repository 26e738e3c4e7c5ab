"""The built-in worlds: they load, their dynamics keep every state valid, and their rules mean
something (traders get closer, pay the local price, harvest; greedy foragers beat random ones).
"""

from __future__ import annotations

import copy
import importlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from multiagent.config import SimulationConfig, load_config
from multiagent.env import initial_state
from multiagent.state import StateValidator
from multiagent.variables import VariableDefinition
from multiagent.world_state import Transition, WorldState
from multiagent.worlds import WORLDS, load_world, world_path
from multiagent.worlds.trade import local_price

Actions = dict[str, dict[str, Any]]
# trade and forage scale their rewards into [-1, 1]; a commons reward is the fish caught
REWARD_BOUNDS = {"trade": (-1.0, 1.0), "forage": (-1.0, 1.0), "commons": (0.0, 20.0)}
Policy = Callable[[WorldState, np.random.Generator], Actions]


# -- helpers ------------------------------------------------------------------------------------


def dynamics_of(config: SimulationConfig) -> Callable[..., Transition]:
    module, function = str(config.engine.dynamics).split(":")
    return getattr(importlib.import_module(module), function)


def draw(defn: VariableDefinition, rng: np.random.Generator) -> Any:
    """A uniformly drawn valid value of a scalar action field."""
    if defn.type == "categorical":
        values = defn.values or []
        return values[int(rng.integers(len(values)))]
    if defn.type == "float":
        return float(rng.uniform(defn.min, defn.max))
    if defn.type == "int":
        return int(rng.integers(int(defn.min or 0), int(defn.max or 0) + 1))
    if defn.type == "bool":
        return bool(rng.integers(2))
    raise AssertionError(f"no random draw for an action field of type {defn.type!r}")


def random_policy(config: SimulationConfig, skip: float = 0.0) -> Policy:
    """Valid random actions; with probability ``skip`` an agent has none (an invalid action)."""

    def policy(state: WorldState, rng: np.random.Generator) -> Actions:
        return {
            name: {field: draw(defn, rng) for field, defn in config.actions.items()}
            for name in state.agents
            if rng.random() >= skip
        }

    return policy


def rollout(
    config: SimulationConfig, policy: Policy, turns: int, seed: int
) -> Iterator[tuple[WorldState, Actions, Transition]]:
    """(state, actions, transition) per turn; the policy and the world have their own rngs."""
    step, params = dynamics_of(config), config.engine.params
    policy_rng, world_rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    state = initial_state(config)
    for _ in range(turns):
        actions = policy(state, policy_rng)
        transition = step(state, actions, world_rng, params)
        yield state, actions, transition
        state = transition.state


def one_turn(config: SimulationConfig, state: WorldState, actions: Actions) -> Transition:
    return dynamics_of(config)(state, actions, np.random.default_rng(0), config.engine.params)


def types_in(defn: VariableDefinition) -> Iterator[str]:
    yield defn.type
    for _, child in defn.children():
        yield from types_in(child)


# -- loading ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WORLDS)
def test_a_world_loads_and_its_path_holds_the_same_config(name: str) -> None:
    config = load_world(name)
    assert config.simulation.name == name
    assert config.engine.dynamics == f"multiagent.worlds.{name}:dynamics"
    assert load_config(world_path(name)) == config


def test_an_unknown_world_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="trade, forage"):
        load_world("chess")
    with pytest.raises(ValueError, match="unknown world 'nope'"):
        world_path("nope")


def test_the_trade_world_uses_every_variable_type() -> None:
    config = load_world("trade")
    variables = config.state_variables
    definitions = [*variables.agent_vars.values(), *variables.global_vars.values()]
    definitions += config.actions.values()
    used = {kind for defn in definitions for kind in types_in(defn)}
    assert used == {"float", "int", "bool", "categorical", "dict", "list", "tuple", "str", "object"}


# -- every world: random valid actions never break a definition ---------------------------------


@pytest.mark.parametrize("name", WORLDS)
def test_fifty_random_turns_keep_every_state_valid(name: str) -> None:
    config = load_world(name)
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    validator.agents(initial_state(config).agents)
    outcomes: set[str] = set()
    for turn, (state, _, transition) in enumerate(
        rollout(config, random_policy(config, skip=0.1), 50, seed=3)
    ):
        pristine = copy.deepcopy(state)
        after = transition.state
        assert state == pristine  # the dynamics left its input alone
        assert after.turn == turn + 1
        validator.agents(after.agents)
        validator.global_state(after.global_state)
        assert set(transition.rewards) == set(config.agent_names)
        low, high = REWARD_BOUNDS[name]
        assert all(math.isfinite(r) and low <= r <= high for r in transition.rewards.values())
        assert transition.terminations == dict.fromkeys(config.agent_names, False)
        outcomes |= {str(info.get("outcome")) for info in transition.infos.values()}
    if name == "trade":
        assert {"moved", "bought", "sold", "produced", "rested", "idle"} <= outcomes
        for agent in after.agents.values():
            assert len(agent["action_history"]) == 10
            assert len(agent["position_history"]) == 20


@pytest.mark.parametrize("name", WORLDS)
def test_the_same_seed_gives_the_same_trajectory(name: str) -> None:
    config = load_world(name)

    def trajectory(seed: int) -> list[tuple[WorldState, dict[str, float]]]:
        return [
            (t.state, t.rewards) for _, _, t in rollout(config, random_policy(config), 30, seed)
        ]

    assert trajectory(5) == trajectory(5)
    assert trajectory(5) != trajectory(6)


# -- trade semantics ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trade() -> SimulationConfig:
    return load_world("trade")


def act(verb: str, good: str = "food", town: str = "Farmstead", amount: float = 5.0) -> dict:
    return {"verb": verb, "good": good, "target_town": town, "amount": amount}


def test_moving_toward_a_town_gets_a_trader_closer_at_bounded_speed(
    trade: SimulationConfig,
) -> None:
    state = initial_state(trade)
    target = state.global_state["towns"]["Ironforge"]["position"]
    start = state.agents["Trader_1"]["location"]
    after = one_turn(trade, state, {"Trader_1": act("move", town="Ironforge")}).state
    trader = after.agents["Trader_1"]
    assert math.dist(trader["location"], target) == pytest.approx(math.dist(start, target) - 10)
    assert trader["stats"]["stamina"] == state.agents["Trader_1"]["stats"]["stamina"] - 1
    assert trader["position_history"][-1] == trader["location"]
    assert trader["action_history"][-1] == "move"


def test_a_loaded_trader_moves_at_half_speed(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    assert state.agents["Trader_4"]["carrying"]
    start = state.agents["Trader_4"]["location"]
    after = one_turn(trade, state, {"Trader_4": act("move", town="Farmstead")}).state
    assert math.dist(start, after.agents["Trader_4"]["location"]) == pytest.approx(5.0)


def test_buying_at_the_town_pays_its_local_price(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    price = local_price(state.global_state, "Farmstead", "food", trade.engine.params)
    assert price < state.global_state["prices"]["food"]  # Farmstead is rich in food
    transition = one_turn(trade, state, {"Trader_1": act("buy", amount=5.0)})
    before, after = state.agents["Trader_1"], transition.state.agents["Trader_1"]
    assert after["inventory"]["food"] == pytest.approx(before["inventory"]["food"] + 5.0)
    assert after["gold"] == pytest.approx(before["gold"] - 5.0 * price)
    assert transition.infos["Trader_1"]["outcome"] == "bought"
    assert transition.rewards["Trader_1"] > 0  # bought below the global price


def test_buying_makes_the_good_dearer(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    idle = one_turn(trade, state, {}).state.global_state["prices"]
    bought = one_turn(trade, state, {"Trader_1": act("buy", amount=10.0)}).state
    assert bought.global_state["prices"]["food"] > idle["food"]
    assert bought.global_state["prices"]["wood"] == idle["wood"]


def test_selling_adds_the_local_price_to_gold(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    price = local_price(state.global_state, "Farmstead", "food", trade.engine.params)
    transition = one_turn(trade, state, {"Trader_1": act("sell", amount=4.0)})
    after = transition.state.agents["Trader_1"]
    assert after["gold"] == pytest.approx(state.agents["Trader_1"]["gold"] + 4.0 * price)
    assert after["inventory"]["food"] == pytest.approx(6.0)
    assert transition.rewards["Trader_1"] < 0  # sold below the global price


def test_no_trade_far_from_the_town_or_while_the_market_is_closed(
    trade: SimulationConfig,
) -> None:
    state = initial_state(trade)
    far = one_turn(trade, state, {"Trader_1": act("buy", town="Capital")})
    assert far.infos["Trader_1"]["outcome"] == "too_far"
    assert far.state.agents["Trader_1"]["gold"] == state.agents["Trader_1"]["gold"]
    closed = WorldState(0, state.agents, {**state.global_state, "market_open": False})
    shut = one_turn(trade, closed, {"Trader_1": act("buy")})
    assert shut.infos["Trader_1"]["outcome"] == "market_closed"
    assert shut.state.agents["Trader_1"]["inventory"] == state.agents["Trader_1"]["inventory"]


def test_producing_harvests_from_the_nearest_town(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    produce = act("produce", good="wood", amount=10.0)
    after = one_turn(trade, state, {"Trader_2": produce}).state
    before, trader = state.agents["Trader_2"], after.agents["Trader_2"]
    gained = trader["inventory"]["wood"] - before["inventory"]["wood"]
    assert 0 < gained <= 10.0
    stamina = before["stats"]["stamina"] - trade.engine.params["produce_stamina"]
    assert trader["stats"]["stamina"] == stamina
    untouched = one_turn(trade, state, {}).state.global_state["towns"]["Timberfall"]["resources"]
    stock = after.global_state["towns"]["Timberfall"]["resources"]["wood"]
    assert stock == pytest.approx(untouched["wood"] - gained, rel=0.01)


def test_an_exhausted_trader_strains_and_resting_recovers(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    tired = {**state.agents["Trader_1"], "stats": {"health": 50.0, "mana": 0.0, "stamina": 0}}
    state = WorldState(0, {**state.agents, "Trader_1": tired}, state.global_state)
    strained = one_turn(trade, state, {"Trader_1": act("move", town="Capital")})
    trader = strained.state.agents["Trader_1"]
    assert trader["location"] == tired["location"]
    assert trader["stats"]["health"] == 45.0
    assert trader["mood"] == "anxious"
    rested = one_turn(trade, state, {"Trader_1": act("rest")}).state.agents["Trader_1"]
    assert rested["stats"] == {"health": 60.0, "mana": 15.0, "stamina": 3}


def test_an_agent_without_a_valid_action_idles(trade: SimulationConfig) -> None:
    state = initial_state(trade)
    transition = one_turn(trade, state, {})
    trader = transition.state.agents["Trader_3"]
    assert trader["action_history"] == ["idle"]
    assert trader["location"] == state.agents["Trader_3"]["location"]
    assert trader["stats"] == state.agents["Trader_3"]["stats"]


# -- forage: walking toward the food pays --------------------------------------------------------


def toward(position: tuple[int, int], food: tuple[int, int]) -> str:
    (row, col), (food_row, food_col) = position, food
    if food_row != row:
        return "down" if food_row > row else "up"
    if food_col != col:
        return "right" if food_col > col else "left"
    return "stay"


def jitter(cell: tuple[int, int], noise: float, rng: np.random.Generator) -> tuple[int, int]:
    """A cell as an observer with int noise ``noise`` sees it: scaled, rounded, clipped."""
    row, col = (min(max(round(v * (1 + rng.uniform(-noise, noise))), 0), 6) for v in cell)
    return row, col


def greedy(noise: float) -> Policy:
    def policy(state: WorldState, rng: np.random.Generator) -> Actions:
        return {
            name: {
                "move": toward(agent["position"], jitter(state.global_state["food"], noise, rng))
            }
            for name, agent in state.agents.items()
        }

    return policy


def total_reward(config: SimulationConfig, policy: Policy, seed: int) -> float:
    return sum(sum(t.rewards.values()) for _, _, t in rollout(config, policy, 200, seed))


def test_greedy_foragers_clearly_beat_random_ones() -> None:
    config = load_world("forage")
    for seed in (0, 1):
        random = total_reward(config, random_policy(config), seed)
        exact = total_reward(config, greedy(0.0), seed)
        noisy = total_reward(config, greedy(0.15), seed)
        assert exact > random + 30
        assert noisy > random + 20


def test_stepping_onto_the_food_collects_it_and_respawns_it() -> None:
    config = load_world("forage")
    state = initial_state(config)
    state = WorldState(0, state.agents, {"food": (1, 0), "eaten": 0})
    transition = one_turn(config, state, {"Forager_1": {"move": "down"}})
    after = transition.state
    assert transition.rewards == {
        "Forager_1": pytest.approx(0.99),
        "Forager_2": pytest.approx(-0.01),
        "Forager_3": pytest.approx(-0.01),
    }
    assert after.agents["Forager_1"]["carrying"] == 1
    assert after.global_state["eaten"] == 1
    assert after.global_state["food"] not in {a["position"] for a in after.agents.values()}


def test_the_grid_edge_stops_a_forager_and_a_tired_one_stays() -> None:
    config = load_world("forage")
    state = initial_state(config)
    after = one_turn(config, state, {"Forager_1": {"move": "up"}}).state
    assert after.agents["Forager_1"]["position"] == (0, 0)
    tired = {**state.agents["Forager_1"], "energy": 0.5}
    state = WorldState(0, {**state.agents, "Forager_1": tired}, state.global_state)
    after = one_turn(config, state, {"Forager_1": {"move": "down"}}).state
    assert after.agents["Forager_1"]["position"] == (0, 0)
    assert after.agents["Forager_1"]["energy"] == pytest.approx(0.25)


def test_a_hungry_forager_eats_from_its_pouch() -> None:
    config = load_world("forage")
    state = initial_state(config)
    hungry = {**state.agents["Forager_2"], "energy": 40.0, "carrying": 2}
    state = WorldState(0, {**state.agents, "Forager_2": hungry}, state.global_state)
    forager = one_turn(config, state, {"Forager_2": {"move": "stay"}}).state.agents["Forager_2"]
    assert forager["carrying"] == 1
    assert forager["energy"] == pytest.approx(40.0 - 0.25 + 25.0)
