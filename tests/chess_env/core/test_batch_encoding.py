"""``chess_env.core.batch_encoding``: the batched planes, FENs and masks equal the one-board
encoders."""

from __future__ import annotations

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env.core.batch_encoding import BoardBatch, boards_to_fens, boards_to_tensor
from chess_env.core.encoding import board_to_tensor
from chess_env.core.fen import fen_of
from chess_env.core.rules import ChessGame

placements = st.dictionaries(
    st.sampled_from(chess.SQUARES),
    st.builds(chess.Piece, st.sampled_from(chess.PIECE_TYPES), st.booleans()),
    max_size=64,
)


def board_of(placement: dict[chess.Square, chess.Piece], turn: bool) -> chess.Board:
    board = chess.Board(None)
    board.set_piece_map(placement)
    board.turn = turn
    return board


def side(color: bool) -> str:
    return "white" if color else "black"


@settings(max_examples=200, deadline=None)
@given(boards=st.lists(st.tuples(placements, st.booleans(), st.booleans()), min_size=1, max_size=9))
def test_any_placements_encode_as_the_one_board_encoders(
    boards: list[tuple[dict[chess.Square, chess.Piece], bool, bool]],
) -> None:
    """Any pieces on any squares (every run of empty squares, full ranks), either side to move,
    planes seen from either side, in batches of mixed sides."""
    batch = [board_of(placement, turn) for placement, turn, _ in boards]
    colors = [color for _, _, color in boards]
    expected = [board_to_tensor(board, side(c)) for board, c in zip(batch, colors, strict=True)]
    planes = boards_to_tensor(batch, colors)
    assert planes.flags.c_contiguous and planes.dtype == np.uint8
    np.testing.assert_array_equal(planes, np.stack(expected))
    assert boards_to_fens(batch) == [board.fen() for board in batch]


def test_sampled_positions_encode_as_the_one_board_encoders(
    positions: list[chess.Board],
) -> None:
    """~10,000 positions from biased random games (castling, en passant, promotions)."""
    colors = [index % 5 < 2 for index in range(len(positions))]
    planes = boards_to_tensor(positions, colors)
    for board, color, plane in zip(positions, colors, planes, strict=True):
        np.testing.assert_array_equal(plane, board_to_tensor(board, side(color)))
    assert boards_to_fens(positions) == [fen_of(board) for board in positions]


def test_a_board_batch_reads_each_added_row_as_the_game_shows_it(
    positions: list[chess.Board],
) -> None:
    games = [ChessGame(board.copy()) for board in positions[:200:7] if not board.is_game_over()]
    rows = [index for index in range(len(games)) if index % 3]  # some rows left out
    batch = BoardBatch(len(games))
    whites = []
    for row in rows:
        game = games[row]
        whites.append(row % 2 == 0)
        batch.add(row, game.board, whites[-1], game.legal_actions)
    planes, fens = batch.planes_and_fens()
    masks = batch.masks()
    assert masks.shape == (len(games), 4672) and masks.dtype == np.int8
    for row, game in enumerate(games):
        expected = game.action_mask(np.int8) if row in rows else np.zeros(4672, np.int8)
        np.testing.assert_array_equal(masks[row], expected)
    for plane, fen, row, white in zip(planes, fens, rows, whites, strict=True):
        np.testing.assert_array_equal(plane, board_to_tensor(games[row].board, side(white)))
        assert fen == games[row].board.fen()


def test_a_board_batch_takes_rows_in_order_and_may_stay_empty() -> None:
    batch = BoardBatch(3)
    planes, fens = batch.planes_and_fens()
    assert planes.shape == (0, 8, 8, 12) and fens == []
    assert not batch.masks().any()
    game = ChessGame()
    batch.add(1, game.board, True, game.legal_actions)
    with pytest.raises(ValueError, match="row 1 added after row 1"):
        batch.add(1, game.board, True, game.legal_actions)
