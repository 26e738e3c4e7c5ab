"""The tensor and the action encoding against python-chess and PettingZoo chess_v6."""

from __future__ import annotations

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.classic.chess import chess_utils

from chess_env import ACTION_SIZE, IllegalActionError
from chess_env.core.encoding import (
    board_to_tensor,
    decode_action,
    encode_move,
    legal_action_mask,
    legal_actions,
)


def reference_tensor(board: chess.Board, us: chess.Color) -> np.ndarray:
    """The tensor the slow way: one square at a time, straight from the issue's definition."""
    tensor = np.zeros((8, 8, 12), dtype=np.uint8)
    for square, piece in board.piece_map().items():
        rank, file = chess.square_rank(square), chess.square_file(square)
        row = 7 - rank if us == chess.WHITE else rank
        channel = piece.piece_type - 1 + (0 if piece.color == us else 6)
        tensor[row, file, channel] = 1
    return tensor


def test_white_pawn_on_e2_is_at_row_6_column_4_channel_0() -> None:
    tensor = board_to_tensor(chess.Board())
    assert tensor.shape == (8, 8, 12) and tensor.dtype == np.uint8
    assert tensor[6, 4, 0] == 1
    assert tensor[0, 4, 11] == 1  # black king on e8, "their" king channel
    assert tensor.sum() == 32


def test_black_to_move_sees_the_board_flipped_so_it_plays_up() -> None:
    board = chess.Board()
    board.push_uci("e2e4")
    tensor = board_to_tensor(board)
    assert tensor[6, 4, 0] == 1  # black's own e7 pawn, now on "row 6" like white's e2 pawn
    assert tensor[3, 4, 6] == 1  # white's e4 pawn is "theirs", on rank 4 counted from the top
    assert tensor[7, 4, 5] == 1  # black's king on e8 sits on the bottom row
    np.testing.assert_array_equal(board_to_tensor(board, "white"), reference_tensor(board, True))


def test_tensor_matches_every_square_of_every_position(positions: list[chess.Board]) -> None:
    for board in positions:
        for perspective, us in (("white", True), ("black", False), ("side_to_move", board.turn)):
            np.testing.assert_array_equal(
                board_to_tensor(board, perspective), reference_tensor(board, us), board.fen()
            )


def test_tensor_never_touches_the_board_or_its_move_stack() -> None:
    board = chess.Board()
    for uci in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(uci)
    before = (board.fen(), list(board.move_stack))
    board_to_tensor(board)
    assert (board.fen(), list(board.move_stack)) == before


def test_unknown_perspective_is_rejected_with_the_allowed_values() -> None:
    with pytest.raises(ValueError, match="'side_to_move', 'white' or 'black'"):
        board_to_tensor(chess.Board(), "north")  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(choices=st.lists(st.integers(min_value=0, max_value=10**6), max_size=120))
def test_tensor_round_trips_to_the_piece_map(choices: list[int]) -> None:
    board = chess.Board()
    for choice in choices:
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[choice % len(moves)])
    tensor = board_to_tensor(board, "white")
    rebuilt = {}
    for row, file, channel in zip(*np.nonzero(tensor), strict=True):
        color = chess.WHITE if channel < 6 else chess.BLACK
        rebuilt[chess.square(int(file), 7 - int(row))] = chess.Piece(int(channel) % 6 + 1, color)
    assert rebuilt == board.piece_map()
    # The side-to-move view is the white view flipped and with the colours swapped for black.
    flipped = tensor[::-1][:, :, np.r_[6:12, 0:6]]
    expected = tensor if board.turn == chess.WHITE else flipped
    np.testing.assert_array_equal(board_to_tensor(board), expected)


def test_move_kinds_are_all_covered(positions: list[chess.Board]) -> None:
    """Guards the differential tests below: they must see every rare move kind."""
    seen: set[str] = set()
    for board in positions:
        for move in board.legal_moves:
            if move.promotion == chess.QUEEN:
                seen.add("queen promotion")
            elif move.promotion:
                seen.add("underpromotion")
            if board.is_castling(move):
                seen.add("castling " + ("white" if board.turn else "black"))
            if board.is_en_passant(move):
                seen.add("en passant " + ("white" if board.turn else "black"))
    assert seen == {
        "queen promotion",
        "underpromotion",
        "castling white",
        "castling black",
        "en passant white",
        "en passant black",
    }
    assert sum(not board.turn for board in positions) > 1000
    assert len(positions) > 5000


def test_mask_is_exactly_the_legal_moves_and_round_trips(positions: list[chess.Board]) -> None:
    for board in positions:
        mask = legal_action_mask(board)
        assert mask.shape == (ACTION_SIZE,) and mask.dtype == bool
        moves = list(board.legal_moves)
        assert int(mask.sum()) == len(moves), board.fen()
        for move in moves:
            action = encode_move(move, board.turn)
            assert mask[action]
            assert decode_action(action, board) == move
        assert set(legal_actions(board).values()) == set(moves)


def test_every_unmasked_action_is_rejected(positions: list[chess.Board]) -> None:
    for board in positions[:: len(positions) // 40]:
        mask = legal_action_mask(board)
        for action in np.flatnonzero(~mask):
            with pytest.raises(IllegalActionError):
                decode_action(int(action), board)


def test_indices_match_pettingzoo_chess_v6(positions: list[chess.Board]) -> None:
    for board in positions[::3]:
        ours = legal_actions(board)
        assert sorted(ours) == sorted(chess_utils.legal_moves(board)), board.fen()
        player = 0 if board.turn == chess.WHITE else 1
        for action, move in ours.items():
            assert chess_utils.action_to_move(board, action, player) == move


def test_queen_promotion_shares_the_queen_like_plane_and_underpromotions_do_not() -> None:
    board = chess.Board("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1")
    queen = encode_move(chess.Move.from_uci("b7b8q"), chess.WHITE)
    knight = encode_move(chess.Move.from_uci("b7b8n"), chess.WHITE)
    assert queen % 73 < 56 <= 64 <= knight % 73
    assert decode_action(queen, board) == chess.Move.from_uci("b7b8q")
    rook_board = chess.Board("4k3/1R6/8/8/8/8/8/4K3 w - - 0 1")
    assert decode_action(queen, rook_board) == chess.Move.from_uci("b7b8")  # no promotion: a rook


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (ACTION_SIZE, r"action 4672 is out of range \[0, 4672\)"),
        (-1, "out of range"),
        (2.0, "not an integer index"),
        ("e2e4", "not an integer index"),
        (True, "not an integer index"),
    ],
)
def test_bad_indices_are_named(action: object, match: str) -> None:
    with pytest.raises(IllegalActionError, match=match):
        decode_action(action, chess.Board())  # type: ignore[arg-type]


def test_illegal_action_messages_name_the_index_the_move_and_why() -> None:
    board = chess.Board()
    e2e5 = (4 * 8 + 1) * 73 + 16 + 4  # queen-like plane, north, distance 3
    with pytest.raises(IllegalActionError, match=r"action 2429 \(e2e5\) is illegal: not legal"):
        decode_action(e2e5, board)
    e3e4 = (4 * 8 + 2) * 73 + 4
    with pytest.raises(IllegalActionError, match=r"\(e3e4\) is illegal: no piece on e3"):
        decode_action(e3e4, board)
    board.push_uci("e2e4")  # black to move: the same index now names black's mirrored square
    with pytest.raises(IllegalActionError, match="no piece on e6"):
        decode_action(e3e4, board)
    a1_west = 0 * 73 + 1  # from a1 (a8 for black), one step towards the a-file's left
    with pytest.raises(IllegalActionError, match="leaves the board from a8"):
        decode_action(a1_west, board)


def test_numpy_scalars_and_single_element_arrays_are_accepted() -> None:
    board = chess.Board()
    move = chess.Move.from_uci("e2e4")
    action = encode_move(move, chess.WHITE)
    assert decode_action(np.int64(action), board) == move
    assert decode_action(np.array([action]), board) == move  # type: ignore[arg-type]


def test_encode_rejects_moves_no_plane_can_express() -> None:
    with pytest.raises(ValueError, match="a1h2 has no action index"):
        encode_move(chess.Move.from_uci("a1h2"), chess.WHITE)
