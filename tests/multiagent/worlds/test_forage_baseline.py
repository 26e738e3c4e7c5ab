"""Forage's scripted baseline: walking toward the noisily seen food beats wandering at random,
paired over 30 seeds with a bootstrap interval of the difference that excludes 0; and forage's
scenarios name players that exist.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from envkit.stats import paired_bootstrap
from multiagent import parallel_env
from multiagent.dto import AgentObservation, GlobalObservation, ObservationEnvelope
from multiagent.worlds import load_world
from multiagent.worlds.forage import MOVES, walk_to_food
from multiagent.wrappers import TextObservationWrapper

CONFIG = load_world("forage")
TURNS = 50  # a few meals each already separate the policies; the world allows 200
Policy = Callable[[ObservationEnvelope], dict[str, Any]]


def walking(envelope: ObservationEnvelope) -> dict[str, Any]:
    return walk_to_food(SimpleNamespace(envelope=envelope))


def wandering(seed: int) -> Policy:
    """Uniform moves from a generator of the seed's own, whatever the forager sees."""
    rng, moves = np.random.default_rng(seed), list(MOVES)
    return lambda envelope: {"move": moves[int(rng.integers(len(moves)))]}


def per_capita_return(policy: Policy, seed: int) -> float:
    env = TextObservationWrapper(parallel_env(CONFIG))
    env.reset(seed=seed)
    total = 0.0
    for _ in range(TURNS):
        envelopes = env.envelopes(list(env.agents))
        _, rewards, *_ = env.step({a: policy(envelopes[a]) for a in env.agents})
        total += sum(rewards.values())
    return total / len(CONFIG.agent_names)


def test_walking_to_the_food_beats_random_moves_with_an_interval_excluding_zero() -> None:
    seeds = range(30)
    walk = [per_capita_return(walking, seed) for seed in seeds]
    wander = [per_capita_return(wandering(seed), seed) for seed in seeds]
    difference = paired_bootstrap(walk, wander)
    assert difference.low > 0
    assert difference.estimate > 1.0  # more than one extra meal per forager


def envelope(position: tuple[int, int], food: tuple[int, int] | None) -> ObservationEnvelope:
    me = AgentObservation(
        name="Forager_2", variables={"position": position}, level="insider", noise=0
    )
    context = (
        None
        if food is None
        else GlobalObservation(variables={"food": food}, level="external", noise=0.15)
    )
    return ObservationEnvelope(
        turn=1, observer="Forager_2", agents={"Forager_2": me}, global_context=context
    )


def test_each_step_closes_the_distance_to_the_seen_food() -> None:
    cells = [(row, col) for row in range(7) for col in range(7)]
    for position in cells:
        for food in cells:
            move = walking(envelope(position, food))["move"]
            d_row, d_col = MOVES[move]
            after = (position[0] + d_row, position[1] + d_col)
            distance = abs(position[0] - food[0]) + abs(position[1] - food[1])
            assert abs(after[0] - food[0]) + abs(after[1] - food[1]) == max(0, distance - 1)


def test_a_forager_that_sees_no_food_stays() -> None:
    assert walking(envelope((2, 2), None)) == {"move": "stay"}


def test_the_scenarios_name_importable_players() -> None:
    scenarios = CONFIG.scenarios
    assert len(scenarios["all_focal"].focal) == 3
    assert scenarios["visitor"].tags == ["visitor"] and scenarios["visitor"].focal == ["Forager_1"]
    specs = {scenario.baseline for scenario in scenarios.values()}
    for scenario in scenarios.values():
        specs |= {spec for held in scenario.held_out.values() for spec in held.values()}
    for spec in specs:
        assert spec is not None
        module, function = spec.removeprefix("scripted:").split(":")
        assert callable(getattr(importlib.import_module(module), function))
    assert scenarios["visitor"].background == {"forager": "random"}
