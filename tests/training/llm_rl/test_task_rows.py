"""The task set's dataset rows drive ``ChessToolEnv`` as TRL hands them over: every column goes
to ``reset(**row)``, each answer scores 1 and another legal move 0, from the row's position."""

from __future__ import annotations

import chess
import pytest

pytest.importorskip("datasets")
from training.llm_rl import chess_tool_env
from training.llm_rl.datasets import seed_dataset


def test_every_row_resets_to_its_position_and_grades_its_answers() -> None:
    env = chess_tool_env(prompt="llm_chess")()  # a condition that shows the FEN
    for row in seed_dataset(24, seed=5):
        prompt = env.reset(**row)
        assert f"FEN: {row['fen']}" in prompt
        env.move(row["answers"][0])
        assert env.get_reward() == 1.0
        board = chess.Board(row["fen"])
        wrong = next((m.uci() for m in board.legal_moves if m.uci() not in row["answers"]), None)
        if wrong is not None:
            env.reset(**row)
            env.move(wrong)
            assert env.get_reward() == 0.0
