"""The served ``ascii`` board (drawn from the FEN) is ``render_ansi``'s picture in ASCII."""

from __future__ import annotations

import random

import chess
import pytest

from chess_env.core.render import render_ansi
from chess_env.serving.app import ascii_board

UNICODE_TO_ASCII = str.maketrans(
    {"·": ".", **{u: s for s, u in chess.UNICODE_PIECE_SYMBOLS.items()}}
)


def random_positions(seed: int, count: int) -> list[chess.Board]:
    rng, board, positions = random.Random(seed), chess.Board(), []
    while len(positions) < count:
        if board.is_game_over():
            board = chess.Board()
        board.push(rng.choice(list(board.legal_moves)))
        positions.append(board.copy(stack=False))
    return positions


@pytest.mark.parametrize("orientation", [chess.WHITE, chess.BLACK])
def test_the_fen_drawing_matches_render_ansi(orientation: chess.Color) -> None:
    for board in [chess.Board(), *random_positions(0, 300)]:
        expected = render_ansi(board, orientation).translate(UNICODE_TO_ASCII)
        assert ascii_board(board.fen(), orientation) == expected, board.fen()
