"""``observe_all`` gives exactly the observations it gave before it was made faster.

The fixture ``observation_golden.json`` holds what the reference implementation returned on seeded
workloads (the built-in worlds and the benchmark's 100-agent ring): every value tagged with its
type, floats as ``float.hex`` (so equality is bit for bit, and an int never passes for a float),
dict keys in order. The smaller cases are stored whole; the 100-observer turns as the SHA-256 of
that same encoding. Regenerate only when observations are meant to change:
``python -m tests.multiagent.test_observation_equivalence``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks.multiagent import workload_config, workload_state
from multiagent.config import SimulationConfig
from multiagent.env import initial_state
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.world_state import WorldState
from multiagent.worlds import load_world

FIXTURE = Path(__file__).with_name("observation_golden.json")


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
    plan = ObservabilityPlan(workload_config())
    for state_seed in (0, 1):
        state = workload_state(state_seed)
        for seed in (7, 12345):
            for turn in (1, 2):
                run = partial(observe_all, state, plan, seed=seed, turn=turn)
                yield f"workload/{state_seed}/{seed}/{turn}", False, run
        run = partial(observe_all, state, plan, seed=3, turn=4, observers=["A5", "A0", "A99"])
        yield f"workload/{state_seed}/some", True, run
    gaussian = ObservabilityPlan(with_gaussian_noise(workload_config()))
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
    plan = ObservabilityPlan(workload_config())
    encoded = json.dumps(encode(observe_all(workload_state(0), plan, seed=7, turn=1)))
    assert '["?"' not in encoded


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(compute(), separators=(",", ":")) + "\n")
    sys.exit(0)
