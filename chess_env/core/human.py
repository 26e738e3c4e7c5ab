"""``human``: a person at this terminal plays by typing moves (UCI or SAN).

The board is printed from the person's side before each move; a move the text env would refuse
is refused with the text env's reason (``chess_env.core.move_parsing``), and the person types again.
``resign``, or the end of the input (Ctrl-D), gives up the game: ``PlayerFailedError``, a loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess

from chess_env.core.move_parsing import MoveParseError, parse_move
from chess_env.core.opponents import Opponent
from chess_env.core.render import render_ansi
from chess_env.errors import PlayerFailedError

__all__ = ["HumanPlayer"]


class HumanPlayer(Opponent):
    """Reads a person's moves from ``read`` (default ``input``) and talks through ``write``.

    Example:
        >>> answers = iter(["Ke2", "e4"])
        >>> player = HumanPlayer(read=lambda prompt: next(answers), write=lambda text: None)
        >>> player(chess.Board()).uci()  # Ke2 is refused with its reason, then e4
        'e2e4'
    """

    name = "human"

    def __init__(
        self,
        read: Callable[[str], str] | None = None,
        write: Callable[[str], None] = print,
    ) -> None:
        super().__init__()
        self.read = read or (lambda prompt: input(prompt))  # looked up when asked: testable
        self.write = write

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        side = chess.COLOR_NAMES[board.turn]
        self.write(render_ansi(board, board.turn))
        while True:
            try:
                text = self.read(f"{side} to move (UCI or SAN, 'resign' to give up): ")
            except EOFError:
                raise PlayerFailedError(f"{side} stopped typing: the input ended") from None
            if text.strip().lower() == "resign":
                raise PlayerFailedError(f"{side} resigned")
            try:
                return parse_move(text, board, legal_moves)
            except MoveParseError as error:
                self.write(f"not played ({error.reason}): {error}")
