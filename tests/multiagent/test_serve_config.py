"""``python -m multiagent serve --world BAD.yaml`` refuses to start on a world that cannot load,
instead of serving one whose first ``/reset`` fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def test_serve_refuses_a_world_whose_dynamics_cannot_be_imported(tmp_path: Path) -> None:
    world = {
        "simulation": {"name": "bad", "max_turns": 5},
        "agents": [{"name": "A"}, {"name": "B"}],
        "engine": {"dynamics": "no_such_module_q7:step"},
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    command = [sys.executable, "-m", "multiagent", "serve", "--world", str(path), "--port", "0"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO)
    except subprocess.TimeoutExpired:  # run() has killed it
        pytest.fail("serve started (still running after 60 s) on a world that cannot run")
    assert result.returncode != 0
    assert "engine.dynamics" in result.stderr and "no_such_module_q7" in result.stderr
    assert "Uvicorn running" not in result.stdout + result.stderr
