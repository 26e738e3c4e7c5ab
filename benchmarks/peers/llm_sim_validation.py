"""llm-sim's state validation timed for ``benchmarks.multiagent``, run by llm-sim's own venv.

llm-sim (rHedBull/llm-sim, Python >= 3.12, ``make peer-llm-sim`` installs it into
``.venv-llm-sim``) builds a pydantic model per state from the YAML definitions
(``llm_sim.models.state.create_agent_state_model``). This script drives that model with our
workload. It imports nothing of ours: it speaks JSON lines on stdin and stdout, one persistent
process per benchmark run, so its timings interleave with ours.

Requests (one JSON object a line), each answered by one line:

- ``{"workload": {"agent_vars", "global_vars", "agents", "global_state"}}``: builds llm-sim's
  models, validates the workload once by every run below (the global state too) and answers
  ``{"ready": true, "versions": {...}}``;
- ``{"run": RUN, "repeats": n, "clock": "wall" | "cpu"}``: validates all agents ``n`` times and
  answers ``{"ms": [per-repeat milliseconds]}`` read from ``time.perf_counter`` (wall, the
  default) or ``time.process_time`` (cpu), as ``benchmarks.machine.CLOCKS`` has them. RUN is

  - ``dicts``: from dicts the way ours does it, one pydantic-core call over all agents
    (``TypeAdapter(dict[str, AgentState]).validate_python``): the fastest way to drive the model;
  - ``construct``: from dicts the way llm-sim's own code does it, ``AgentState(**state)`` per
    agent (its lifecycle manager and its validating ``model_copy``);
  - ``json``: from the JSON bytes of all agents (``TypeAdapter(...).validate_json``).

- ``{"dump": true}``: answers ``{"agents": {name: state}}``, the agents as llm-sim validated them
  (``model_dump(mode="json")``), so a test can hold them against ours.

The workload crosses as JSON, where tuples are lists; ``decode_workload`` turns back into tuples
the values whose definition is a tuple, so llm-sim validates the very objects ours does.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["decode_workload", "main", "restore_tuples"]

_CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def restore_tuples(definition: Any, value: Any) -> Any:
    """``value`` with the lists that ``definition`` (a raw definition) declares tuples as tuples."""
    if isinstance(definition, str) or value is None:
        return value
    kind = definition.get("type")
    if kind == "tuple" and isinstance(value, list):
        items = definition.get("item_types") or []
        return tuple(restore_tuples(item, part) for item, part in zip(items, value, strict=False))
    if kind == "list" and isinstance(value, list):
        return [restore_tuples(definition.get("item_type"), item) for item in value]
    if kind in ("dict", "object") and isinstance(value, dict):
        schema = definition.get("schema")
        return {
            key: restore_tuples(
                definition.get("value_type") if schema is None else schema.get(key, "str"), item
            )
            for key, item in value.items()
        }
    return value


def decode_workload(workload: dict[str, Any]) -> dict[str, Any]:
    """The workload message with its states' tuples restored (definitions unchanged)."""
    agent_vars, global_vars = workload["agent_vars"], workload["global_vars"]

    def state(definitions: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        return {key: restore_tuples(definitions.get(key, "str"), v) for key, v in values.items()}

    return {
        "agent_vars": agent_vars,
        "global_vars": global_vars,
        "agents": {name: state(agent_vars, values) for name, values in workload["agents"].items()},
        "global_state": state(global_vars, workload["global_state"]),
    }


class _Peer:
    """llm-sim's models for one workload, and the timed runs."""

    def __init__(self, workload: dict[str, Any]) -> None:
        warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)
        from llm_sim.models.config import StateVariablesConfig
        from llm_sim.models.state import create_agent_state_model, create_global_state_model
        from llm_sim.utils.logging import configure_logging
        from pydantic import TypeAdapter

        configure_logging(level="INFO")  # as llm-sim's runs do: its model builders log at debug

        self.workload = decode_workload(workload)
        variables = StateVariablesConfig(
            agent_vars=self.workload["agent_vars"], global_vars=self.workload["global_vars"]
        )
        self.agent_model = create_agent_state_model(variables.agent_vars)
        self.global_model = create_global_state_model(variables.global_vars)
        self.agents_adapter = TypeAdapter(dict[str, self.agent_model])  # type: ignore[name-defined]
        self.agents = self.workload["agents"]
        self.agents_json = json.dumps(self.agents).encode()
        self.global_model(**self.workload["global_state"])
        self.runs: dict[str, Callable[[], object]] = {
            "dicts": lambda: self.agents_adapter.validate_python(self.agents),
            "construct": self.construct,
            "json": lambda: self.agents_adapter.validate_json(self.agents_json),
        }
        for run in self.runs.values():
            run()

    def construct(self) -> dict[str, Any]:
        model = self.agent_model
        return {name: model(**state) for name, state in self.agents.items()}

    def time(self, run: str, repeats: int, clock: Callable[[], float]) -> list[float]:
        function = self.runs[run]
        samples = []
        for _ in range(repeats):
            start = clock()
            function()
            samples.append((clock() - start) * 1e3)
        return samples


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        **{package: version(package) for package in ("llm-sim", "pydantic", "pydantic-core")},
    }


def main() -> None:
    # Answers go to the original stdout; anything llm-sim prints goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    peer: _Peer | None = None
    for line in sys.stdin:
        request = json.loads(line)
        if "workload" in request:
            peer = _Peer(request["workload"])
            answer: dict[str, Any] = {"ready": True, "versions": _versions()}
        elif peer is None:
            answer = {"error": "send the workload first"}
        elif "dump" in request:
            agents = peer.construct()
            answer = {"agents": {name: a.model_dump(mode="json") for name, a in agents.items()}}
        else:
            clock = _CLOCKS[request.get("clock", "wall")]
            answer = {"ms": peer.time(request["run"], int(request.get("repeats", 1)), clock)}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
