"""``training.attacks.attack_maps`` square by square against python-chess's ``attacks``."""

from __future__ import annotations

import chess
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env.core.encoding import Perspective, board_to_tensor
from training.attacks import attack_maps, check_squares

FENS = [
    chess.STARTING_FEN,
    "8/8/8/3Q4/8/8/8/k6K w - - 0 1",  # a queen's rays to every edge
    "r3k2r/pPp2ppp/8/3pP3/8/8/PPP2PPP/R3K2R w KQkq d6 0 1",  # blockers, en passant, promotion
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # rooks and pawns only
    "1n2k1n1/8/8/8/8/8/8/1N2K1N1 b - - 0 1",  # knights on the rims, black to move
]


def expected(board: chess.Board, color: chess.Color, flipped: bool) -> np.ndarray:
    """The (8, 8) map of squares ``color`` attacks, in the tensor's rows and columns."""
    grid = np.zeros((8, 8), dtype=np.float32)
    for square in chess.SquareSet(board.occupied_co[color]):
        for target in board.attacks(square):
            rank = chess.square_rank(target)
            grid[rank if flipped else 7 - rank, chess.square_file(target)] = 1.0
    return grid


def playout(seed: int, plies: int) -> chess.Board:
    """The position after up to ``plies`` seeded random moves."""
    rng = np.random.default_rng(seed)
    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[rng.integers(len(moves))])
    return board


def check(board: chess.Board, perspective: Perspective) -> None:
    us = board.turn if perspective == "side_to_move" else perspective == "white"
    tensor = torch.as_tensor(board_to_tensor(board, perspective)).permute(2, 0, 1)[None]
    ours, theirs = attack_maps(tensor).numpy()[0]
    flipped = us == chess.BLACK  # black's view is the board flipped vertically
    np.testing.assert_array_equal(ours, expected(board, us, flipped), err_msg=board.fen())
    np.testing.assert_array_equal(theirs, expected(board, not us, flipped), err_msg=board.fen())


def test_known_positions_from_every_perspective() -> None:
    for fen in FENS:
        for perspective in ("side_to_move", "white", "black"):
            check(chess.Board(fen), perspective)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 120))
def test_random_playouts_match_python_chess(seed: int, plies: int) -> None:
    board = playout(seed, plies)
    check(board, "side_to_move")
    check(board, "white")


def test_a_batch_is_its_boards_one_by_one() -> None:
    boards = [chess.Board(fen) for fen in FENS]
    batch = torch.stack([torch.as_tensor(board_to_tensor(b)).permute(2, 0, 1) for b in boards])
    together = attack_maps(batch)
    for index in range(len(boards)):
        assert torch.equal(together[index], attack_maps(batch[index : index + 1])[0])


def expected_checks(board: chess.Board, us: chess.Color, flipped: bool) -> np.ndarray:
    """(3, 8, 8): where a knight, a rook, a bishop of ``us`` would attack their king, found by
    python-chess putting each such piece on every square of the board as it stands."""
    king = board.king(not us)
    grid = np.zeros((3, 8, 8), dtype=np.float32)
    if king is None:
        return grid
    for plane, piece_type in enumerate((chess.KNIGHT, chess.ROOK, chess.BISHOP)):
        for square in chess.SQUARES:
            trial = board.copy(stack=False)
            trial.set_piece_at(square, chess.Piece(piece_type, us))
            if square != king and king in trial.attacks(square):
                rank = chess.square_rank(square)
                grid[plane, rank if flipped else 7 - rank, chess.square_file(square)] = 1.0
    return grid


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 120))
def test_check_squares_match_python_chess(seed: int, plies: int) -> None:
    board = playout(seed, plies)
    for fen in [board.fen(), *FENS]:
        position = chess.Board(fen)
        tensor = torch.as_tensor(board_to_tensor(position)).permute(2, 0, 1)[None]
        planes = check_squares(tensor).numpy()[0]
        wanted = expected_checks(position, position.turn, position.turn == chess.BLACK)
        np.testing.assert_array_equal(planes, wanted, err_msg=fen)
