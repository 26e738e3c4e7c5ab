"""The rules core shared by every chess env: one legal-move generation per ply.

``ChessGame`` wraps a ``chess.Board``. After each ply it generates the legal moves once, and that
one list serves the action mask, the decoding of the next action and the mate/stalemate check.
Draws by repetition are counted incrementally instead of replaying the move stack.

When a game ends (``ChessGame.outcome``), in python-chess's order of precedence:

1. checkmate, 2. insufficient material, 3. stalemate;
4. the 75-move rule (halfmove clock >= 150) and 5. fivefold repetition, both automatic;
6. the 50-move rule (halfmove clock >= 100) and 7. threefold repetition, when ``claim_draws``.

Threefold repetition triggers on the ply that reaches a position for the third time since the
last capture or pawn move ("position": python-chess's transposition key -- pieces, side to move,
castling rights and a legal en-passant square), exactly when ``board.is_repetition(3)`` becomes
true. The 50-move draw triggers on the ply that makes the halfmove clock 100
(``board.is_fifty_moves()``). python-chess's ``can_claim_draw()`` also lets the side to move claim
one ply *earlier* when some legal move would reach the repetition or the 100th halfmove; we do not
look ahead (it costs a push and pop per legal move), so in those cases our draw comes one ply later,
when such a move is actually played. PettingZoo's chess applies ``can_claim_draw()`` every ply.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import repeat
from operator import is_
from typing import NamedTuple

import chess
import numpy as np

from chess_env.core.encoding import (
    ACTION_SIZE,
    KEY_TO_ACTION,
    UCI_OF_KEY,
    Perspective,
    action_of_key,
    action_to_move,
    board_to_tensor,
    check_action_range,
    explain_illegal,
    move_key,
)
from chess_env.core.move_parsing import parse_move
from chess_env.errors import IllegalActionError

__all__ = ["DEFAULT_MAX_PLIES", "ChessGame", "EndingActions"]

DEFAULT_MAX_PLIES = 512


class EndingActions(NamedTuple):
    """``ChessGame.ending_actions``: the legal actions that mate and those that draw.

    Example:
        >>> game = ChessGame(chess.Board("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1"))
        >>> endings = game.ending_actions()
        >>> [[game.move_for_action(a).uci() for a in actions] for actions in endings]
        [['f1f8'], ['f1f7', 'f1c4']]
        >>> endings.mating
        [2972]
    """

    mating: list[int]
    drawing: list[int]


class ChessGame:
    """A game of standard chess that generates the legal moves once per ply.

    Args:
        board: the start position (taken over, not copied); the standard start when None.
        claim_draws: end the game on threefold repetition and the 50-move rule (default True).
        max_plies: plies after which the game is truncated (``None``: never). Counted from the
            position this game was created with.

    Example:
        >>> game = ChessGame()
        >>> len(game.legal_actions), game.outcome
        (20, None)
        >>> for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        ...     _ = game.play_uci(uci)
        >>> game.outcome.termination.name, game.outcome.result()
        ('CHECKMATE', '0-1')
    """

    def __init__(
        self,
        board: chess.Board | None = None,
        *,
        claim_draws: bool = True,
        max_plies: int | None = DEFAULT_MAX_PLIES,
    ) -> None:
        if max_plies is not None and max_plies < 1:
            raise ValueError(f"max_plies must be a positive integer or None, got {max_plies}")
        self.board = chess.Board() if board is None else board
        self.claim_draws = claim_draws
        self.max_plies = max_plies
        self.plies = 0
        # python-chess's own repetition key (what is_repetition compares): a tuple of ints.
        self._key: Hashable = self.board._transposition_key()
        self._repetitions: dict[Hashable, int] = {self._key: 1}
        self._insufficient = self.board.is_insufficient_material()
        self._undo: tuple | None = None
        self._generate(1)

    # -- state after each ply ---------------------------------------------------------------

    def _generate(self, repetitions: int) -> None:
        """The new position's legal moves and outcome (``repetitions``: its occurrences so far)."""
        moves = list(self.board.generate_legal_moves())
        self.legal_moves = moves
        # Built from the moves when first asked for: an opponent's position needs neither, a
        # served one no actions (they were a few microseconds of every ply).
        self._keys: list[int] | None = None
        self._actions: list[int] | None = None
        self._uci: list[str] | None = None
        self.outcome = self._outcome(bool(moves), repetitions)

    def _move_keys(self) -> list[int]:
        """``move_key`` of each legal move: the actions and the UCI strings are looked up by it."""
        if self._keys is None:
            board, moves = self.board, self.legal_moves
            # move_key() inlined: this loop runs for every legal move of many plies. Only a pawn
            # on its seventh rank can promote; without one no move has a promotion to add.
            seventh = chess.BB_RANK_7 if board.turn == chess.WHITE else chess.BB_RANK_2
            if board.pawns & board.occupied_co[board.turn] & seventh:
                self._keys = [
                    m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in moves
                ]
            else:
                self._keys = [m.from_square | m.to_square << 6 for m in moves]
        return self._keys

    def _action_list(self) -> list[int]:
        if self._actions is None:
            self._actions = list(map(KEY_TO_ACTION[self.board.turn].__getitem__, self._move_keys()))
        return self._actions

    def _uci_list(self) -> list[str]:
        if self._uci is None:
            self._uci = list(map(UCI_OF_KEY.__getitem__, self._move_keys()))
        return self._uci

    def _outcome(self, has_moves: bool, repetitions: int) -> chess.Outcome | None:
        board = self.board
        if has_moves and not self._insufficient and board.halfmove_clock < 100 and repetitions < 3:
            return None  # most plies: no rule can end the game, whatever ``claim_draws`` says
        if not has_moves:
            if board.is_check():
                return chess.Outcome(chess.Termination.CHECKMATE, not board.turn)
            if self._insufficient:
                return chess.Outcome(chess.Termination.INSUFFICIENT_MATERIAL, None)
            return chess.Outcome(chess.Termination.STALEMATE, None)
        if self._insufficient:
            return chess.Outcome(chess.Termination.INSUFFICIENT_MATERIAL, None)
        if board.halfmove_clock >= 150:
            return chess.Outcome(chess.Termination.SEVENTYFIVE_MOVES, None)
        if repetitions >= 5:
            return chess.Outcome(chess.Termination.FIVEFOLD_REPETITION, None)
        if self.claim_draws:
            if board.halfmove_clock >= 100:
                return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
            if repetitions >= 3:
                return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
        return None

    @property
    def terminated(self) -> bool:
        return self.outcome is not None

    @property
    def truncated(self) -> bool:
        return self.outcome is None and self.max_plies is not None and self.plies >= self.max_plies

    @property
    def is_over(self) -> bool:
        return self.terminated or self.truncated

    @property
    def ending(self) -> str | None:
        """Why the game ended ("checkmate", "threefold_repetition", "max_plies", ...), or None."""
        if self.outcome is not None:
            return self.outcome.termination.name.lower()
        return "max_plies" if self.truncated else None

    @property
    def legal_actions(self) -> list[int]:
        """The action index of each of ``legal_moves``, in the same order."""
        return self._action_list()

    @property
    def legal_uci(self) -> list[str]:
        """A fresh list of the legal moves in UCI, from a table (no string formatting per ply)."""
        return list(self._uci_list())

    def read_move(self, text: str) -> chess.Move:
        """The legal move ``text`` names, as ``move_parsing.parse_move`` reads it (UCI or SAN,
        even inside prose), or its ``MoveParseError``; an exact legal UCI is only looked up.
        """
        try:
            return self.legal_moves[self._uci_list().index(text)]
        except ValueError:  # not an exact legal UCI
            return parse_move(text, self.board, self.legal_moves)

    def action_mask(self, dtype: type = bool) -> np.ndarray:
        """A fresh (4672,) mask of the legal actions of the side to move: bool, or ``np.int8``
        as Gymnasium's ``sample(mask=...)`` wants it."""
        mask: np.ndarray = np.zeros(ACTION_SIZE, dtype=dtype)
        mask.put(self._action_list(), 1)  # put: no index array built from the list first
        return mask

    def observation(self, perspective: Perspective = "side_to_move") -> np.ndarray:
        return board_to_tensor(self.board, perspective)

    # -- playing ----------------------------------------------------------------------------

    def move_for_action(self, action: object) -> chess.Move:
        """The legal move for ``action``, or ``IllegalActionError`` saying why not."""
        index = check_action_range(action)
        try:  # one action per legal move: no two share an index
            return self.legal_moves[self._action_list().index(index)]
        except ValueError:
            raise IllegalActionError(
                explain_illegal(index, action_to_move(index, self.board), self.board)
            ) from None

    def is_legal(self, move: chess.Move) -> bool:
        moves = self.legal_moves
        # An opponent's reply is most often one of legal_moves itself: found by identity, without
        # the dataclass __eq__ that ``in`` calls on every move before it.
        if any(map(is_, moves, repeat(move))):
            return True
        if self._actions is None:
            return move in moves
        action = action_of_key(move_key(move), self.board.turn)
        actions = self._actions
        return action in actions and moves[actions.index(action)] == move

    def play(self, move: chess.Move) -> None:
        """Play a move that is in ``legal_moves`` (unchecked: callers decode or check first)."""
        self._generate(self._advance(move))

    def _advance(self, move: chess.Move) -> int:
        """``play`` but for the new position's move list and outcome (``undo`` takes it back);
        how often the new position has now occurred."""
        board = self.board
        previous = (self.legal_moves, self._keys, self._actions, self._uci,
                    self.outcome, self._insufficient, self._repetitions, self._key)  # fmt: skip
        board.push(move)
        if board.halfmove_clock == 0:
            # A capture or pawn move: no earlier position can recur, and material may have changed.
            self._repetitions = {}
            self._insufficient = board.is_insufficient_material()
        key = self._key = board._transposition_key()
        repetitions = self._repetitions[key] = self._repetitions.get(key, 0) + 1
        self._undo = previous
        self.plies += 1
        return repetitions

    def ending_actions(self) -> EndingActions:
        """The legal actions whose move ends the game on the spot by these rules: those that
        mate, and those that draw (stalemate, insufficient material, repetition, the move-count
        rules), which a side that is winning must not play. ``training.dagger`` trains on both.
        """
        mating: list[int] = []
        drawing: list[int] = []
        for action, move in zip(self.legal_actions, self.legal_moves, strict=True):
            repetitions = self._advance(move)  # no move list: whether one move exists will do
            has_moves = next(self.board.generate_legal_moves(), None) is not None
            outcome = self._outcome(has_moves, repetitions)
            if outcome is not None:
                (drawing if outcome.winner is None else mating).append(action)
            self.undo()
        return EndingActions(mating, drawing)

    def play_action(self, action: object) -> chess.Move:
        move = self.move_for_action(action)
        self.play(move)
        return move

    def play_uci(self, uci: str) -> chess.Move:
        """Play a move given in UCI; ``IllegalActionError`` names it when it is not legal here."""
        try:
            move = chess.Move.from_uci(uci)
        except chess.InvalidMoveError as error:
            raise IllegalActionError(f"move {uci!r} is not UCI: {error}") from None
        if self.outcome is not None or not self.is_legal(move):
            raise IllegalActionError(f"move {uci} is illegal in {self.board.fen()}")
        self.play(move)
        return move

    def undo(self) -> None:
        """Take back the last ply (one level), restoring every cached field exactly."""
        if self._undo is None:
            raise RuntimeError("nothing to undo: no ply was played since the last undo")
        key = self._key
        (self.legal_moves, self._keys, self._actions, self._uci,
         self.outcome, self._insufficient, repetitions, self._key) = self._undo  # fmt: skip
        if repetitions is self._repetitions:
            repetitions[key] -= 1
            if not repetitions[key]:
                del repetitions[key]
        self._repetitions = repetitions
        self._undo = None
        self.board.pop()
        self.plies -= 1
