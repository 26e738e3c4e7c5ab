"""The ``scenarios`` and ``collapse`` sections: checked on load with field paths; collapse ends
the episode for every agent once its variable falls below the threshold."""

from __future__ import annotations

from typing import Any

import pytest

from multiagent import load_config, parallel_env
from multiagent.errors import WorldConfigError
from multiagent.world_state import Transition, WorldState

pytestmark = pytest.mark.filterwarnings("ignore::multiagent.errors.WorldConfigWarning")


def world(**sections: Any) -> dict[str, Any]:
    """Four seats, two roles, a numeric and a text global."""
    return {
        "simulation": {"name": "test", "max_turns": 50},
        "agents": [
            {"name": "A", "type": "fisher"},
            {"name": "B", "type": "fisher"},
            {"name": "C", "type": "fisher"},
            {"name": "W", "type": "warden"},
        ],
        "state_variables": {
            "global_vars": {
                "stock": {"type": "float", "min": 0, "default": 10.0},
                "weather": {"type": "str", "default": "sun"},
            }
        },
        "engine": {"dynamics": None},
        **sections,
    }


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(WorldConfigError) as caught:
        load_config(data)
    return str(caught.value)


def test_a_scenario_loads_with_roles_seats_and_held_out_sets() -> None:
    config = load_config(
        world(
            scenarios={
                "resident": {
                    "focal": ["A", "B", "C"],
                    "background": {"warden": "noop"},
                    "held_out": {"lax": {"W": "random"}},
                    "tags": ["resident"],
                    "episode_length": [20, 40],
                }
            }
        )
    )
    scenario = config.scenarios["resident"]
    assert scenario.length_range(50) == (20, 40)
    assert scenario.held_out == {"lax": {"W": "random"}}


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ({"focal": ["Z"], "background": {"fisher": "random", "warden": "noop"}},
         "scenarios.s.focal: unknown seat 'Z' (the seats: A, B, C, W)"),
        ({"focal": ["A", "A"], "background": {"fisher": "random", "warden": "noop"}},
         "scenarios.s.focal: seat 'A' is listed twice"),
        ({"focal": ["A"], "background": {"fisher": "random"}},
         "scenarios.s.background: no player for the background seat 'W' (name it or its role "
         "'warden')"),
        ({"focal": ["A"], "background": {"fishr": "random", "warden": "noop", "fisher": "noop"}},
         "scenarios.s.background.fishr: neither a seat nor a role"),
        ({"focal": ["A"], "background": {"A": "random", "fisher": "noop", "warden": "noop"}},
         "scenarios.s.background.A: seat 'A' is focal"),
        ({"focal": ["A"], "background": {"fisher": "noop", "warden": "noop"},
          "tags": ["resident"]},
         "scenarios.s.tags: 'resident' means the focal seats are the majority, but 1 of 4"),
        ({"focal": ["A", "B"], "background": {"fisher": "noop", "warden": "noop"},
          "tags": ["visitor"]},
         "scenarios.s.tags: 'visitor' means the focal seats are a minority, but 2 of 4"),
        ({"focal": ["A"], "background": {"fisher": "noop", "warden": "noop"},
          "episode_length": [10, 60]},
         "scenarios.s.episode_length: 60 turns exceeds simulation.max_turns (50)"),
        ({"focal": ["A"], "background": {"fisher": "noop", "warden": "noop"},
          "episode_length": [30, 10]},
         "scenarios.s.episode_length: episode_length is [min, max] with min <= max, got [30, 10]"),
        ({"focal": ["A"], "background": {"fisher": "noop", "warden": "noop"},
          "held_out": {"h": {"fisher": "random"}}},
         "scenarios.s.held_out.h: no player for the background seat 'W'"),
        ({"focal": [], "background": {}}, "scenarios.s.focal: List should have at least 1 item"),
        ({"focal": ["A"], "background": {"fisher": "noop", "warden": "noop"}, "tag": []},
         "scenarios.s.tag: unknown key"),
    ],
)  # fmt: skip
def test_bad_scenarios_are_named_by_field_path(scenario: dict[str, Any], expected: str) -> None:
    assert expected in error_of(world(scenarios={"s": scenario}))


@pytest.mark.parametrize(
    ("collapse", "expected"),
    [
        ({"variable": "fish", "below": 1}, "collapse.variable: no global variable 'fish'"),
        ({"variable": "weather", "below": 1}, "collapse.variable: 'weather' is str"),
        ({"variable": "stock"}, "collapse.below: Field required"),
        ({"variable": "stock", "below": float("nan")}, "collapse.below:"),
    ],
)
def test_bad_collapse_sections_are_named(collapse: dict[str, Any], expected: str) -> None:
    assert expected in error_of(world(collapse=collapse))


def halving(
    state: WorldState, actions: dict[str, dict[str, Any]], rng: Any, params: dict[str, Any]
) -> Transition:
    """The stock halves every turn; each agent earns 1."""
    stock = state.global_state["stock"] / 2
    next_state = WorldState(state.turn + 1, state.agents, {**state.global_state, "stock": stock})
    return Transition(next_state, rewards=dict.fromkeys(state.agents, 1.0))


def test_collapse_terminates_every_agent_at_the_turn_the_stock_falls_below(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "multiagent.env.load_dynamics", lambda target: halving
    )  # 10, 5, 2.5, 1.25: below 2 after turn 3
    env = parallel_env(load_config(world(collapse={"variable": "stock", "below": 2.0})))
    env.reset(seed=0)
    turns = 0
    while env.agents:
        _, rewards, terminations, truncations, infos = env.step({})
        turns += 1
        ended = any(terminations.values())
        assert all(info.get("collapsed", False) == ended for info in infos.values())
    assert turns == 3
    assert all(terminations.values()) and not any(truncations.values())
    assert rewards == dict.fromkeys("ABCW", 1.0)


def test_without_collapse_the_same_world_runs_to_max_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("multiagent.env.load_dynamics", lambda target: halving)
    env = parallel_env(load_config(world()))
    env.reset(seed=0)
    turns = 0
    while env.agents:
        env.step({})
        turns += 1
    assert turns == 50
