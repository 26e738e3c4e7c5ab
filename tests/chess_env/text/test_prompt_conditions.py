"""Prompt conditions: the presets, the option grammar, and the PGN history written and read back."""

from __future__ import annotations

import random
from typing import Any

import chess
import pytest

from chess_env.text.prompt_conditions import (
    HISTORY_MAX_CHARS,
    PRESETS,
    PromptCondition,
    board_from_history,
    condition_from_options,
    history_lines,
)

ENDGAME_FEN = "8/5k2/8/3P4/8/8/2K5/8 b - - 4 40"


def random_game(plies: int, seed: int, fen: str | None = None) -> chess.Board:
    """A random walk of ``plies`` plies (draw rules ignored), or as far as a mate allows."""
    rng = random.Random(seed)
    board = chess.Board(fen) if fen else chess.Board()
    while board.ply() - chess.Board(board.root().fen()).ply() < plies:
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board


def test_presets_name_the_benchmarks_conditions() -> None:
    labels = {name: condition.label for name, condition in PRESETS.items()}
    assert labels == {
        "default": "board=ascii&legal=true&history=last",
        "game_arena": "board=fen&legal=false&history=pgn",
        "textarena": "board=ascii&legal=true&history=pgn",
        "textarena_blind": "board=none&legal=false&history=pgn",
        "llm_chess": "board=unicode&legal=true&history=none",
    }
    assert PRESETS["default"] == PromptCondition()
    for name, condition in PRESETS.items():  # a label is an options string: it reads back
        assert condition_from_options(dict(pair.split("=") for pair in condition.label.split("&")))
        assert condition_from_options({"prompt": name}) == condition


@pytest.mark.parametrize(
    ("options", "label"),
    [
        ({}, "board=ascii&legal=true&history=last"),
        ({"prompt": "game_arena"}, "board=fen&legal=false&history=pgn"),
        ({"prompt": "game_arena", "legal": "yes"}, "board=fen&legal=true&history=pgn"),
        (
            {"legal": "false", "board": "none", "history": "pgn"},
            "board=none&legal=false&history=pgn",
        ),
        ({"prompt": "llm_chess", "legal": "0"}, "board=unicode&legal=false&history=none"),
        ({"prompt": "textarena_blind", "board": "fen"}, "board=fen&legal=false&history=pgn"),
        ({"board": "unicode", "model": "other keys"}, "board=unicode&legal=true&history=last"),
    ],
)
def test_options_override_the_preset(options: dict[str, str], label: str) -> None:
    assert condition_from_options(options).label == label


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": "kaggle"}, "prompt must be one of ['default', 'game_arena', 'textarena'"),
        ({"board": "svg"}, "board must be one of ['ascii', 'unicode', 'fen', 'none'], got 'svg'"),
        ({"legal": "maybe"}, "legal must be true or false, got 'maybe'"),
        ({"history": "all"}, "history must be one of ['none', 'last', 'pgn'], got 'all'"),
        ({"board": "none", "history": "none"}, "board=none needs history=pgn"),
        ({"board": "none"}, "board=none needs history=pgn (got history='last')"),
        ({"prompt": "textarena_blind", "history": "none"}, "board=none needs history=pgn"),
    ],
)
def test_bad_options_name_the_key_and_the_allowed_values(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        condition_from_options(options)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"board": "svg"}, "board must be one of"),
        ({"history": "full"}, "history must be one of"),
        ({"legal": "no"}, "legal must be true or false"),
        ({"board": "none", "history": "last"}, "board=none needs history=pgn"),
    ],
)
def test_conditions_are_checked_when_made(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PromptCondition(**fields)


def test_history_from_the_standard_start_is_one_line_of_movetext() -> None:
    board = chess.Board()
    assert history_lines(board) == ["Moves so far (PGN): none."]
    for san in ("e4", "e5", "Nf3", "Nc6", "Bb5"):
        board.push_san(san)
    assert history_lines(board) == ["Moves so far (PGN): 1. e4 e5 2. Nf3 Nc6 3. Bb5"]
    assert board_from_history("\n".join(history_lines(board))) == board


def test_history_from_another_position_carries_its_fen() -> None:
    board = chess.Board(ENDGAME_FEN)
    assert history_lines(board) == [
        f"The moves below start from this position (FEN): {ENDGAME_FEN}",
        "Moves so far (PGN): none.",
    ]
    for san in ("Ke7", "Kd3", "Kd6"):
        board.push_san(san)
    lines = history_lines(board)
    assert lines[1] == "Moves so far (PGN): 40...Ke7 41. Kd3 Kd6"
    assert board_from_history("\n".join(lines)).fen() == board.fen()


def test_a_512_ply_game_fits_whole() -> None:
    for seed in range(5):
        board = random_game(512, seed)
        lines = history_lines(board)
        assert len(lines) == 1 and len(lines[0]) < HISTORY_MAX_CHARS / 2
        assert board_from_history(lines[0]).fen() == board.fen()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fen", [None, ENDGAME_FEN])
def test_a_long_history_keeps_its_last_moves_from_the_fen_where_they_start(
    seed: int, fen: str | None
) -> None:
    board = random_game(300, seed, fen)
    lines = history_lines(board, max_chars=400)
    assert lines[0].startswith("The first ") and " plies are left out" in lines[0]
    movetext = lines[1].removeprefix("Moves so far (PGN): ")
    assert len(movetext) <= 400 and movetext.split()[0].endswith(".")
    assert not movetext.split()[0].endswith("...")  # a white move starts it
    assert board_from_history("\n".join(lines)).fen() == board.fen()


def test_a_limit_below_one_move_leaves_the_position_alone() -> None:
    board = random_game(10, 0)
    lines = history_lines(board, max_chars=3)
    assert lines[0].startswith("The first 10 plies are left out") and lines[1].endswith("none.")
    assert board_from_history("\n".join(lines)).fen() == board.fen()


def test_text_without_history_reads_as_none() -> None:
    assert board_from_history("FEN: 8/8/8/8/8/8/8/K6k w - - 0 1") is None
