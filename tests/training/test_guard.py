"""``OnePlyGuard``: mate in one, then the policy's best move that neither stalemates nor repeats."""

from __future__ import annotations

from types import SimpleNamespace

import chess
import numpy as np
import torch

from chess_env.core.encoding import ACTION_SIZE, encode_move
from training.guard import OnePlyGuard


class RankingPolicy:
    """A stand-in SB3 policy whose logits rank the given moves first, in order."""

    def __init__(self, board: chess.Board, preferred: list[str]) -> None:
        self.logits = np.zeros(ACTION_SIZE, dtype=np.float32)
        for rank, uci in enumerate(preferred):
            self.logits[encode_move(chess.Move.from_uci(uci), board.turn)] = 100.0 - rank

    def obs_to_tensor(self, observation: np.ndarray) -> tuple[torch.Tensor, bool]:
        return torch.as_tensor(observation), True

    def get_distribution(self, observation: torch.Tensor) -> SimpleNamespace:
        logits = torch.as_tensor(self.logits)[None].repeat(len(observation), 1)
        return SimpleNamespace(distribution=SimpleNamespace(logits=logits))


def test_a_mate_in_one_beats_the_policys_favourite() -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    guard = OnePlyGuard(RankingPolicy(board, ["g1f2", "a1a7"]))
    assert guard(board).uci() == "a1a8"


def test_a_stalemating_favourite_is_skipped() -> None:
    board = chess.Board("7k/8/4Q3/8/8/8/8/6K1 w - - 0 1")  # Qf7 takes the king's last squares
    stalemating = "e6f7"
    board.push_uci(stalemating)
    assert board.is_stalemate()
    board.pop()
    guard = OnePlyGuard(RankingPolicy(board, [stalemating, "g1f2"]))
    assert guard(board).uci() == "g1f2"


def test_a_repeating_favourite_is_skipped() -> None:
    board = chess.Board("7k/8/8/8/8/8/1R6/K7 w - - 0 1")
    for uci in ("a1b1", "h8g8", "b1a1", "g8h8"):  # the start position has now been seen twice
        board.push_uci(uci)
    guard = OnePlyGuard(RankingPolicy(board, ["a1b1", "a1a2"]))
    fen_before, stack_before = board.fen(), list(board.move_stack)
    assert guard(board).uci() == "a1a2"  # a1b1 would reach a position seen before
    assert board.fen() == fen_before and board.move_stack == stack_before  # untouched
