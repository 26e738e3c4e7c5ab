"""Observation noise: deterministic (a function of seed, turn, observer, target and path alone, in
every process), bounded, type- and shape-preserving, and distributed as documented.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.multiagent import CATEGORIES, variable_definitions, workload_config, workload_state
from multiagent.config import SimulationConfig, load_config
from multiagent.observability import (
    GLOBAL_TARGET,
    ObservabilityPlan,
    construct_observation,
    observe_all,
)
from multiagent.state import StateValidator, validate_value
from multiagent.world_state import WorldState

REPO = Path(__file__).resolve().parents[2]

# The noise module caches a target's layout (kinds, bounds, categories) by the identity of the
# definitions dict and the visible names, so each test below uses its own variable names for its
# own definitions; ``test_layout_cache_...`` shows why.


def world(
    agent_vars: dict[str, dict[str, Any]],
    matrix: list[list[Any]],
    *,
    agents: tuple[str, ...] = ("O", "T"),
    global_vars: dict[str, dict[str, Any]] | None = None,
    distribution: str = "uniform",
) -> SimulationConfig:
    """A config whose variables are all external (none listed) and whose matrix is ``matrix``,
    plus an unaware self row for each agent without one: these tests look at other targets, and
    their states give an observer no values of its own."""
    selves = {row[0] for row in matrix if row[0] == row[1]}
    blind = [[name, name, "unaware"] for name in agents if name not in selves]
    return load_config(
        {
            "simulation": {"name": "noise", "max_turns": 10},
            "agents": [{"name": name} for name in agents],
            "state_variables": {"agent_vars": agent_vars, "global_vars": global_vars or {}},
            "observability": {"matrix": matrix + blind, "distribution": distribution},
            "engine": {"dynamics": None},  # observations only
        }
    )


def state_of(
    values: dict[str, Any], agents: tuple[str, ...] = ("O", "T"), **glob: Any
) -> WorldState:
    """Every agent holds ``values`` (a copy each)."""
    agent_states = {name: {"name": name, **json.loads(json.dumps(values))} for name in agents}
    for name in agents:  # JSON turned tuples into lists: restore the tuples given
        agent_states[name].update({k: v for k, v in values.items() if isinstance(v, tuple)})
    return WorldState(turn=0, agents=agent_states, global_state=dict(glob))


# -- determinism --------------------------------------------------------------------------------

DET_VARS = {
    "d_x": {"type": "float", "min": 0, "max": 1000},
    "d_n": {"type": "int", "min": 0, "max": 100000},
    "d_m": {"type": "dict", "key_type": "str", "value_type": "float"},
}
DET_VALUES = {"d_x": 500.0, "d_n": 50000, "d_m": {"a": 10.0, "b": 20.0}}
DET_MATRIX = [["O", "T", "external", 0.2], ["P", "T", "external", 0.2], ["O", "P", "external", 0.2]]


def det_world(agents: tuple[str, ...] = ("O", "P", "T")) -> SimulationConfig:
    """O and P see T (and O sees P) with noise 0.2; only the rows among ``agents``."""
    matrix = [row for row in DET_MATRIX if row[0] in agents and row[1] in agents]
    return world(DET_VARS, matrix, agents=agents)


def test_same_inputs_give_identical_noise() -> None:
    """Two plans, two calls: the same (seed, turn, observer, target) draws the same values."""
    state = state_of(DET_VALUES, ("O", "P", "T"))
    first = construct_observation("O", state, det_world(), seed=42, turn=3)
    second = construct_observation("O", state, ObservabilityPlan(det_world()), seed=42, turn=3)
    assert first == second
    assert first.agents["T"]["d_x"] != 500.0  # it is noisy


def test_seed_turn_and_observer_each_change_the_noise() -> None:
    """Each input of the noise matters: otherwise observers (or turns) would share one draw."""
    state = state_of(DET_VALUES, ("O", "P", "T"))
    plan = ObservabilityPlan(det_world())

    def seen(observer: str, seed: int, turn: int) -> dict[str, Any]:
        return observe_all(state, plan, seed=seed, turn=turn)[observer].agents["T"]

    base = seen("O", 42, 3)
    for other in (seen("O", 43, 3), seen("O", 42, 4), seen("P", 42, 3)):
        assert other["d_x"] != base["d_x"]
        assert other["d_m"]["a"] != base["d_m"]["a"]
    # Different paths of one target draw differently too.
    assert base["d_m"]["a"] / 10.0 != base["d_m"]["b"] / 20.0


def test_noise_of_a_pair_does_not_depend_on_who_else_exists() -> None:
    """Adding agents (before and after, observing and observed) leaves O's view of T alone."""
    small = det_world(("O", "T"))
    big = world(
        DET_VARS,
        [*DET_MATRIX, ["Z", "T", "external", 0.3], ["O", "Z", "external", 0.4]],
        agents=("Z", "O", "P", "T", "Y"),
        global_vars={"d_g": {"type": "float"}},
    )
    small_state = state_of(DET_VALUES, ("O", "T"))
    big_state = state_of(DET_VALUES, ("Z", "O", "P", "T", "Y"), d_g=1.0)
    for turn in range(5):
        alone = construct_observation("O", small_state, small, seed=9, turn=turn).agents["T"]
        crowded = observe_all(big_state, ObservabilityPlan(big), seed=9, turn=turn)
        assert crowded["O"].agents["T"] == alone
        assert construct_observation("O", big_state, big, seed=9, turn=turn).agents["T"] == alone


_SCRIPT = """
import json, sys
from multiagent.config import load_config
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.world_state import WorldState
data = json.load(sys.stdin)
state = WorldState(**data["state"])
plan = ObservabilityPlan(load_config(data["config"]))
views = observe_all(state, plan, seed=data["seed"], turn=data["turn"])
print(json.dumps({o: [v.turn, v.agents, v.global_state] for o, v in views.items()}))
"""

CROSS_VARS = {
    "c_f": {"type": "float", "min": 0, "max": 100},
    "c_i": {"type": "int", "min": 0, "max": 1000},
    "c_b": {"type": "bool"},
    "c_c": {"type": "categorical", "values": ["red", "green", "blue", "black"]},
    "c_s": {"type": "str", "default": "s"},
    "c_d": {"type": "dict", "key_type": "str", "value_type": {"type": "float", "min": 0}},
    "c_l": {"type": "list", "item_type": {"type": "categorical", "values": ["p", "q", "r"]}},
    "c_t": {"type": "tuple", "item_types": ["float", "int"], "default": [0.0, 0]},
    "c_o": {
        "type": "object",
        "schema": {"v": {"type": "float"}, "w": {"type": "list", "item_type": "bool"}},
    },
}
CROSS_VALUES = {
    "c_f": 55.5,
    "c_i": 500,
    "c_b": True,
    "c_c": "green",
    "c_s": "text",
    "c_d": {"zeta": 3.0, "alpha": 4.0, "mid": 5.0},
    "c_l": ["p", "q", "r", "p"],
    "c_t": [2.5, 7],
    "c_o": {"v": 1.5, "w": [True, False, True]},
}


def cross_input() -> dict[str, Any]:
    """Six agents seeing each other noisily, every type, dict keys out of sorted order."""
    names = [f"Agent_{i}" for i in range(6)]
    matrix = [[o, t, "external", 0.3] for o in names for t in names if o != t]
    matrix += [[o, o, "insider", 0.0] for o in names] + [
        [o, "global", "insider", 0.2] for o in names
    ]
    config = {
        "simulation": {"name": "cross", "max_turns": 5},
        "agents": [{"name": name} for name in names],
        "state_variables": {"agent_vars": CROSS_VARS, "global_vars": {"c_g": CROSS_VARS["c_d"]}},
        "observability": {"matrix": matrix, "variable_visibility": {"internal": ["c_i"]}},
    }
    agents = {name: {"name": name, **CROSS_VALUES, "c_f": 10.0 + i} for i, name in enumerate(names)}
    state = {"turn": 4, "agents": agents, "global_state": {"c_g": {"x": 1.0, "y": 2.0}}}
    return {"config": config, "state": state, "seed": 2024, "turn": 11}


def test_noise_is_the_same_in_every_process() -> None:
    """No ``hash()`` anywhere: processes with different PYTHONHASHSEED agree exactly."""
    payload = json.dumps(cross_input())
    outputs = []
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            input=payload,
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    # And it is this process's answer too, noise included.
    data = json.loads(payload)
    views = observe_all(
        WorldState(**data["state"]),
        ObservabilityPlan(load_config(data["config"])),
        seed=data["seed"],
        turn=data["turn"],
    )
    here = {o: [v.turn, v.agents, v.global_state] for o, v in views.items()}
    assert json.loads(outputs[0]) == json.loads(json.dumps(here))
    seen = here["Agent_0"][1]["Agent_1"]
    assert seen["c_f"] != 11.0 and "c_i" not in seen


# -- bounds, types and shapes (property) --------------------------------------------------------

_ALIVE: list[SimulationConfig] = []  # see test_layout_cache_...: keep ids from being reused


@st.composite
def bounded_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], float, str]:
    """Random bounds, values inside them (also in containers) and a noise level in [0, 1]."""
    lo = draw(st.floats(-1000, 1000))
    hi = lo + draw(st.floats(0, 1000))
    ilo = draw(st.integers(-1000, 1000))
    ihi = ilo + draw(st.integers(0, 1000))
    fraction = st.floats(0, 1)

    def real() -> float:
        return min(max(lo + draw(fraction) * (hi - lo), lo), hi)

    def whole() -> int:
        return draw(st.integers(ilo, ihi))

    f = {"type": "float", "min": lo, "max": hi}
    i = {"type": "int", "min": ilo, "max": ihi}
    definitions = {
        "p_f": f,
        "p_i": i,
        "p_d": {"type": "dict", "key_type": "str", "value_type": f},
        "p_di": {"type": "dict", "key_type": "str", "value_type": i},
        "p_l": {"type": "list", "item_type": i},
        "p_t": {"type": "tuple", "item_types": [f, i], "default": [lo, ilo]},
        "p_u": {"type": "tuple", "item_types": [f, f], "default": [lo, lo]},
        "p_r": {"type": "list", "item_type": {"type": "tuple", "item_types": [f, f]}},
        "p_o": {"type": "object", "schema": {"v": f, "n": i, "s": {"type": "str", "default": ""}}},
    }
    keys = st.text("abcxyz", min_size=1, max_size=4)
    size = draw(st.integers(0, 6))
    values = {
        "p_f": real(),
        "p_i": whole(),
        "p_d": {draw(keys): real() for _ in range(size)},
        "p_di": {draw(keys): whole() for _ in range(size)},
        "p_l": [whole() for _ in range(draw(st.integers(0, 6)))],
        "p_t": (real(), whole()),
        "p_u": (real(), real()),
        "p_r": [(real(), real()) for _ in range(draw(st.integers(0, 4)))],
        "p_o": {"v": real(), "n": whole(), "s": "kept"},
    }
    noise = draw(st.floats(0, 1))
    return definitions, values, noise, draw(st.sampled_from(["uniform", "gaussian"]))


def assert_within(defn: dict[str, Any], seen: Any, truth: Any) -> None:
    """``seen`` has ``truth``'s shape and types, and every number is inside its bounds."""
    kind = defn["type"]
    if kind in ("float", "int"):
        assert type(seen) is (float if kind == "float" else int), (seen, defn)
        assert defn["min"] <= seen <= defn["max"], (seen, defn)
    elif kind == "str":
        assert seen == truth
    elif kind == "object":
        assert isinstance(seen, dict) and list(seen) == list(truth)
        for field, child in defn["schema"].items():
            assert_within(child, seen[field], truth[field])
    elif kind == "dict":
        assert isinstance(seen, dict) and list(seen) == list(truth)
        for key, item in truth.items():
            assert_within(defn["value_type"], seen[key], item)
    elif kind == "list":
        assert isinstance(seen, list) and len(seen) == len(truth)
        for got, item in zip(seen, truth, strict=True):
            assert_within(defn["item_type"], got, item)
    else:
        assert isinstance(seen, tuple) and len(seen) == len(truth)
        for child, got, item in zip(defn["item_types"], seen, truth, strict=True):
            assert_within(child, got, item)


@settings(max_examples=150, deadline=None)
@given(case=bounded_cases(), turn=st.integers(0, 10**6), seed=st.integers(0, 2**64 - 1))
def test_noisy_values_stay_in_bounds_and_keep_their_shape(
    case: tuple[dict[str, Any], dict[str, Any], float, str], turn: int, seed: int
) -> None:
    """Noise up to its maximum of 1 (uniform factors 0..2, gaussian ones also below 0 and above
    2) is clipped, in containers too, and never changes a type, a dict's keys, a list's length or
    a tuple into a list."""
    definitions, values, noise, distribution = case
    config = world(definitions, [["O", "T", "insider", noise]], distribution=distribution)
    _ALIVE.append(config)
    agents = {"O": {"name": "O"}, "T": {"name": "T", **values}}
    state = WorldState(turn=0, agents=agents, global_state={})
    seen = construct_observation("O", state, config, seed=seed, turn=turn).agents["T"]
    assert set(seen) == {"name", *definitions}
    for name, defn in definitions.items():
        assert_within(defn, seen[name], values[name])
        validate_value(config.state_variables.agent_vars[name], seen[name], name)
    if noise == 0:
        assert seen == {"name": "T", **values}


def test_layout_cache_survives_configs_being_freed() -> None:
    """Each fresh config's own bounds apply, even when an earlier config was garbage-collected
    and the new one's definitions dict got the freed one's id."""
    freed: set[int] = set()
    for k in range(300):
        low, high = 10.0 * k, 10.0 * k + 1.0
        config = world(
            {"l_x": {"type": "float", "min": low, "max": high}}, [["O", "T", "external", 1.0]]
        )
        state = state_of({"l_x": low + 0.5})
        seen = [
            construct_observation("O", state, config, seed=1, turn=turn).agents["T"]["l_x"]
            for turn in range(4)
        ]
        assert all(low <= value <= high for value in seen), (k, seen, (low, high))
        key = id(config.state_variables.agent_vars)
        if key in freed:
            return  # an id was reused and the bounds still held
        freed.add(key)
        del config
        gc.collect()  # free it now (pydantic models hold cycles), so its ids become reusable
    pytest.skip("no id was reused: the case could not be built here")


# -- distributions --------------------------------------------------------------------------------

STAT_VARS = {
    "s_f": {"type": "float"},
    "s_i": {"type": "int"},
    "s_yes": {"type": "bool"},
    "s_no": {"type": "bool"},
    "s_c": {"type": "categorical", "values": ["a", "b", "c", "d"]},
    "s_s": {"type": "str", "default": "fixed"},
    "s_none": {"type": "str"},
}
STAT_VALUES = {
    "s_f": 50.0,
    "s_i": 1000,
    "s_yes": True,
    "s_no": False,
    "s_c": "b",
    "s_s": "a string",
    "s_none": None,
}
TURNS = 2000


@functools.cache
def draws(distribution: str, noise: float) -> tuple[dict[str, Any], ...]:
    """O's view of T over ``TURNS`` turns (deterministic: fixed seed)."""
    config = world(STAT_VARS, [["O", "T", "external", noise]], distribution=distribution)
    plan = ObservabilityPlan(config)
    state = state_of(STAT_VALUES)
    return tuple(
        construct_observation("O", state, plan, seed=77, turn=turn).agents["T"]
        for turn in range(TURNS)
    )


def relative_errors(distribution: str, noise: float) -> list[float]:
    """(seen - truth) / truth of the unbounded float, per turn."""
    return [seen["s_f"] / 50.0 - 1.0 for seen in draws(distribution, noise)]


def test_uniform_float_noise_is_bounded_by_the_level_and_centred() -> None:
    """v * (1 + U(-n, n)): relative errors fill [-n, n], unbiased."""
    errors = relative_errors("uniform", 0.2)
    assert all(-0.2 - 1e-12 <= e <= 0.2 + 1e-12 for e in errors)
    assert abs(statistics.fmean(errors)) < 0.02
    assert abs(statistics.pstdev(errors) - 0.2 / 3**0.5) < 0.015  # U(-n, n) has std n/sqrt(3)
    assert min(errors) < -0.18 and max(errors) > 0.18  # the whole range is used
    assert len(set(errors)) > TURNS * 0.99


def test_int_noise_is_rounded_and_bounded_by_the_level() -> None:
    """Ints get the float noise, rounded back to ints."""
    seen = [view["s_i"] for view in draws("uniform", 0.2)]
    assert all(type(v) is int and 800 <= v <= 1200 for v in seen)
    assert abs(statistics.fmean(seen) - 1000) < 20
    assert len(set(seen)) > 300


def test_bools_flip_at_the_noise_rate() -> None:
    """Flipped with probability n, whichever the true value."""
    views = draws("uniform", 0.3)
    for name, truth in (("s_yes", True), ("s_no", False)):
        values = [view[name] for view in views]
        assert all(type(v) is bool for v in values)
        rate = sum(v != truth for v in values) / TURNS
        assert 0.25 <= rate <= 0.35, (name, rate)


def test_categoricals_change_at_the_noise_rate_to_each_other_value() -> None:
    """Replaced with probability n by another value, uniformly among the others."""
    values = [view["s_c"] for view in draws("uniform", 0.3)]
    changed = [v for v in values if v != "b"]
    assert 0.25 <= len(changed) / TURNS <= 0.35  # a "change" to "b" itself would lower the rate
    assert set(changed) == {"a", "c", "d"}
    for other in ("a", "c", "d"):
        assert 0.25 <= changed.count(other) / len(changed) <= 0.42, other


def test_gaussian_noise_has_std_of_the_level_and_a_tail_beyond_it() -> None:
    """``distribution: gaussian``: v * (1 + N(0, n)), so errors are not capped at n."""
    errors = relative_errors("gaussian", 0.2)
    assert abs(statistics.fmean(errors)) < 0.02
    assert 0.17 <= statistics.pstdev(errors) <= 0.23
    beyond = sum(abs(e) > 0.2 for e in errors) / TURNS
    assert 0.25 <= beyond <= 0.40  # P(|N(0, 1)| > 1) = 0.317
    assert max(abs(e) for e in errors) > 0.5


def test_strings_and_none_are_never_noised() -> None:
    """Text has no meaningful numeric perturbation; a missing (None) value stays missing."""
    for view in draws("uniform", 0.3) + draws("gaussian", 0.2):
        assert view["s_s"] == "a string"
        assert view["s_none"] is None
        assert view["name"] == "T"


def test_noise_zero_is_exact_for_every_type() -> None:
    """A noise-0 view is the truth, containers and all (also after the fast exact path)."""
    config = world(
        CROSS_VARS, [["O", "T", "external", 0.0]], global_vars={"c_g": CROSS_VARS["c_d"]}
    )
    values = {**CROSS_VALUES, "c_t": (2.5, 7)}
    state = state_of(values, c_g={"x": 1.0})
    for turn in range(5):
        obs = construct_observation("O", state, config, seed=turn, turn=turn)
        assert obs.agents == {"T": {"name": "T", **values}}
        assert obs.global_state == {}  # no global entry, default unaware


def test_categorical_with_one_value_stays() -> None:
    """No other value to change to: a one-value categorical cannot change."""
    config = world(
        {"one_c": {"type": "categorical", "values": ["only"]}}, [["O", "T", "external", 1.0]]
    )
    state = state_of({"one_c": "only"})
    for turn in range(50):
        seen = construct_observation("O", state, config, seed=1, turn=turn).agents["T"]
        assert seen == {"name": "T", "one_c": "only"}


def test_target_with_only_strings_under_noise() -> None:
    """No numeric leaf at all: the noisy path still returns the (unchanged) strings."""
    config = world(
        {"only_s": {"type": "str", "default": "x"}},
        [["O", "T", "external", 0.5], ["O", "global", "insider", 0.5]],
        global_vars={"only_g": {"type": "str"}},
    )
    state = state_of({"only_s": "hello"}, only_g=None)
    obs = construct_observation("O", state, config, seed=3, turn=1)
    assert obs.agents == {"T": {"name": "T", "only_s": "hello"}}
    assert obs.global_state == {"only_g": None}


OPTIONAL_VARS = {
    "opt_o": {
        "type": "object",
        "schema": {"v": {"type": "float", "min": 0}, "memo": {"type": "str"}},
    }
}


def test_object_keeps_its_keys_under_noise() -> None:
    """A present optional (null-default) field keeps its value, None included; the keys stay."""
    config = world(OPTIONAL_VARS, [["O", "T", "external", 0.5]])
    for memo in ("a memo", None):
        state = state_of({"opt_o": {"v": 4.0, "memo": memo}})
        seen = construct_observation("O", state, config, seed=3, turn=1).agents["T"]["opt_o"]
        assert list(seen) == ["v", "memo"]
        assert seen["memo"] == memo and seen["v"] != 4.0


def test_object_with_an_omitted_optional_field_keeps_its_keys_under_noise() -> None:
    """The validator lets an object leave out a null-default field; noise must not add it."""
    config = world(OPTIONAL_VARS, [["O", "T", "external", 0.5], ["O", "O", "insider", 0.0]])
    validator = StateValidator(config.state_variables.agent_vars, {})
    agents = validator.agents({name: {"name": name, "opt_o": {"v": 4.0}} for name in "OT"})
    assert agents["T"]["opt_o"] == {"v": 4.0}  # valid, and kept without the field
    obs = construct_observation("O", WorldState(0, agents, {}), config, seed=3, turn=1)
    assert list(obs.agents["O"]["opt_o"]) == ["v"]  # exact view
    assert list(obs.agents["T"]["opt_o"]) == ["v"]  # noisy view


# -- the design's workload ----------------------------------------------------------------------


def test_workload_observations() -> None:
    """100 observers on a ring: themselves exactly, 10 neighbours' external variables (every
    other one), the external half of the global state, every value in bounds."""
    config = workload_config()
    state = workload_state()
    plan = ObservabilityPlan(config)
    views = observe_all(state, plan, seed=7, turn=3)
    names = list(variable_definitions())
    external = set(names[0::2])
    global_external = {f"g{i}" for i in range(0, 10, 2)}
    agent_vars = config.state_variables.agent_vars
    global_vars = config.state_variables.global_vars
    assert list(views) == [f"A{i}" for i in range(100)]
    noisy = 0
    for i in range(100):
        obs = views[f"A{i}"]
        ring = {f"A{(i + offset) % 100}" for offset in range(-5, 6)}
        assert set(obs.agents) == ring
        assert obs.agents[f"A{i}"] == state.agents[f"A{i}"]
        assert obs.turn == state.turn and obs.reasoning_chains == ()
        for target in ring - {f"A{i}"}:
            seen = obs.agents[target]
            assert seen["name"] == target
            assert set(seen) - {"name"} == external
            for var in external:
                validate_value(agent_vars[var], seen[var], f"agents[{target}].{var}")
                truth = state.agents[target][var]
                if isinstance(truth, (dict, list, tuple)):
                    assert type(seen[var]) is type(truth) and len(seen[var]) == len(truth)
                if var in {f"c{k}" for k in range(8)}:
                    assert seen[var] in CATEGORIES
            assert all(type(point) is tuple for point in seen["trail"])
            noisy += seen["f0"] != state.agents[target]["f0"]
        assert set(obs.global_state) == global_external
        for var, value in obs.global_state.items():
            validate_value(global_vars[var], value, f"global_state.{var}")
            assert abs(value - state.global_state[var]) <= 0.05 * state.global_state[var] + 1e-9
    assert noisy > 900  # 1000 neighbour views of f0 at noise 0.1: nearly all differ
    assert plan.view("A0", GLOBAL_TARGET).noise == 0.05
