"""chess_env.core.alphabeta: the searcher mates, wins material, avoids mates, agrees with a plain
minimax, and refuses depths it cannot search in reasonable time."""

from __future__ import annotations

import random
from typing import Any

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env import ChessEnv
from chess_env.core.alphabeta import MATE, MAX_ALPHABETA_DEPTH, AlphaBetaOpponent, evaluate
from chess_env.core.encoding import encode_move

MATES_IN_ONE = [
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",  # back rank
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # Qxf7
    "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq g3 0 2",  # fool's mate
    "7k/8/5K2/8/8/8/8/6Q1 w - - 0 1",  # Qg6 would stalemate instead
]
HANGING_QUEENS = [
    ("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", "d2d5"),
    ("4k3/3r4/8/8/3Q4/8/8/4K3 b - - 0 1", "d7d4"),
    (
        "r3k3/8/8/8/q7/8/1N6/4K3 w - - 0 1",
        "b2a4",
    ),  # defended by the rook: still a queen for a knight
]
# Most moves here allow a mate in one (found in random games): 18/20, 31/36 and 25/30.
MATE_THREATS = [
    "rnb1kb1r/pppp1pB1/5n1p/8/1P3P1P/4p1q1/P1PPPNP1/RN1QKB1R w KQkq - 0 9",
    "5rnr/1b1p1k2/2q1pp1b/2p3p1/1PP4p/R2nK1P1/1PQBNP1P/1N1B3R w - - 2 29",
    "1rbq4/1p1n3p/3pB3/2pPkrpn/p1P1p3/4K1P1/PPN1P2N/1R5R b - - 1 30",
]


def expert_move(fen: str, depth: int = 2, seed: int = 0) -> chess.Move:
    expert = AlphaBetaOpponent(depth=depth)
    expert.reset(seed=seed)
    board = chess.Board(fen)
    before = board.fen()
    move = expert(board)
    assert board.fen() == before, "the expert must leave the board as it found it"
    return move


def allows_mate_in_one(board: chess.Board) -> bool:
    for move in board.legal_moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


def random_position(seed: int, plies: int) -> chess.Board:
    """The position after up to ``plies`` random moves (earlier if the game ends)."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves or board.is_game_over():
            break
        board.push(rng.choice(moves))
    return board


def reference_value(board: chess.Board, depth: int, ply: int) -> int:
    """Plain negamax over the legal moves, no pruning: what alpha-beta must agree with."""
    if depth == 0:
        return ply - MATE if board.is_checkmate() else evaluate(board)
    moves = list(board.legal_moves)
    if not moves:
        return ply - MATE if board.is_check() else 0
    best = -(10**9)
    for move in moves:
        board.push(move)
        best = max(best, -reference_value(board, depth - 1, ply + 1))
        board.pop()
    return best


def reference_best_moves(board: chess.Board, depth: int) -> set[chess.Move]:
    scores = {}
    for move in board.legal_moves:
        board.push(move)
        scores[move] = -reference_value(board, depth - 1, 1)
        board.pop()
    best = max(scores.values())
    return {move for move, score in scores.items() if score == best}


# -- alpha-beta ---------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("fen", MATES_IN_ONE)
def test_alphabeta_mates_in_one(fen: str, depth: int) -> None:
    board = chess.Board(fen)
    board.push(expert_move(fen, depth))
    assert board.is_checkmate()


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(("fen", "capture"), HANGING_QUEENS)
def test_alphabeta_wins_a_hanging_queen(fen: str, capture: str, depth: int) -> None:
    assert expert_move(fen, depth).uci() == capture


@pytest.mark.parametrize("fen", MATE_THREATS)
def test_alphabeta_at_depth_two_avoids_a_mate_in_one(fen: str) -> None:
    board = chess.Board(fen)
    board.push(expert_move(fen, depth=2))
    assert not allows_mate_in_one(board), board.fen()


def test_alphabeta_prefers_the_nearer_mate() -> None:
    # Ra8 mates at once; the expert at depth 3 must not play a slower mate.
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    board.push(expert_move(board.fen(), depth=3))
    assert board.is_checkmate()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    plies=st.integers(0, 80),
    depth=st.sampled_from([1, 2]),
    expert_seed=st.integers(0, 2**32),
)
def test_alphabeta_plays_a_best_move_of_plain_minimax(
    seed: int, plies: int, depth: int, expert_seed: int
) -> None:
    board = random_position(seed, plies)
    if board.is_game_over():
        return
    move = expert_move(board.fen(), depth, expert_seed)
    assert move in board.legal_moves
    assert move in reference_best_moves(board, depth), board.fen()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 120))
def test_evaluate_is_antisymmetric_and_colour_blind(seed: int, plies: int) -> None:
    board = random_position(seed, plies)
    assert evaluate(board.mirror()) == evaluate(board)
    if not board.is_check():
        flipped = board.copy(stack=False)
        flipped.push(chess.Move.null())
        assert evaluate(flipped) == -evaluate(board)


def test_alphabeta_is_deterministic_for_a_seed_and_draws_among_ties() -> None:
    positions = [random_position(seed, 12) for seed in range(6)]

    def moves(seed: int) -> list[str]:
        expert = AlphaBetaOpponent(depth=2)
        expert.reset(seed=seed)
        return [expert(board).uci() for board in positions]

    assert moves(7) == moves(7)
    start = {expert_move(chess.STARTING_FEN, seed=seed).uci() for seed in range(12)}
    assert len(start) > 1, "tied moves in the start position are drawn by the seed"


def test_alphabeta_plays_whole_games_in_the_env() -> None:
    env = ChessEnv(opponent=AlphaBetaOpponent(depth=1), max_plies=40)
    expert = AlphaBetaOpponent(depth=1)
    _, info = env.reset(seed=3)
    expert.reset(seed=3)
    done = False
    while not done:
        move = expert(env.board)
        _, _, terminated, truncated, info = env.step(encode_move(move, env.board.turn))
        done = terminated or truncated
    assert "illegal_action" not in info


@pytest.mark.parametrize("depth", [0, -1, 1.5, True, MAX_ALPHABETA_DEPTH + 1])
def test_alphabeta_rejects_a_bad_depth(depth: Any) -> None:
    with pytest.raises(ValueError, match="depth"):
        AlphaBetaOpponent(depth=depth)
