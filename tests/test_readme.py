"""The README's Python examples run as written (in order, sharing one namespace).

They run where a new user would: an empty folder, so what they save lands there. The asserts
check what the blocks' comments and text promise.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 7  # the seven steps of Getting started
    ns: dict[str, object] = {}
    for index, block in enumerate(blocks):
        exec(compile(block, f"README.md [python block {index}]", "exec"), ns)
    # 1. the masked random game: greedy mates the random mover
    assert (ns["info"]["outcome"], ns["reward"]) == ("checkmate", -1.0)  # type: ignore[index]
    # 2. training keeps its model where the block says
    trained = ns["trained"]
    assert (trained.algorithm, trained.updates) == ("MaskablePPO", 8)  # type: ignore[attr-defined]
    assert Path(trained.artifacts.model) == Path("runs/first/model.zip")  # type: ignore[attr-defined]
    assert (tmp_path / "runs/first/model.zip").is_file()
    # 3. evaluation and the arena: the model's path is a player; ratings best first
    assert ns["match"].games == 4  # type: ignore[attr-defined]
    cards = ns["arena"].players  # type: ignore[attr-defined]
    assert [card.name for card in cards] == ["greedy", "runs/first/model.zip", "random"]
    assert cards[-1].rating == 0 and cards[0].rating_low > 0
    assert (tmp_path / "runs/arena/games.jsonl").is_file()
    # 4. the viewer's replay route reads the arena's six games
    assert ns["replay"]["total"] == 6  # type: ignore[index]
    # 5. the LLM agent played legal moves only
    stats = ns["report"].stats  # type: ignore[attr-defined]
    assert (stats.games_played, stats.illegal_moves_attempted) == (2, 0)
    # 6. the world: Alice sees Bob's public variables only, Bob sees no one
    observations = ns["observations"]
    assert sorted(observations["Alice"]["others"]["Bob"]) == ["_visible", "gold"]  # type: ignore[index]
    assert observations["Bob"]["others"] == {}  # type: ignore[index]
    assert sorted(ns["rewards"]) == ["Alice", "Bob", "Carol"]  # type: ignore[call-overload]
    assert "did you mean 'float'" in ns["refusal"]  # type: ignore[operator]


def test_readme_is_short_and_names_the_cpu_wheel_index() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 260
    assert "PyTorch's CPU-only wheel index" in text
    assert "--index-url https://download.pytorch.org/whl/cpu" in text
    for heading in ("## Two commands", "## Install by hand", "## Getting started"):
        assert heading in text


def test_readme_links_resolve() -> None:
    """Relative links point at files that exist (mkdocs checks the docs' own anchors)."""
    root = README.parent
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        assert (root / target).exists(), target
