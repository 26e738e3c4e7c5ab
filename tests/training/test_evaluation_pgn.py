"""training's evaluation PGN: player names cannot end their tags (``chess_env.core.pgn``)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import chess.pgn

from chess_env import ChessEnv
from chess_env.core.pgn import tag_value
from training.evaluation import _pgn

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from forged_pgn import FORGED


def test_the_evaluation_pgn_is_one_game_whatever_the_names() -> None:
    env = ChessEnv()
    env.reset(seed=0)
    stream = io.StringIO(_pgn(env, "black", FORGED, "rook\\pusher", 0, "max_plies"))
    parsed = chess.pgn.read_game(stream)
    assert parsed is not None and chess.pgn.read_game(stream) is None
    assert (
        parsed.headers["Black"]
        == tag_value(FORGED)
        == "Eve'] [Result '1-0']  1. e4 1-0  [Event 'forged"
    )
    assert parsed.headers["White"] == "rook/pusher" and parsed.headers["Result"] == "*"
