"""Positions for differential tests: seeded random games biased towards the rare move kinds."""

from __future__ import annotations

import random
from collections.abc import Iterator

import chess
import pytest


def is_special(board: chess.Board, move: chess.Move) -> bool:
    """Promotions, castling and en passant: rare in uniform random play, so we seek them out."""
    return bool(move.promotion) or board.is_castling(move) or board.is_en_passant(move)


def random_game(seed: int, max_plies: int = 300) -> Iterator[chess.Board]:
    """Yield the board before every ply of one random game (the same object, mutated)."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(max_plies):
        if board.is_game_over():
            return
        yield board
        moves = list(board.legal_moves)
        special = [m for m in moves if is_special(board, m)]
        board.push(rng.choice(special if special and rng.random() < 0.7 else moves))


def sample_positions(n_games: int, seed: int = 0, every: int = 1) -> list[chess.Board]:
    """Copies of every ``every``-th position of ``n_games`` random games."""
    positions = []
    for game in range(n_games):
        for ply, board in enumerate(random_game(seed * 100_003 + game)):
            if ply % every == 0:
                positions.append(board.copy(stack=False))
    return positions


CURATED_FENS = [
    # both underpromotion diagonals, straight promotion, captures onto the back rank
    "1n1n4/2P5/8/8/8/8/5p2/k3K1N1 w - - 0 1",
    "1n1n4/2P5/8/8/8/8/5p2/k3K1N1 b - - 0 1",
    # en passant available for both colours
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
    "4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 2",
    # every castling right
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",
    # queen on an open board: all 56 queen-like planes from the centre
    "4k3/8/8/8/3Q4/8/8/4K3 w - - 0 1",
    "4k3/8/8/3q4/8/8/8/4K3 b - - 0 1",
    # knights in the corners and the centre
    "N3k2N/8/8/3N4/8/8/8/N3K2N w - - 0 1",
]


@pytest.fixture(scope="session")
def positions() -> list[chess.Board]:
    """About 10,000 positions from 110 biased random games plus curated corner cases."""
    return [chess.Board(fen) for fen in CURATED_FENS] + sample_positions(110, every=3)
