"""``python -m chess_env``: the demo a new user runs first."""

from __future__ import annotations

import io
import subprocess
import sys

import chess.pgn


def run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "chess_env", *args], capture_output=True, text=True, check=True
    )
    return result.stdout


def test_demo_prints_a_board_a_replayable_pgn_and_the_outcome() -> None:
    out = run("demo", "--seed", "3", "--max-plies", "60")
    assert out.startswith("  a b c d e f g h")
    game = chess.pgn.read_game(io.StringIO(out[out.index("[Event") :]))
    assert game is not None and game.headers["White"] == "greedy"
    assert not game.errors  # every move in the PGN is legal when replayed
    board = game.end().board()
    assert "Outcome: " in out
    if board.outcome() is None:
        assert "unfinished after 60 plies" in out
    assert out == run("demo", "--seed", "3", "--max-plies", "60")  # seeded: the same game


def test_no_arguments_means_demo_and_bad_names_are_rejected() -> None:
    assert '[Event "polyarena demo"]' in run()
    bad = subprocess.run(
        [sys.executable, "-m", "chess_env", "demo", "--white", "magnus"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "invalid choice: 'magnus'" in bad.stderr
