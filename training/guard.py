"""``OnePlyGuard``: a trained policy with a one-ply safety net, reported apart from the network.

The network alone cannot see a position's history (the board tensor has none), so it repeats
moves in won positions, and it does not look ahead, so it gives stalemate. The guard looks one
ply ahead of the network's ranking: it plays a mate in one if there is one, and otherwise the
network's best move among those that neither stalemate the opponent nor repeat a position seen
before in the game (falling back to the network's best move when every move does). It is a
player (``chess_env.core.opponents.Opponent``), so ``training.evaluate(OnePlyGuard(model), ...)``
plays it; its numbers are the guard's, never the pure network's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chess

from chess_env.core.encoding import board_to_tensor, encode_move
from chess_env.core.opponents import Opponent
from training.evaluation import policy_logits

__all__ = ["OnePlyGuard"]


class OnePlyGuard(Opponent):
    """Mate in one first; then the policy's best move that neither stalemates nor repeats.

    Args:
        model: an SB3 model (or policy) trained on ``ChessEnv``'s side-to-move board.

    Example:
        >>> from training.bc import bc_model
        >>> from training.config import BCConfig
        >>> guard = OnePlyGuard(bc_model(BCConfig()))
        >>> guard(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")).uci()  # mate in one
        'a1a8'
    """

    name = "guarded policy"

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.policy = getattr(model, "policy", model)

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        logits = policy_logits(self.policy, board_to_tensor(board)[None])[0]
        ranked = sorted(legal_moves, key=lambda m: -logits[encode_move(m, board.turn)])
        board = board.copy()  # the history decides repetitions; the caller's board stays as is
        safe = None
        for move in ranked:
            board.push(move)
            try:
                if board.is_checkmate():
                    return move
                if safe is None and not board.is_stalemate() and not board.is_repetition(2):
                    safe = move
            finally:
                board.pop()
        return safe if safe is not None else ranked[0]

    def __repr__(self) -> str:
        return f"OnePlyGuard({type(self.policy).__name__})"
