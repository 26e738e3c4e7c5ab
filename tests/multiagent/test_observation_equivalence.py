"""``observe_all`` gives exactly the observations it gave before it was made faster.

The fixture ``observation_golden.json`` holds what the reference implementation returned on seeded
workloads (the built-in worlds and the benchmark's 100-agent ring; the gaussian cases as they are
since their log and cosine became the same on every machine, ``multiagent.portable_math``): every
value tagged with its type, floats as ``float.hex`` (so equality is bit for bit, and an int never
passes for a float), dict keys in order. The smaller cases are stored whole; the 100-observer
turns as the SHA-256 of that same encoding. Regenerate only when observations are meant to
change: ``python -m tests.multiagent.test_observation_equivalence``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks.multiagent import workload_config, workload_state
from multiagent.config import SimulationConfig, load_config
from multiagent.env import initial_state
from multiagent.errors import WorldConfigWarning
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.world_state import WorldState
from multiagent.worlds import load_world

FIXTURE = Path(__file__).with_name("observation_golden.json")


def workload() -> SimulationConfig:
    """The benchmark's world, which has no dynamics on purpose (only its observations count)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WorldConfigWarning)
        return workload_config()


def tag(value: Any) -> Any:
    """``value`` as JSON keeping its exact type and bits (anything unexpected is tagged ``?``)."""
    kind = type(value)
    if value is None:
        return None
    if kind is float:
        return ["f", value.hex()]
    if kind in (bool, int, str):
        return [kind.__name__[0], value]
    if kind is dict:
        return ["d", [[key, tag(item)] for key, item in value.items()]]
    if kind in (list, tuple):
        return [kind.__name__[0], [tag(item) for item in value]]
    return ["?", kind.__name__, repr(value)]


def encode(observed: dict[str, WorldState]) -> list[Any]:
    return [[name, tag(s.turn), tag(s.agents), tag(s.global_state)] for name, s in observed.items()]


def digest(encoded: list[Any]) -> str:
    return hashlib.sha256(json.dumps(encoded).encode()).hexdigest()


def cases() -> Iterator[tuple[str, bool, Any]]:
    """(name, stored whole, thunk computing the observations) per seeded case."""
    for world in ("trade", "forage"):
        config = load_world(world)
        state, plan = initial_state(config), ObservabilityPlan(config)
        for seed in (0, 7, 2**70 + 3):
            for turn in (0, 1, 5):
                run = partial(observe_all, state, plan, seed=seed, turn=turn)
                yield f"{world}/{seed}/{turn}", True, run
    plan = ObservabilityPlan(workload())
    for state_seed in (0, 1):
        state = workload_state(state_seed)
        for seed in (7, 12345):
            for turn in (1, 2):
                run = partial(observe_all, state, plan, seed=seed, turn=turn)
                yield f"workload/{state_seed}/{seed}/{turn}", False, run
        run = partial(observe_all, state, plan, seed=3, turn=4, observers=["A5", "A0", "A99"])
        yield f"workload/{state_seed}/some", True, run
    gaussian = ObservabilityPlan(with_gaussian_noise(workload()))
    for seed in (7, 12345):
        run = partial(observe_all, workload_state(0), gaussian, seed=seed, turn=3)
        yield f"workload-gaussian/0/{seed}/3", False, run


def with_gaussian_noise(config: SimulationConfig) -> SimulationConfig:
    assert config.observability is not None
    section = config.observability.model_copy(update={"distribution": "gaussian"})
    return config.model_copy(update={"observability": section})


def compute() -> dict[str, Any]:
    return {name: encode(run()) if whole else digest(encode(run())) for name, whole, run in cases()}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize(
    ("name", "whole", "run"), list(cases()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_observations_equal_the_reference(
    golden: dict[str, Any], name: str, whole: bool, run
) -> None:
    encoded = encode(run())
    if whole:
        assert encoded == golden[name]
    else:
        assert digest(encoded) == golden[name]


def test_nothing_has_an_unexpected_type() -> None:
    plan = ObservabilityPlan(workload())
    encoded = json.dumps(encode(observe_all(workload_state(0), plan, seed=7, turn=1)))
    assert '["?"' not in encoded


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(compute(), separators=(",", ":")) + "\n")
    sys.exit(0)


# -- shapes the ring does not have --------------------------------------------------------------

MIXED_VARS: dict[str, Any] = {
    "m_f": {"type": "float", "min": 0, "max": 100},
    "m_i": {"type": "int", "min": -50, "max": 50},
    "m_b": {"type": "bool"},
    "m_c": {"type": "categorical", "values": ["x", "y", "z"]},
    "m_d": {"type": "dict", "key_type": "str", "value_type": "float"},
    "m_l": {"type": "list", "item_type": "int"},
    "m_t": {"type": "tuple", "item_types": ["float", "int"], "default": [0.0, 0]},
    "m_u": {"type": "tuple", "item_types": ["float", "float"], "default": [0.0, 0.0]},
    "m_r": {"type": "list", "item_type": {"type": "tuple", "item_types": ["int", "int"]}},
    "m_cd": {"type": "dict", "key_type": "str", "value_type": {"type": "categorical",
                                                                "values": ["p", "q"]}},
    "m_bl": {"type": "list", "item_type": "bool"},
    "m_o": {"type": "object", "schema": {"v": {"type": "float"}, "s": {"type": "str"}}},
    "m_s": {"type": "str"},
    "m_ls": {"type": "list", "item_type": "str"},
    "m_n": {"type": "list", "item_type": "float"},
}  # fmt: skip
MIXED_AGENTS = ("A", "B", "C", "D", "E", "F")


def mixed_config(distribution: str) -> SimulationConfig:
    """Six agents whose containers differ in shape (dict keys, list lengths, empty, None), seen
    exactly, noisily and not at all, with internal variables and a noisy global state."""
    matrix = [
        [o, t, "external" if (i + j) % 3 else "insider", 0.0 if i == j else 0.05 * (1 + i + j)]
        for i, o in enumerate(MIXED_AGENTS)
        for j, t in enumerate(MIXED_AGENTS)
        if (i + 2 * j) % 5
    ]
    matrix += [[o, "global", "external", 0.3] for o in MIXED_AGENTS[::2]]
    return load_config(
        {
            "simulation": {"name": "mixed", "max_turns": 10},
            "agents": [{"name": name} for name in MIXED_AGENTS],
            "state_variables": {
                "agent_vars": MIXED_VARS,
                "global_vars": {"g_f": {"type": "float"}, "g_d": MIXED_VARS["m_d"]},
            },
            "observability": {
                "variable_visibility": {"internal": ["m_i", "m_o", "m_n"]},
                "matrix": matrix,
                "distribution": distribution,
            },
            "engine": {"dynamics": None},  # observations only
        }
    )


def mixed_state() -> WorldState:
    agents = {}
    for k, name in enumerate(MIXED_AGENTS):
        agents[name] = {
            "name": name,
            "m_f": 10.0 * k + 0.5,
            "m_i": 7 * k - 20,
            "m_b": k % 2 == 0,
            "m_c": "xyz"[k % 3],
            "m_d": {key: float(k + n) for n, key in enumerate("ab" if k % 2 else "abc")},
            "m_l": list(range(k % 3 * 2)),
            "m_t": (1.5 * k, k),
            "m_u": (2.5 * k, -1.0 * k),
            "m_r": [(k, n) for n in range(k % 3)],
            "m_cd": {"one": "p", "two": "qp"[k % 2]},
            "m_bl": [True, k % 2 == 1],
            "m_o": {"v": 3.0 * k, "s": f"note {k}"},
            "m_s": f"agent {k}",
            "m_ls": ["a", name],
            "m_n": None if k % 2 else [0.5 * k],
        }
    return WorldState(turn=2, agents=agents, global_state={"g_f": 40.0, "g_d": {"z": 1.0}})


# SHA-256 of ``encode(observe_all(mixed_state(), plan, seed=..., turn=...))`` as the reference
# implementation gave it (the one the fixture was made with, at commit 3b7c6df), plus A's and
# F's exact view of themselves: the matrix has no self row for them, and an agent without one sees
# itself as an insider. The gaussian ones since its log and cosine became the same on every
# machine (multiagent.portable_math).
MIXED_DIGESTS = {
    ("uniform", 11, 1): "69ca7acefd8fda51a8547f9bd9445ade19692909eedf0cf63d9c48ef5b056302",
    ("uniform", 2**70 + 3, 4): "dc525623336950597dc17b75f6a8d5786138fad9b37c74ada00a3ab09b51631d",
    ("gaussian", 11, 1): "bd18190b43a1f09cd902e4b83df6a07b3140d5ea436c8394f0a9fd3b7c79cf9c",
}


@pytest.mark.parametrize(("distribution", "seed", "turn"), list(MIXED_DIGESTS))
def test_mixed_shapes_equal_the_reference(distribution: str, seed: int, turn: int) -> None:
    """Targets of one variable set but different shapes, walked containers, categorical and
    boolean containers, empty and None ones: values as the reference gave them, and the same
    whether observed by everyone at once or one observer at a time."""
    plan = ObservabilityPlan(mixed_config(distribution))
    state = mixed_state()
    together = observe_all(state, plan, seed=seed, turn=turn)
    assert digest(encode(together)) == MIXED_DIGESTS[(distribution, seed, turn)]
    for observer in reversed(MIXED_AGENTS):
        alone = observe_all(state, plan, seed=seed, turn=turn, observers=[observer])
        assert encode(alone) == encode({observer: together[observer]})
