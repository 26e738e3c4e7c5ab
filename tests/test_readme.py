"""The README's Python examples run as written (in order, sharing one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run where a new user would: an empty folder, so what the examples save lands there."""
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # What the examples' comments promise.
    assert namespace["result"].ok  # type: ignore[attr-defined]
    assert namespace["report"].stats.games_played == 2  # type: ignore[attr-defined]
    assert namespace["rewards"]  # the world example stepped every agent
    trained = namespace["trained"]
    assert (trained.algorithm, trained.updates, trained.evaluation.games) == ("MaskablePPO", 8, 2)  # type: ignore[attr-defined]
    assert namespace["noisy"].observation_space.shape == (8, 8, 13)  # type: ignore[attr-defined]
    assert namespace["players"].observation_space("player_0")["observation"].shape == (8, 8, 13)  # type: ignore[attr-defined]
    final_step = namespace["step"]
    assert (final_step.done, final_step.reward) == (True, 0.0)  # type: ignore[attr-defined]
    assert namespace["match"].wins == 4  # type: ignore[attr-defined]  # greedy mates random
