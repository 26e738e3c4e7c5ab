"""``chess_env.core.fen``: the fast FEN equals python-chess's on every position we can reach or
build."""

from __future__ import annotations

import chess
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env.core.fen import board_fen_of, fen_of


def test_every_sampled_position_matches_python_chess(positions: list[chess.Board]) -> None:
    """~10,000 positions from biased random games: promotions, castling, en passant included."""
    mismatches = [board.fen() for board in positions if fen_of(board) != board.fen()]
    assert mismatches == []


def test_the_en_passant_square_is_shown_only_when_a_capture_there_is_legal() -> None:
    capturable = chess.Board("4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 1")
    pinned = chess.Board("8/8/8/K2Pp2r/8/8/8/7k w - e6 0 1")  # exd6 would expose the king
    no_pawn_beside = chess.Board("4k3/8/8/8/3P4/8/8/4K3 b - d3 0 1")
    assert fen_of(capturable).split()[3] == "d3"
    assert fen_of(pinned).split()[3] == "-"
    assert fen_of(no_pawn_beside).split()[3] == "-"
    for board in (capturable, pinned, no_pawn_beside):
        assert fen_of(board) == board.fen()


def test_castling_rights_and_clocks_follow_the_moves() -> None:
    board = chess.Board("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 7 12")
    for uci in ("h1g1", "a8b8", "e1d1"):
        board.push_uci(uci)
        assert fen_of(board) == board.fen()
    assert fen_of(board) == "1r2k2r/pppppppp/8/8/8/8/PPPPPPPP/R2K2R1 b k - 10 13"


@settings(max_examples=300, deadline=None)
@given(
    placement=st.dictionaries(
        st.sampled_from(chess.SQUARES),
        st.builds(chess.Piece, st.sampled_from(chess.PIECE_TYPES), st.booleans()),
        max_size=64,
    )
)
def test_any_placement_matches_python_chess(placement: dict[chess.Square, chess.Piece]) -> None:
    """Any pieces on any squares, legal or not: every run length of empty squares, full ranks."""
    board = chess.BaseBoard.empty()
    board.set_piece_map(placement)
    assert board_fen_of(board) == board.board_fen()


@settings(max_examples=200, deadline=None)
@given(choices=st.lists(st.integers(min_value=0, max_value=10**6), max_size=200))
def test_random_playouts_match_python_chess(choices: list[int]) -> None:
    board = chess.Board()
    for choice in choices:
        assert fen_of(board) == board.fen()
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[choice % len(moves)])
    assert fen_of(board) == board.fen()
