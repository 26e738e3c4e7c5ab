"""Exceptions raised by the chess environments.

Each is a subclass of a built-in exception so callers can catch either the precise class or the
general one (python-chess does the same with ``IllegalMoveError(ValueError)``).
"""

from __future__ import annotations

from envkit.errors import PlayerSpecError as BasePlayerSpecError

__all__ = [
    "GameOverError",
    "IllegalActionError",
    "InvalidPositionError",
    "MoveRetriesExhaustedError",
    "OpponentError",
    "PlayerFailedError",
    "PlayerSpecError",
    "StockfishNotFoundError",
]


class IllegalActionError(ValueError):
    """An action index that is out of range or not a legal move in the current position."""


class InvalidPositionError(ValueError):
    """A FEN or opening that does not describe a playable position."""


class GameOverError(RuntimeError):
    """``step()`` was called after the episode ended; call ``reset()`` first."""


class OpponentError(RuntimeError):
    """An opponent returned something that is not a legal move (the env state is rolled back)."""


class PlayerFailedError(OpponentError):
    """A player could not move (its engine died, overran its time, or its person gave up).

    Unlike a wrong answer, this ends the game: the side that failed loses.
    """


class MoveRetriesExhaustedError(PlayerFailedError):
    """A text player (an LLM) gave no legal move within its retries: it forfeits, as in TextArena.

    Apart from ``PlayerFailedError`` so that a tournament can count forfeits by illegal moves.
    """


class PlayerSpecError(BasePlayerSpecError):
    """A chess player spec that names no player, or names one with a bad argument or option
    (an ``envkit.errors.PlayerSpecError``, so code handling any player spec catches it)."""


class StockfishNotFoundError(FileNotFoundError):
    """No Stockfish binary was found at the given path, on PATH, or at /usr/games/stockfish."""
