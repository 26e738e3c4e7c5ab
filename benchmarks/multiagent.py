"""Validation and partial observation at the design's scale: 100 agents x 50 variables.

The workload is the design's, exactly: 100 agents on a ring, each with 50 variables (two
dict[str, float] and one dict[str, int] of 5 keys; a list[str] of 5; a list of 5 (float, float)
tuples; one (float, float) tuple; 18 floats in [0, 1000]; 10 ints in [0, 10000]; 8 bools; 8
categoricals of 4 values) and 10 global variables. Every other variable is external, the rest
internal. Each agent is an insider to itself (noise 0), external with noise 0.1 to its 10 ring
neighbours (i-5..i+5), unaware of the rest; the global state is external with noise 0.05.

(a) validating all 100 agents' state from Python dicts and from JSON bytes (every limit enforced);
(b) building the partial, noisy observation of all 100 agents for one turn.
Targets: (a) <= 2 ms from dicts, (b) <= 20 ms per turn. Timings are medians over repeats.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.machine import machine_line
from multiagent.config import SimulationConfig, load_config
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.state import StateValidator
from multiagent.world_state import WorldState

N_AGENTS, RING = 100, 5
CATEGORIES = ["north", "south", "east", "west"]
KEYS = [f"k{i}" for i in range(5)]


def variable_definitions() -> dict[str, dict[str, Any]]:
    """The 50 agent variables of the design's workload."""
    definitions: dict[str, dict[str, Any]] = {
        "stock_a": {"type": "dict", "key_type": "str", "value_type": "float"},
        "stock_b": {"type": "dict", "key_type": "str", "value_type": "float"},
        "counts": {"type": "dict", "key_type": "str", "value_type": "int"},
        "log": {"type": "list", "item_type": "str"},
        "trail": {"type": "list", "item_type": {"type": "tuple", "item_types": ["float", "float"]}},
        "position": {"type": "tuple", "item_types": ["float", "float"], "default": [0.0, 0.0]},
    }
    definitions |= {f"f{i}": {"type": "float", "min": 0, "max": 1000} for i in range(18)}
    definitions |= {f"i{i}": {"type": "int", "min": 0, "max": 10000} for i in range(10)}
    definitions |= {f"b{i}": {"type": "bool"} for i in range(8)}
    definitions |= {f"c{i}": {"type": "categorical", "values": CATEGORIES} for i in range(8)}
    return definitions


def workload_config() -> SimulationConfig:
    agent_vars = variable_definitions()
    global_vars = {f"g{i}": {"type": "float", "min": 0, "max": 1000} for i in range(10)}
    names = list(agent_vars) + list(global_vars)
    matrix = []
    for i in range(N_AGENTS):
        matrix.append([f"A{i}", f"A{i}", "insider", 0.0])
        for offset in range(-RING, RING + 1):
            if offset:
                matrix.append([f"A{i}", f"A{(i + offset) % N_AGENTS}", "external", 0.1])
        matrix.append([f"A{i}", "global", "external", 0.05])
    return load_config(
        {
            "simulation": {"name": "workload", "max_turns": 10},
            "agents": [{"name": f"A{i}"} for i in range(N_AGENTS)],
            "state_variables": {"agent_vars": agent_vars, "global_vars": global_vars},
            "observability": {
                "variable_visibility": {"external": names[0::2], "internal": names[1::2]},
                "matrix": matrix,
                "default": {"level": "unaware", "noise": 0.0},
            },
        }
    )


def agent_state(name: str, rng: random.Random) -> dict[str, Any]:
    state: dict[str, Any] = {
        "name": name,
        "stock_a": {k: rng.uniform(0, 100) for k in KEYS},
        "stock_b": {k: rng.uniform(0, 100) for k in KEYS},
        "counts": {k: rng.randint(0, 50) for k in KEYS},
        "log": [f"event-{rng.randint(0, 99)}" for _ in range(5)],
        "trail": [(rng.uniform(0, 50), rng.uniform(0, 50)) for _ in range(5)],
        "position": (rng.uniform(0, 50), rng.uniform(0, 50)),
    }
    state |= {f"f{i}": rng.uniform(0, 1000) for i in range(18)}
    state |= {f"i{i}": rng.randint(0, 10000) for i in range(10)}
    state |= {f"b{i}": rng.random() < 0.5 for i in range(8)}
    state |= {f"c{i}": rng.choice(CATEGORIES) for i in range(8)}
    return state


def workload_state(seed: int = 0) -> WorldState:
    rng = random.Random(seed)
    agents = {f"A{i}": agent_state(f"A{i}", rng) for i in range(N_AGENTS)}
    return WorldState(
        turn=1, agents=agents, global_state={f"g{i}": rng.uniform(0, 1000) for i in range(10)}
    )


def median_ms(function: Callable[[], object], repeats: int) -> float:
    function()  # warm caches (model build, path hashes)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    config = workload_config()
    state = workload_state()
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    agents_json = json.dumps(state.agents).encode()
    plan = ObservabilityPlan(config)
    turns = iter(range(1, 10**9))
    measurements: list[tuple[str, Callable[[], object], float | None]] = [
        ("(a) validate 100 agents from dicts", lambda: validator.agents(state.agents), 2.0),
        ("(a) validate 100 agents from JSON bytes",
         lambda: validator.agents(agents_json, json=True), None),
        ("(b) partial + noisy observation, 100 observers, one turn",
         lambda: observe_all(state, plan, seed=7, turn=next(turns)), 20.0),
    ]  # fmt: skip
    rows = [(label, median_ms(run, args.repeats), target) for label, run, target in measurements]
    print(machine_line("pydantic", "numpy"))
    print()
    print("| measurement | median ms | target ms | verdict |")
    print("|---|---:|---:|---|")
    for label, value, target in rows:
        verdict = "" if target is None else ("PASS" if value <= target else "above target")
        target_text = "-" if target is None else f"{target:g}"
        print(f"| {label} | {value:.2f} | {target_text} | {verdict} |")


if __name__ == "__main__":
    main()
