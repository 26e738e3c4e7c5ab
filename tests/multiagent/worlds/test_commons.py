"""The commons world: PettingZoo's contracts, the lake's bookkeeping under any harvests, collapse,
partial information, and the evaluation property that matters: a sustainable population keeps
the lake alive longer than a greedy one, with bootstrap intervals that do not overlap.
"""

from __future__ import annotations

import copy
import importlib
import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test, parallel_seed_test

from envkit.stats import bootstrap_mean
from multiagent import parallel_env
from multiagent.env import initial_state
from multiagent.state import StateValidator
from multiagent.world_state import WorldState
from multiagent.worlds import load_world
from multiagent.worlds.commons import MAX_HARVEST, CommonsParams, dynamics, greedy, sustainable
from multiagent.wrappers import TextObservationWrapper

CONFIG = load_world("commons")
FISHERS = CONFIG.agent_names
CAPACITY = CommonsParams().capacity
Policy = Callable[[Any], dict[str, Any]]


Infos = dict[str, dict[str, Any]]


def play(policies: dict[str, Policy], seed: int, turns: int) -> tuple[int, dict[str, float], Infos]:
    """(turns played, each fisher's return, the last infos) of one episode of scripted fishers.

    Each policy gets a stand-in for the players' ``SeatTurn``: an object whose ``envelope`` is
    the seat's observation through the world's observability.
    """
    env = TextObservationWrapper(parallel_env(CONFIG))
    env.reset(seed=seed)
    returns, played = dict.fromkeys(FISHERS, 0.0), 0
    infos: Infos = {}
    while env.agents and played < turns:
        envelopes = env.envelopes(list(env.agents))
        actions = {a: policies[a](SimpleNamespace(envelope=envelopes[a])) for a in env.agents}
        _, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
        played += 1
    return played, returns, infos


def everyone(policy: Policy) -> dict[str, Policy]:
    return dict.fromkeys(FISHERS, policy)


# -- the world as declared ------------------------------------------------------------------------


def test_the_baselines_know_the_declared_harvest_bound() -> None:
    harvest = CONFIG.actions["harvest"]
    assert (harvest.type, harvest.min, harvest.max) == ("float", 0, MAX_HARVEST)
    assert CONFIG.state_variables.global_vars["stock"].max == CAPACITY
    assert CONFIG.collapse is not None and CONFIG.collapse.variable == "stock"


def test_the_scenarios_name_importable_players_and_their_sizes() -> None:
    scenarios = CONFIG.scenarios
    assert set(scenarios) >= {"all_focal", "resident", "visitor"}
    assert len(scenarios["all_focal"].focal) == 4 and not scenarios["all_focal"].background
    assert "resident" in scenarios["resident"].tags and len(scenarios["resident"].focal) == 3
    assert "visitor" in scenarios["visitor"].tags and len(scenarios["visitor"].focal) == 1
    specs = {scenario.baseline for scenario in scenarios.values()}
    for scenario in scenarios.values():
        specs |= set(scenario.background.values())
        specs |= {spec for held in scenario.held_out.values() for spec in held.values()}
        low, high = scenario.length_range(CONFIG.simulation.max_turns)
        assert low < high <= CONFIG.simulation.max_turns  # lengths vary per episode
    for spec in specs:
        assert spec is not None and spec.startswith("scripted:")
        module, function = spec.removeprefix("scripted:").split(":")
        assert callable(getattr(importlib.import_module(module), function))


# -- PettingZoo contracts -------------------------------------------------------------------------


@pytest.mark.parametrize("observability", [False, True])
def test_the_pettingzoo_parallel_api_and_seed_tests_pass(observability: bool) -> None:
    parallel_api_test(parallel_env(CONFIG, observability=observability), num_cycles=60)
    parallel_seed_test(lambda: parallel_env(CONFIG, observability=observability))


# -- dynamics: the lake's bookkeeping --------------------------------------------------------------

harvests = st.dictionaries(
    st.sampled_from(FISHERS),
    st.floats(0, MAX_HARVEST, allow_nan=False),
)


def lake(stock: float, totals: list[float]) -> WorldState:
    agents = {
        name: {"name": name, "last_catch": 0.0, "total": total}
        for name, total in zip(FISHERS, totals, strict=True)
    }
    return WorldState(turn=3, agents=agents, global_state={"stock": stock})


@settings(max_examples=300, deadline=None)
@given(
    stock=st.floats(0, CAPACITY, allow_nan=False),
    totals=st.lists(st.floats(0, 1000, allow_nan=False), min_size=4, max_size=4),
    asked=harvests,
    seed=st.integers(0, 2**32 - 1),
)
def test_catches_never_exceed_the_stock_and_the_lake_stays_in_bounds(
    stock: float, totals: list[float], asked: dict[str, float], seed: int
) -> None:
    state = lake(stock, totals)
    pristine = copy.deepcopy(state)
    actions = {name: {"harvest": harvest} for name, harvest in asked.items()}
    transition = dynamics(state, actions, np.random.default_rng(seed), CONFIG.engine.params)
    assert state == pristine  # the dynamics left its input alone
    caught = transition.rewards
    assert all(0.0 <= caught[name] <= asked.get(name, 0.0) for name in FISHERS)
    landed = math.fsum(caught.values())
    assert landed <= stock + 1e-9  # exactly, but for the rounding of float additions
    assert landed == pytest.approx(min(stock, math.fsum(asked.values())), abs=1e-9)
    left = stock - landed
    after = transition.state
    regrown = after.global_state["stock"]
    assert 0.0 <= regrown <= CAPACITY
    assert min(CAPACITY, 1.8 * left) - 1e-9 <= regrown <= min(CAPACITY, 2.2 * left) + 1e-9
    for name, total in zip(FISHERS, totals, strict=True):
        fisher = after.agents[name]
        assert fisher["last_catch"] == caught[name]
        assert fisher["total"] == pytest.approx(total + caught[name])
        assert transition.infos[name] == {"asked": asked.get(name, 0.0), "caught": caught[name]}
    assert after.turn == state.turn + 1
    assert transition.terminations == dict.fromkeys(FISHERS, False)  # collapse is the env's
    variables = CONFIG.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    validator.agents(after.agents)
    validator.global_state(after.global_state)
    again = dynamics(state, actions, np.random.default_rng(seed), CONFIG.engine.params)
    assert again == transition  # the same seed, the same turn


def test_who_fishes_first_is_drawn_so_a_short_lake_favours_no_seat() -> None:
    state = lake(20.0, [0.0] * 4)
    actions = {name: {"harvest": 20.0} for name in FISHERS}
    winners = {
        max(t.rewards, key=t.rewards.__getitem__)
        for t in (dynamics(state, actions, np.random.default_rng(s), {}) for s in range(40))
    }
    assert winners == set(FISHERS)


def test_episodes_differ_by_seed_and_repeat_by_seed() -> None:
    first, second = play(everyone(sustainable), 4, 20), play(everyone(sustainable), 4, 20)
    assert first == second
    assert play(everyone(sustainable), 5, 20)[1] != first[1]


# -- collapse and what a fisher sees ------------------------------------------------------------


def test_greedy_fishers_collapse_the_lake_and_the_episode_ends_for_everyone() -> None:
    env = parallel_env(CONFIG)
    env.reset(seed=0)
    for _ in range(10):
        take_all = {a: {"harvest": MAX_HARVEST} for a in env.agents}  # greedy's action
        _, _, terminations, truncations, infos = env.step(take_all)
        if not env.agents:
            break
    assert env.world.global_state["stock"] < 5
    assert terminations == dict.fromkeys(FISHERS, True)
    assert truncations == dict.fromkeys(FISHERS, False)
    assert all(info["collapsed"] for info in infos.values())
    assert env.step({}) == ({}, {}, {}, {}, {})


def test_a_fisher_sees_its_own_total_but_only_the_others_noisy_catches() -> None:
    env = TextObservationWrapper(parallel_env(CONFIG))
    env.reset(seed=2)
    env.step({a: {"harvest": 15.0} for a in FISHERS})  # 40 left: the lake is below capacity
    envelope = env.envelopes(["Fisher_1"])["Fisher_1"]
    me = envelope.agents["Fisher_1"]
    assert me.level == "insider" and me.variables == {"last_catch": 15.0, "total": 15.0}
    others = [envelope.agents[name] for name in FISHERS[1:]]
    assert all(set(other.variables) == {"last_catch"} for other in others)
    seen = [other.variables["last_catch"] for other in others]
    assert all(15.0 * 0.7 <= catch <= 15.0 * 1.3 for catch in seen) and seen != [15.0] * 3
    assert envelope.global_context is not None
    assert set(envelope.global_context.variables) == {"stock"}
    assert envelope.global_context.variables["stock"] != env.unwrapped.world.global_state["stock"]


@pytest.mark.parametrize("harvest", [MAX_HARVEST + 1, -1.0, "lots"])
def test_an_out_of_range_harvest_is_refused_naming_the_field(harvest: Any) -> None:
    env = parallel_env(CONFIG)
    env.reset(seed=0)
    _, rewards, _, _, infos = env.step(
        {"Fisher_1": {"harvest": harvest}} | {name: {"harvest": 5.0} for name in FISHERS[1:]}
    )
    assert "harvest" in infos["Fisher_1"]["action_error"]
    assert rewards["Fisher_1"] == 0.0 and env.world.agents["Fisher_1"]["total"] == 0.0
    assert rewards["Fisher_2"] == 5.0


def test_the_sustainable_baseline_takes_an_eighth_of_the_stock_it_sees() -> None:
    env = TextObservationWrapper(parallel_env(CONFIG))
    env.reset(seed=1)
    envelope = env.envelopes(["Fisher_3"])["Fisher_3"]
    assert envelope.global_context is not None
    seen = envelope.global_context.variables["stock"]
    assert sustainable(SimpleNamespace(envelope=envelope)) == {"harvest": seen / 8}
    assert 90.0 <= seen <= 100.0  # the full lake, through 10% noise clipped at capacity


# -- the evaluation property ----------------------------------------------------------------------


def test_sustainable_fishers_outlive_greedy_ones_with_separate_intervals() -> None:
    turns = CONFIG.scenarios["all_focal"].length_range(CONFIG.simulation.max_turns)[1]
    seeds = range(30)
    survival = {
        name: [play(everyone(policy), seed, turns)[0] for seed in seeds]
        for name, policy in (("greedy", greedy), ("sustainable", sustainable))
    }
    greedy_mean, sustainable_mean = (bootstrap_mean(survival[n]) for n in survival)
    assert greedy_mean.high < sustainable_mean.low
    assert sustainable_mean.estimate == turns  # the lake never collapses
    assert greedy_mean.estimate <= 3


def test_one_greedy_visitor_among_sustainable_fishers_collapses_the_lake() -> None:
    visitor = CONFIG.scenarios["visitor"]
    turns = visitor.length_range(CONFIG.simulation.max_turns)[1]
    policies = everyone(sustainable) | dict.fromkeys(visitor.focal, greedy)
    played, returns, infos = play(policies, seed=0, turns=turns)
    assert played <= 5 and all(info["collapsed"] for info in infos.values())
    assert returns["Fisher_1"] > max(returns[name] for name in FISHERS[1:])


def test_the_initial_state_is_a_full_lake() -> None:
    state = initial_state(CONFIG)
    assert state.global_state == {"stock": CAPACITY}
    assert all(agent["total"] == agent["last_catch"] == 0.0 for agent in state.agents.values())
