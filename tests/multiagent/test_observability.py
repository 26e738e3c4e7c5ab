"""Partial observability: who sees whom, which variables, and that an observation is a filtered,
noisy copy that never leaks internal variables, unaware targets or reasoning, and never touches
the ground truth.
"""

from __future__ import annotations

import copy
import gc
import sys
import threading
from typing import Any

import pytest

from benchmarks.multiagent import workload_config, workload_state
from multiagent.config import SimulationConfig, load_config
from multiagent.env import initial_state
from multiagent.observability import (
    GLOBAL_TARGET,
    ObservabilityLevel,
    ObservabilityPlan,
    View,
    construct_observation,
    observe_all,
)
from multiagent.state import (
    StateValidator,
    validate_value,
)
from multiagent.world_state import WorldState
from multiagent.worlds import load_world

INSIDER, EXTERNAL = ObservabilityLevel.INSIDER, ObservabilityLevel.EXTERNAL
# The benchmark's workload world has no dynamics on purpose (only its observations are measured).
pytestmark = pytest.mark.filterwarnings(
    "ignore:engine.dynamics. world 'workload':multiagent.errors.WorldConfigWarning"
)

# -- a hand-built world: every variable type, some internal, a mixed matrix ---------------------

# Always the same definitions under these names: the noise module caches layouts per definitions.
AGENT_VARS: dict[str, dict[str, Any]] = {
    "wealth": {"type": "float", "min": 0, "max": 1000},
    "secret": {"type": "float", "min": 0},
    "level": {"type": "int", "min": 0, "max": 10},
    "alive": {"type": "bool"},
    "mood": {"type": "categorical", "values": ["calm", "angry", "sad"]},
    "motto": {"type": "str", "default": "onward"},
    "note": {"type": "str"},  # null default: may hold None
    "stock": {
        "type": "dict",
        "key_type": "str",
        "value_type": {"type": "float", "min": 0, "max": 100},
    },
    "scores": {"type": "list", "item_type": {"type": "int", "min": 0, "max": 100}},
    "pos": {
        "type": "tuple",
        "item_types": [
            {"type": "float", "min": 0, "max": 10},
            {"type": "float", "min": 0, "max": 100},
        ],
        "default": [0.0, 0.0],
    },
    "profile": {
        "type": "object",
        "schema": {
            "age": {"type": "int", "min": 0, "max": 120, "default": 30},
            "title": {"type": "str", "default": "none"},
            "tags": {"type": "list", "item_type": "str"},
            "rank": {"type": "categorical", "values": ["low", "mid", "high"]},
        },
    },
}
GLOBAL_VARS: dict[str, dict[str, Any]] = {
    "price": {"type": "float", "min": 0, "max": 100},
    "treasury": {"type": "float", "min": 0},
    "open": {"type": "bool"},
    "era": {"type": "categorical", "values": ["stone", "bronze", "iron"]},
    "board": {
        "type": "dict",
        "key_type": "str",
        "value_type": {"type": "int", "min": 0, "max": 50},
    },
    "motd": {"type": "str", "default": "welcome"},
}
INTERNAL_AGENT = {"secret", "mood", "stock", "profile"}
INTERNAL_GLOBAL = {"treasury", "era"}
EXTERNAL_AGENT = set(AGENT_VARS) - INTERNAL_AGENT
EXTERNAL_GLOBAL = set(GLOBAL_VARS) - INTERNAL_GLOBAL

MATRIX: list[list[Any]] = [
    ["A", "A", "insider", 0.0],
    ["A", "B", "external", 0.0],
    ["A", "C", "unaware"],
    ["A", "global", "insider", 0.0],
    ["B", "B", "insider", 0.0],
    ["B", "A", "external", 0.2],
    ["B", "global", "external", 0.1],
    ["C", "A", "insider", 0.5],
    ["C", "global", "unaware"],
]
DEFAULT = {"level": "external", "noise": 0.1}  # B->C, C->B; C->C is insider (no self row)


def hand_config(observability: dict[str, Any] | str | None = "default") -> SimulationConfig:
    """The hand-built world; ``observability`` replaces the section (None: no section)."""
    data: dict[str, Any] = {
        "simulation": {"name": "hand", "max_turns": 10},
        "agents": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
        "state_variables": {"agent_vars": AGENT_VARS, "global_vars": GLOBAL_VARS},
        "engine": {"dynamics": None},  # observations only
    }
    if observability == "default":
        observability = {
            # Only some are listed as external: the unlisted ones are external too.
            "variable_visibility": {
                "external": ["wealth", "price"],
                "internal": sorted(INTERNAL_AGENT | INTERNAL_GLOBAL),
            },
            "matrix": MATRIX,
            "default": DEFAULT,
        }
    if observability is not None:
        data["observability"] = observability
    return load_config(data)


def hand_state(turn: int = 3) -> WorldState:
    """A valid ground truth for the hand-built world (values well inside their bounds)."""

    def agent(name: str, k: int) -> dict[str, Any]:
        return {
            "name": name,
            "wealth": 100.0 * k + 12.5,
            "secret": 7.25 * k,
            "level": 2 + k,
            "alive": k % 2 == 0,
            "mood": ["calm", "angry", "sad"][k % 3],
            "motto": f"motto of {name}",
            "note": None if k == 1 else f"note {k}",
            "stock": {"grain": 10.0 * k + 1.5, "ore": 3.25},
            "scores": [10 * k + 5, 40, 60],
            "pos": (1.5 + k, 20.0 * k + 2.0),
            "profile": {"age": 20 + k, "title": f"title {k}", "tags": ["x", name], "rank": "mid"},
        }

    return WorldState(
        turn=turn,
        agents={name: agent(name, k) for k, name in enumerate("ABC", start=1)},
        global_state={
            "price": 42.5,
            "treasury": 999.0,
            "open": True,
            "era": "bronze",
            "board": {"A": 10, "B": 20, "C": 30},
            "motd": "hello",
        },
    )


def visible_vars(view: dict[str, Any]) -> set[str]:
    return set(view) - {"name"}


def check_valid(
    config: SimulationConfig, plan: ObservabilityPlan, observer: str, obs: WorldState
) -> None:
    """Every value ``observer`` sees validates against its definition (wholesale for insiders)."""
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    for target, seen in obs.agents.items():
        view = plan.view(observer, target)
        assert view is not None
        if view.level == INSIDER:
            validator.agents({target: seen})
        else:
            assert isinstance(seen["name"], str)
            for var in visible_vars(seen):
                validate_value(variables.agent_vars[var], seen[var], f"agents[{target}].{var}")
    view = plan.view(observer, GLOBAL_TARGET)
    if view is not None and view.level == INSIDER:
        validator.global_state(obs.global_state)
    else:
        for var, value in obs.global_state.items():
            validate_value(variables.global_vars[var], value, f"global_state.{var}")


def assert_type_kept(defn: Any, value: Any) -> None:
    """Lax validation would accept 1.0 for an int or 1 for a bool: check the Python types."""
    if value is None:
        return
    kind = defn.type
    if kind == "int":
        assert type(value) is int, value
    elif kind == "float":
        assert type(value) is float, value
    elif kind == "bool":
        assert type(value) is bool, value
    elif kind in ("categorical", "str"):
        assert type(value) is str, value
    elif defn.schema_ is not None:
        assert isinstance(value, dict)
        for field, child in defn.schema_.items():
            assert_type_kept(child, value.get(field))
    elif kind == "dict":
        for item in value.values():
            assert_type_kept(defn.value_type, item)
    elif kind == "list":
        assert isinstance(value, list)
        for item in value:
            assert_type_kept(defn.item_type, item)
    else:
        assert isinstance(value, tuple), value
        for child, item in zip(defn.item_types, value, strict=True):
            assert_type_kept(child, item)


# -- the plan ---------------------------------------------------------------------------------


def test_matrix_entry_wins_over_default_and_default_covers_unlisted_pairs() -> None:
    """A pair in the matrix gets its own level and noise; any other pair of two agents gets the
    default; an agent without a self row sees itself as an insider, whatever the default."""
    plan = ObservabilityPlan(hand_config())
    assert plan.view("B", "A") == View("A", EXTERNAL, 0.2, plan.view("B", "A").variables)
    assert plan.view("C", "A").level == INSIDER and plan.view("C", "A").noise == 0.5
    assert plan.view("A", "C") is None  # listed as unaware although the default is external
    assert plan.view("C", GLOBAL_TARGET) is None
    for observer, target in [("B", "C"), ("C", "B")]:
        view = plan.view(observer, target)
        assert view is not None
        assert (view.target, view.level, view.noise) == (target, EXTERNAL, 0.1)
    assert plan.view("C", "C") == View("C", INSIDER, 0.0, tuple(AGENT_VARS))


def test_unlisted_pairs_are_unaware_without_a_default() -> None:
    """The default default is unaware: only the matrix's pairs and each agent itself are
    visible."""
    config = hand_config({"matrix": [["A", "B", "external", 0.3], ["B", "global", "insider"]]})
    plan = ObservabilityPlan(config)
    assert [v.target for v in plan.views["A"]] == ["A", "B"]
    assert [v.target for v in plan.views["B"]] == ["B", GLOBAL_TARGET]
    assert [v.target for v in plan.views["C"]] == ["C"]
    assert plan.view("B", GLOBAL_TARGET).noise == 0.0  # noise left out of the row
    obs = construct_observation("C", hand_state(), config, seed=1)
    assert obs.agents == {"C": hand_state().agents["C"]} and obs.global_state == {}


def self_config(*rows: list[Any], default: dict[str, Any] | None = None) -> SimulationConfig:
    """The hand-built world with only ``rows`` in its matrix (and ``default``)."""
    section: dict[str, Any] = {
        "variable_visibility": {"internal": sorted(INTERNAL_AGENT | INTERNAL_GLOBAL)},
        "matrix": list(rows),
    }
    if default is not None:
        section["default"] = default
    return hand_config(section)


@pytest.mark.parametrize(
    "default", [None, {"level": "unaware"}, {"level": "external", "noise": 0.4}]
)
def test_an_agent_sees_itself_exactly_without_a_self_row(default: dict[str, Any] | None) -> None:
    """No self row: insider without noise, whatever the default says of other pairs, and its
    observation holds its own true state."""
    config = self_config(["A", "B", "external", 0.3], default=default)
    plan = ObservabilityPlan(config)
    for name in "ABC":
        assert plan.view(name, name) == View(name, INSIDER, 0.0, tuple(AGENT_VARS))
    truth = hand_state()
    for seed in range(3):
        obs = construct_observation("C", truth, config, seed=seed, turn=seed)
        assert obs.agents["C"] == truth.agents["C"]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (["A", "A", "unaware"], None),
        (["A", "A", "external", 0.25], (EXTERNAL, 0.25)),
        (["A", "A", "insider", 0.5], (INSIDER, 0.5)),
    ],
)
def test_a_self_row_overrides_the_self_default(row: list[Any], expected: Any) -> None:
    """The matrix says otherwise for the pair: the matrix wins (the other agents keep the
    default of seeing themselves)."""
    plan = ObservabilityPlan(self_config(row, default={"level": "external", "noise": 0.4}))
    view = plan.view("A", "A")
    assert (view and (view.level, view.noise)) == expected
    assert plan.view("B", "B") == View("B", INSIDER, 0.0, tuple(AGENT_VARS))
    if expected is None:
        assert "A" not in construct_observation("A", hand_state(), plan.config, seed=0).agents


FULL_CASES = {
    "absent": (None, False),
    "disabled": ({"enabled": False, "matrix": MATRIX, "default": DEFAULT}, False),
    "full=True": ("default", True),
}


@pytest.mark.parametrize("case", list(FULL_CASES))
def test_full_observability_is_insider_without_noise_everywhere(case: str) -> None:
    """No section, ``enabled: false`` or ``full=True``: every observer an exact insider of all."""
    section, full = FULL_CASES[case]
    plan = ObservabilityPlan(hand_config(section), full=full)
    for observer in "ABC":
        views = {view.target: view for view in plan.views[observer]}
        assert set(views) == {"A", "B", "C", GLOBAL_TARGET}
        for target, view in views.items():
            expected = GLOBAL_VARS if target == GLOBAL_TARGET else AGENT_VARS
            assert (view.level, view.noise) == (INSIDER, 0.0)
            assert set(view.variables) == set(expected)
    state = hand_state()
    for observer, obs in observe_all(state, plan, seed=5).items():
        assert obs.agents == state.agents, observer
        assert obs.global_state == state.global_state


def test_view_variables_follow_the_visibility_lists() -> None:
    """External views drop the internal variables (agents and globals alike); insiders keep all;
    unlisted variables count as external."""
    plan = ObservabilityPlan(hand_config())
    assert set(plan.view("B", "A").variables) == EXTERNAL_AGENT
    assert set(plan.view("B", "C").variables) == EXTERNAL_AGENT
    assert set(plan.view("C", "C").variables) == set(AGENT_VARS)  # itself, by default
    assert set(plan.view("B", GLOBAL_TARGET).variables) == EXTERNAL_GLOBAL
    assert set(plan.view("A", "A").variables) == set(AGENT_VARS)
    assert set(plan.view("C", "A").variables) == set(AGENT_VARS)
    assert set(plan.view("A", GLOBAL_TARGET).variables) == set(GLOBAL_VARS)
    assert plan.can_ever_see("A", "B") and not plan.can_ever_see("A", "C")


# -- construct_observation --------------------------------------------------------------------


def test_unaware_targets_are_absent() -> None:
    """Unaware means not even the target's name: A is unaware of C."""
    obs = construct_observation("A", hand_state(), hand_config(), seed=0)
    assert set(obs.agents) == {"A", "B"}
    obs = construct_observation("B", hand_state(), hand_config(), seed=0)
    assert set(obs.agents) == {"A", "B", "C"}


def test_external_observer_sees_name_but_no_internal_variable() -> None:
    """Internal variables never leak to an external observer; the name always shows."""
    state = hand_state()
    obs = construct_observation("B", state, hand_config(), seed=9)
    for target in "AC":
        seen = obs.agents[target]
        assert seen["name"] == target
        assert visible_vars(seen) == EXTERNAL_AGENT
        assert not INTERNAL_AGENT & set(seen)
    # Strings are never noised.
    assert obs.agents["A"]["motto"] == state.agents["A"]["motto"]


def test_insider_sees_every_variable() -> None:
    """Insiders see everything, with noise (C of A) or without (A of itself)."""
    obs = construct_observation("C", hand_state(), hand_config(), seed=9)
    assert obs.agents["A"]["name"] == "A"
    assert visible_vars(obs.agents["A"]) == set(AGENT_VARS)  # insider with noise 0.5
    obs = construct_observation("A", hand_state(), hand_config(), seed=9)
    assert visible_vars(obs.agents["A"]) == set(AGENT_VARS)


def test_global_state_absent_or_filtered_per_level() -> None:
    """Global variables follow the same levels: exact and whole, external half, or nothing."""
    state = hand_state()
    config = hand_config()
    assert construct_observation("A", state, config, seed=2).global_state == state.global_state
    external = construct_observation("B", state, config, seed=2).global_state
    assert set(external) == EXTERNAL_GLOBAL
    assert external["motd"] == "hello"
    assert construct_observation("C", state, config, seed=2).global_state == {}


def test_observation_carries_the_turn_and_no_reasoning() -> None:
    """Observations never carry anyone's reasoning; the turn is the state's."""
    state = WorldState(
        turn=7,
        agents=hand_state().agents,
        global_state=hand_state().global_state,
        reasoning_chains=("A thinks B is bluffing",),
    )
    for observer in "ABC":
        obs = construct_observation(observer, state, hand_config(), seed=1)
        assert obs.turn == 7
        assert obs.reasoning_chains == ()
    # An explicit noise turn changes the draw but not the reported turn.
    obs = construct_observation("B", state, hand_config(), seed=1, turn=99)
    assert obs.turn == 7


def test_noise_zero_gives_exact_values() -> None:
    """Noise 0 is the truth itself (the exact fast path), filtered by level."""
    state = hand_state()
    obs = construct_observation("A", state, hand_config(), seed=123)
    assert obs.agents["A"] == state.agents["A"]  # insider, noise 0
    truth_b = state.agents["B"]
    assert obs.agents["B"] == {"name": "B"} | {v: truth_b[v] for v in EXTERNAL_AGENT}
    assert obs.global_state == state.global_state


def test_noise_changes_numbers_but_keeps_strings() -> None:
    """B sees A with noise 0.2: the numbers differ from the truth, the strings do not."""
    state = hand_state()
    seen = construct_observation("B", state, hand_config(), seed=4).agents["A"]
    truth = state.agents["A"]
    assert seen["wealth"] != truth["wealth"]
    assert abs(seen["wealth"] / truth["wealth"] - 1) <= 0.2
    assert seen["motto"] == truth["motto"]
    assert seen["note"] is None  # A's note is None: it stays None


def test_ground_truth_is_not_mutated() -> None:
    """Observing is read-only: the env keeps stepping the same ground truth."""
    state = hand_state()
    before = copy.deepcopy(state)
    config = hand_config()
    plan = ObservabilityPlan(config)
    for turn in range(5):
        for observer in "ABC":
            construct_observation(observer, state, config, seed=turn, turn=turn)
        observe_all(state, plan, seed=turn, turn=turn)
    assert state == before


def test_mutating_an_observation_leaves_the_ground_truth_alone() -> None:
    """Top-level dicts are copies, for exact and noisy views alike."""
    state = hand_state()
    before = copy.deepcopy(state)
    views = observe_all(state, ObservabilityPlan(hand_config()), seed=1)
    for observer, obs in views.items():
        assert obs.agents is not state.agents
        assert obs.global_state is not state.global_state
        for target, seen in obs.agents.items():
            assert seen is not state.agents[target], (observer, target)
            seen["wealth"] = -1.0
            seen["injected"] = True
        obs.global_state["price"] = -1.0
    assert state == before
    # Observers with the same exact view of a target do not share one dict either.
    full = observe_all(state, ObservabilityPlan(hand_config(None)), seed=1)
    for target in "ABC":
        assert len({id(obs.agents[target]) for obs in full.values()}) == 3
    assert len({id(obs.global_state) for obs in full.values()}) == 3
    full["A"].agents["B"]["wealth"] = -1.0
    assert full["B"].agents["B"]["wealth"] == state.agents["B"]["wealth"]


def test_mutating_a_nested_container_of_an_exact_view_leaves_the_ground_truth_alone() -> None:
    """An observation is a new state: editing a dict inside it must not edit the truth."""
    state = hand_state()
    before = copy.deepcopy(state)
    obs = construct_observation("A", state, hand_config(), seed=1)  # A: exact insider of itself
    obs.agents["A"]["stock"]["grain"] = 0.0
    obs.agents["A"]["scores"].append(1)
    obs.agents["A"]["profile"]["tags"].clear()
    obs.global_state["board"]["A"] = 0
    assert state == before


def test_unknown_observer_is_a_value_error_naming_it() -> None:
    """A typo in an observer name must say which name, not raise a bare KeyError."""
    with pytest.raises(ValueError, match="'Zed'"):
        construct_observation("Zed", hand_state(), hand_config(), seed=0)
    with pytest.raises(ValueError, match="'global'"):
        construct_observation("global", hand_state(), ObservabilityPlan(hand_config()), seed=0)


@pytest.mark.parametrize("seed", [0, 1, 2**40 + 3])
@pytest.mark.parametrize("turn", [None, 0, 17])
def test_observe_all_matches_construct_observation(seed: int, turn: int | None) -> None:
    """The batched path draws exactly what the one-observer path draws."""
    state = hand_state()
    config = hand_config()
    views = observe_all(state, ObservabilityPlan(config), seed=seed, turn=turn)
    assert list(views) == ["A", "B", "C"]
    for observer in "ABC":
        single = construct_observation(observer, state, config, seed=seed, turn=turn)
        assert views[observer] == single
    subset = observe_all(state, ObservabilityPlan(config), seed=seed, turn=turn, observers=["C"])
    assert subset == {"C": views["C"]}


def test_a_plan_and_its_config_give_the_same_observation() -> None:
    """Passing a resolved plan is only a shortcut."""
    config = hand_config()
    state = hand_state()
    by_plan = construct_observation("B", state, ObservabilityPlan(config), seed=8, turn=2)
    assert by_plan == construct_observation("B", state, config, seed=8, turn=2)


# -- every noisy observation still validates --------------------------------------------------

MIXED = {
    "matrix": MATRIX,
    "default": DEFAULT,
    "variable_visibility": {"internal": sorted(INTERNAL_AGENT | INTERNAL_GLOBAL)},
}
NOISY = {
    "matrix": [
        ["A", "A", "insider", 1.0],
        ["B", "A", "external", 1.0],
        ["C", "A", "insider", 0.7],
        ["A", "global", "insider", 1.0],
        ["B", "global", "external", 0.9],
    ],
    "default": {"level": "external", "noise": 1.0},
    "variable_visibility": {"internal": sorted(INTERNAL_AGENT | INTERNAL_GLOBAL)},
}


@pytest.mark.parametrize("section", [MIXED, NOISY], ids=["mixed", "very-noisy"])
@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_noisy_observations_validate_and_keep_types(
    section: dict[str, Any], distribution: str
) -> None:
    """Noise never breaks a bound, a type or a container's shape, even at the maximum noise, 1."""
    config = hand_config({**section, "distribution": distribution})
    plan = ObservabilityPlan(config)
    variables = config.state_variables
    state = hand_state()
    for turn in range(30):
        for observer, obs in observe_all(state, plan, seed=turn * 7 + 1, turn=turn).items():
            check_valid(config, plan, observer, obs)
            for seen in obs.agents.values():
                for var in visible_vars(seen):
                    assert_type_kept(variables.agent_vars[var], seen[var])
                    if isinstance(seen[var], (dict, list, tuple)):
                        assert len(seen[var]) == len(state.agents[seen["name"]][var])
            for var, value in obs.global_state.items():
                assert_type_kept(variables.global_vars[var], value)


# -- the trade world --------------------------------------------------------------------------

TRADE_EXTERNAL_AGENT = {
    "agent_name",
    "location",
    "economic_strength",
    "mood",
    "carrying",
    "stats",
    "action_history",
}
TRADE_EXTERNAL_GLOBAL = {"towns", "prices", "market_open", "season"}


def test_trade_world_matrix() -> None:
    """The trade world's matrix as written in trade.yaml."""
    config = load_world("trade")
    plan = ObservabilityPlan(config)
    state = initial_state(config)
    views = observe_all(state, plan, seed=7)
    assert set(views["Trader_1"].agents) == {"Trader_1", "Trader_2", "Trader_3"}  # not Trader_4
    assert set(views["Trader_2"].agents) == {"Trader_1", "Trader_2", "Trader_4"}
    assert set(views["Trader_3"].agents) == {"Trader_1", "Trader_3", "Trader_4"}
    assert set(views["Trader_4"].agents) == {"Trader_2", "Trader_3", "Trader_4"}
    # Trader_1 is the exact insider of the global state, capital included.
    assert plan.view("Trader_1", GLOBAL_TARGET) == View(
        GLOBAL_TARGET, INSIDER, 0.0, plan.view("Trader_1", GLOBAL_TARGET).variables
    )
    assert views["Trader_1"].global_state == state.global_state
    for observer, noise in [("Trader_2", 0.05), ("Trader_3", 0.05), ("Trader_4", 0.1)]:
        assert plan.view(observer, GLOBAL_TARGET).noise == noise
        assert set(views[observer].global_state) == TRADE_EXTERNAL_GLOBAL
    # Everyone is an exact insider of themselves.
    for name in state.agents:
        assert views[name].agents[name] == state.agents[name]
    # External views: no gold, inventory, secret reserves or position history; strings exact.
    seen = views["Trader_2"].agents["Trader_1"]
    assert plan.view("Trader_2", "Trader_1").noise == 0.15
    assert visible_vars(seen) == TRADE_EXTERNAL_AGENT
    assert seen["agent_name"] == "Aldric" and seen["name"] == "Trader_1"
    assert plan.view("Trader_1", "Trader_3").noise == 0.2
    assert plan.view("Trader_4", "Trader_2").level == EXTERNAL


def test_trade_world_observations_validate() -> None:
    """A noisy observation of the trade world is itself a valid (partial) trade state."""
    config = load_world("trade")
    plan = ObservabilityPlan(config)
    state = initial_state(config)
    for turn in range(25):
        for observer, obs in observe_all(state, plan, seed=3, turn=turn).items():
            check_valid(config, plan, observer, obs)


@pytest.mark.parametrize("enabled", [True, False])
def test_observe_all_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    """The collector is paused while the views are built, and restored even on an error."""
    state = initial_state(load_world("forage"))
    plan = ObservabilityPlan(load_world("forage"))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        observe_all(state, plan, seed=1)
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError, match="unknown observer"):
            observe_all(state, plan, seed=1, observers=["nobody"])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_threads_sharing_a_plan_each_get_the_views_they_would_get_alone() -> None:
    """The noise reuses its arrays from turn to turn, one set per thread: threads observing
    through one plan at once must not write into each other's."""
    plan = ObservabilityPlan(workload_config())
    states = [workload_state(seed) for seed in range(4)]
    alone = [observe_all(state, plan, seed=5, turn=turn) for turn, state in enumerate(states)]
    together: list[Any] = [None] * len(states)

    def observe(index: int) -> None:
        together[index] = [observe_all(states[index], plan, seed=5, turn=index) for _ in range(3)]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside the numpy passes' neighbourhood
    try:
        threads = [threading.Thread(target=observe, args=(index,)) for index in range(len(states))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for index, views in enumerate(together):
        assert views == [alone[index]] * 3
