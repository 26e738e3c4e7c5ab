"""A player name that would forge a second game in an unescaped PGN, and a reader of every game.

``FORGED`` ends its tag, adds a Result tag and a whole game; a PGN writer that sanitises tag
values keeps it inside one tag, so ``read_games`` finds exactly one game.
"""

from __future__ import annotations

import io

import chess.pgn

__all__ = ["FORGED", "read_games"]

FORGED = 'Eve"]\n[Result "1-0"]\n\n1. e4 1-0\n\n[Event "forged'


def read_games(text: str) -> list[chess.pgn.Game]:
    """Every game ``chess.pgn.read_game`` finds in ``text``."""
    stream, games = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    return games
