"""``ArenaEvalCallback``: a saved checkpoint plays the arena's anchors as ``hf:PATH`` and its
rating is logged in the trainer's history (a tiny random checkpoint: the plumbing, not skill)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")
from training.llm_rl.callbacks import ArenaEvalCallback

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from tiny_checkpoint import save_tiny_chess_checkpoint, save_tiny_tool_checkpoint


def test_a_saved_checkpoint_is_rated_and_the_rating_logged(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    save_tiny_tool_checkpoint(tmp_path / "run" / "checkpoint-3")
    callback = ArenaEvalCallback(tmp_path / "arena", games=2, max_plies=20,
                                 player_options="max_tokens=4&retries=0")  # fmt: skip
    assert callback.spec("c") == "hf:c?tool_calling=yes&max_tokens=4&retries=0"
    state = SimpleNamespace(global_step=3, log_history=[])
    control = object()
    assert (
        callback.on_save(SimpleNamespace(output_dir=str(tmp_path / "run")), state, control)
        is control
    )
    (logged,) = state.log_history
    assert logged["step"] == 3 and set(logged) >= {"arena/rating", "arena/rating_low"}
    rating, low, high = callback.ratings[3]
    assert rating is not None and low is not None and high is not None and low <= rating <= high
    assert (tmp_path / "arena" / "checkpoint-3" / "result.json").exists()


def test_a_text_answering_checkpoint_is_rated_without_tools(tmp_path: Path) -> None:
    save_tiny_chess_checkpoint(tmp_path / "checkpoint-1")
    callback = ArenaEvalCallback(tmp_path / "arena", games=2, max_plies=20, tool_calling=False,
                                 player_options="max_tokens=1&retries=0")  # fmt: skip
    rating, low, high = callback.rate(tmp_path / "checkpoint-1", 1)
    assert rating is not None and low is not None and high is not None


def test_games_must_cover_both_colours() -> None:
    with pytest.raises(ValueError, match="games must be even"):
        ArenaEvalCallback("out", games=3)
