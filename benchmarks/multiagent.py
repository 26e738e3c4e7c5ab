"""Validation and partial observation at the design's scale: 100 agents x 50 variables.

The workload is the design's, exactly: 100 agents on a ring, each with 50 variables (two
dict[str, float] and one dict[str, int] of 5 keys; a list[str] of 5; a list of 5 (float, float)
tuples; one (float, float) tuple; 18 floats in [0, 1000]; 10 ints in [0, 10000]; 8 bools; 8
categoricals of 4 values) and 10 global variables. Every other variable is external, the rest
internal. Each agent is an insider to itself (noise 0), external with noise 0.1 to its 10 ring
neighbours (i-5..i+5), unaware of the rest; the global state is external with noise 0.05.

(a) validating all 100 agents' state from Python dicts and from JSON bytes (every limit enforced),
    side by side with llm-sim (rHedBull/llm-sim, the reference design's code) validating the same
    definitions and states with its generated pydantic model, driven by
    ``benchmarks/peers/llm_sim_validation.py`` in a persistent process of llm-sim's own Python
    3.12 venv (``make peer-llm-sim``; skipped with the reason when that venv is absent): from
    dicts the way ours does it (one pydantic-core call over all agents), as llm-sim's own code
    does it (``AgentState(**state)`` per agent), and from JSON bytes. Ours and the peer's run in
    alternating blocks, round after round; the ratio is of the medians.
(b) building the partial, noisy observation of all 100 agents for one turn.
Targets: (a) <= 0.8 ms from dicts (and below llm-sim), (b) <= 5 ms per turn (the second speed
round's; the first asked for 20). Timings are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.machine import CLOCKS, add_clock_argument, load_line, machine_line
from multiagent.config import SimulationConfig, load_config
from multiagent.observability import ObservabilityPlan, observe_all
from multiagent.state import StateValidator
from multiagent.world_state import WorldState

N_AGENTS, RING = 100, 5
ROOT = Path(__file__).resolve().parent.parent
PEER_SCRIPT = ROOT / "benchmarks" / "peers" / "llm_sim_validation.py"
CATEGORIES = ["north", "south", "east", "west"]
KEYS = [f"k{i}" for i in range(5)]
OBSERVATION_TARGET_MS = 5.0  # (b), per turn


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
            "engine": {"dynamics": None},  # observed, never stepped: static on purpose
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


def peer_workload(config: SimulationConfig, state: WorldState) -> dict[str, Any]:
    """The workload as llm-sim reads it: our definitions, each with the default it would derive
    (llm-sim requires one for scalars), and the states as JSON data (tuples become lists)."""

    def definitions(raw: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
        return {name: {**raw[name], "default": loaded[name].derived_default()} for name in raw}

    global_raw = {name: {"type": "float", "min": 0, "max": 1000} for name in state.global_state}
    variables = config.state_variables
    return json.loads(
        json.dumps(
            {
                "agent_vars": definitions(variable_definitions(), variables.agent_vars),
                "global_vars": definitions(global_raw, variables.global_vars),
                "agents": state.agents,
                "global_state": state.global_state,
            }
        )
    )


class LlmSimPeer:
    """``benchmarks/peers/llm_sim_validation.py`` in llm-sim's venv: one process, JSON lines."""

    def __init__(self, python: Path, workload: dict[str, Any]) -> None:
        self.process = subprocess.Popen(
            [str(python), str(PEER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.versions: dict[str, str] = self._ask({"workload": workload})["versions"]

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the llm-sim peer exited (code {self.process.wait()})")
        return json.loads(line)

    def time(self, run: str, repeats: int, clock: str) -> list[float]:
        return self._ask({"run": run, "repeats": repeats, "clock": clock})["ms"]

    def dump(self) -> dict[str, Any]:
        """The agents as llm-sim validated them, as JSON data."""
        return self._ask({"dump": True})["agents"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def start_peer(config: SimulationConfig, state: WorldState) -> tuple[LlmSimPeer | None, str]:
    """The llm-sim peer, or None and the one-line reason it is skipped."""
    venv = Path(os.environ.get("LLM_SIM_VENV", ROOT / ".venv-llm-sim"))
    python = venv / "bin" / "python"
    if not python.exists():
        return None, f"llm-sim: skipped, no {python} (make peer-llm-sim installs it)"
    try:
        return LlmSimPeer(python, peer_workload(config, state)), ""
    except (OSError, RuntimeError, ValueError) as error:
        return None, f"llm-sim: skipped, its venv would not start the peer ({error})"


def samples_ms(function: Callable[[], object], repeats: int, clock: str) -> list[float]:
    now, samples = CLOCKS[clock], []
    for _ in range(repeats):
        start = now()
        function()
        samples.append((now() - start) * 1e3)
    return samples


def median_ms(function: Callable[[], object], repeats: int, clock: str = "wall") -> float:
    function()  # warm caches (model build, path hashes)
    return statistics.median(samples_ms(function, repeats, clock))


def side_by_side(
    ours: Callable[[], object],
    peer: LlmSimPeer | None,
    run: str,
    args: argparse.Namespace,
) -> tuple[float, float | None]:
    """Medians of ours and the peer's ``run``, measured in alternating blocks over the rounds."""
    ours()
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(args.rounds):
        mine += samples_ms(ours, args.repeats, args.clock)
        if peer is not None:
            theirs += peer.time(run, args.repeats, args.clock)
    return statistics.median(mine), (statistics.median(theirs) if theirs else None)


def _rewrite(schema: Any, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of a pydantic-core schema with ``change`` applied to every schema dict in it."""
    if isinstance(schema, dict):
        return {key: _rewrite(value, change) for key, value in change(schema).items()}
    if isinstance(schema, list):
        return [_rewrite(item, change) for item in schema]
    return schema


_CONSTRAINTS = ("ge", "le", "allow_inf_nan", "max_length")


def _without(kinds: tuple[str, ...], *keys: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda node: (
        {k: v for k, v in node.items() if k not in keys} if node.get("type") in kinds else node
    )


def schema_ablation(validator: StateValidator, state: WorldState, args: argparse.Namespace) -> None:
    """Where (a)'s time goes inside pydantic-core: our reference schema, the fast path's, then the
    fast path's less one feature at a time (schemas that no longer enforce it: a cost, not an
    option)."""
    from pydantic_core import SchemaValidator

    reference = validator._agents.reference.core_schema
    ignore = _rewrite(
        reference,
        lambda node: {**node, "extra_behavior": "ignore"} if node.get("type") == "typed-dict"
        else node,
    )  # fmt: skip
    agent = ignore["values_schema"]
    variants = {
        "reference: unknown keys forbidden in pydantic-core": reference,
        "fast path: unknown keys ignored (before its count)": ignore,
        "  less bounds (ge, le)": _rewrite(ignore, _without(("float", "int"), "ge", "le")),
        "  less the inf/nan check": _rewrite(ignore, _without(("float",), "allow_inf_nan")),
        "  less size limits": _rewrite(ignore, _without(("str", "list", "dict"), "max_length")),
        "  less every constraint": _rewrite(
            ignore,
            _without(("float", "int", "str", "list", "dict"), *_CONSTRAINTS),
        ),
        "  every variable 'any' (per-field floor)": {
            **ignore,
            "values_schema": {
                **agent,
                "fields": {k: {**f, "schema": {"type": "any"}} for k, f in agent["fields"].items()},
            },
        },
        "{str: any} (the outer dict only)": {
            "type": "dict",
            "keys_schema": {"type": "str"},
            "values_schema": {"type": "any"},
        },
    }
    validators = {label: SchemaValidator(schema) for label, schema in variants.items()}
    samples: dict[str, list[float]] = {label: [] for label in validators}
    for _ in range(args.rounds):
        for label, core in validators.items():
            samples[label] += samples_ms(
                lambda core=core: core.validate_python(state.agents), args.repeats, args.clock
            )
    print()
    print("| (a) from dicts, pydantic-core schema | median ms |")
    print("|---|---:|")
    for label, values in samples.items():
        print(f"| {label} | {statistics.median(values):.3f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds of (a)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per block")
    parser.add_argument("--no-peer", action="store_true", help="leave llm-sim out")
    parser.add_argument(
        "--ablation", action="store_true", help="also time (a)'s schema with parts taken away"
    )
    add_clock_argument(parser)
    args = parser.parse_args(argv)
    config = workload_config()
    state = workload_state()
    variables = config.state_variables
    validator = StateValidator(variables.agent_vars, variables.global_vars)
    agents_json = json.dumps(state.agents).encode()
    plan = ObservabilityPlan(config)
    turns = iter(range(1, 10**9))
    peer, skipped = (
        (None, "llm-sim: left out (--no-peer)") if args.no_peer else start_peer(config, state)
    )
    before = load_line()
    rows: list[tuple[str, float, float | None, float | None]] = []
    try:
        from_dicts = lambda: validator.agents(state.agents)  # noqa: E731
        for label, run, ours, target in [
            ("(a) validate 100 agents from dicts", "dicts", from_dicts, 0.8),
            ("(a) from dicts; llm-sim as its code does it, AgentState(**state) per agent",
             "construct", from_dicts, None),
            ("(a) validate 100 agents from JSON bytes", "json",
             lambda: validator.agents(agents_json, json=True), None),
        ]:  # fmt: skip
            mine, theirs = side_by_side(ours, peer, run, args)
            rows.append((label, mine, theirs, target))
    finally:
        if peer is not None:
            peer.close()
    observe = lambda: observe_all(state, plan, seed=7, turn=next(turns))  # noqa: E731
    rows.append(("(b) partial + noisy observation, 100 observers, one turn",
                 median_ms(observe, 30, args.clock), None, OBSERVATION_TARGET_MS))  # fmt: skip
    peers = (
        ""
        if peer is None
        else "".join(f"; peer {name} {value}" for name, value in peer.versions.items())
    )
    print(machine_line("pydantic", "pydantic-core", "numpy") + peers)
    print(f"Clock: {args.clock}; (a): {args.rounds} rounds x {args.repeats} calls per side. "
          f"Before: {before}; after: {load_line()}")  # fmt: skip
    if skipped:
        print(skipped)
    print()
    print("| measurement | ours median ms | llm-sim median ms | ours / llm-sim | target ms "
          "| verdict |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|")
    for label, value, peer_value, target in rows:
        verdict = "" if target is None else ("PASS" if value <= target else "above target")
        target_text = "-" if target is None else f"{target:g}"
        peer_text = "-" if peer_value is None else f"{peer_value:.3f}"
        ratio = "-" if peer_value is None else f"{value / peer_value:.2f}"
        print(f"| {label} | {value:.3f} | {peer_text} | {ratio} | {target_text} | {verdict} |")
    if args.ablation:
        schema_ablation(validator, state, args)


if __name__ == "__main__":
    main()
