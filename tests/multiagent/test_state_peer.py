"""``benchmarks.multiagent`` (a) and its llm-sim peer: the peer validates exactly our workload.

The peer script runs in llm-sim's own venv (``make peer-llm-sim``); the tests that start it are
skipped when that venv is absent. What crosses to it (definitions, states) is checked here
without it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchmarks import multiagent as bench
from benchmarks.peers.llm_sim_validation import decode_workload
from multiagent.state import StateValidator

PEER_PYTHON = Path(os.environ.get("LLM_SIM_VENV", bench.ROOT / ".venv-llm-sim")) / "bin" / "python"
needs_peer = pytest.mark.skipif(
    not PEER_PYTHON.exists(), reason="no llm-sim venv (make peer-llm-sim)"
)


@pytest.fixture(scope="module")
def workload() -> tuple[bench.SimulationConfig, bench.WorldState]:
    return bench.workload_config(), bench.workload_state()


def test_the_peer_reads_our_states_exactly(workload) -> None:
    config, state = workload
    decoded = decode_workload(bench.peer_workload(config, state))
    # repr: the same values of the same types (tuples stay tuples) in the same order.
    assert repr(decoded["agents"]) == repr(state.agents)
    assert repr(decoded["global_state"]) == repr(state.global_state)


def test_the_peer_reads_our_definitions_with_the_defaults_we_derive(workload) -> None:
    config, state = workload
    message = bench.peer_workload(config, state)
    variables = config.state_variables
    for sent, ours in ((message["agent_vars"], variables.agent_vars),
                       (message["global_vars"], variables.global_vars)):  # fmt: skip
        assert list(sent) == list(ours)
        for name, definition in sent.items():
            assert definition["default"] == json.loads(json.dumps(ours[name].derived_default()))
            without_default = {k: v for k, v in definition.items() if k != "default"}
            reloaded = ours[name].model_validate(without_default)
            assert reloaded == ours[name].model_copy(update={"default": None})
    assert len(message["agent_vars"]) == 50 and len(message["global_vars"]) == 10
    assert len(message["agents"]) == bench.N_AGENTS


@needs_peer
def test_the_peer_accepts_the_values_we_accept(workload) -> None:
    config, state = workload
    variables = config.state_variables
    ours = StateValidator(variables.agent_vars, variables.global_vars).agents(state.agents)
    peer = bench.LlmSimPeer(PEER_PYTHON, bench.peer_workload(config, state))
    try:
        assert peer.versions["llm-sim"]
        assert peer.dump() == json.loads(json.dumps(ours))
        for run in ("dicts", "construct", "json"):
            samples = peer.time(run, 2, "wall")
            assert len(samples) == 2 and all(ms > 0 for ms in samples)
    finally:
        peer.close()


def test_the_benchmark_names_why_it_skips_the_peer(workload, monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("LLM_SIM_VENV", str(tmp_path / "absent"))
    bench.main(["--rounds", "1", "--repeats", "1"])
    out = capsys.readouterr().out
    assert f"llm-sim: skipped, no {tmp_path / 'absent' / 'bin' / 'python'}" in out
    assert "| (a) validate 100 agents from dicts |" in out
