"""The service's own errors, and the state manager's errors translated into them.

- ``UnknownGameError`` (404), ``EngineUnavailableError`` (503)
- ``translated()``: a ``with`` block in which ``chess_env.game_store`` and
  ``chess_env.move_parsing`` errors become ``envkit.server`` errors (status, code and reason)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from chess_env.errors import GameOverError
from chess_env.game_store import GameNotFoundError
from chess_env.move_parsing import MoveParseError
from envkit.server.errors import (
    EpisodeStateError,
    ErrorCode,
    InvalidInputError,
    ServiceError,
    UnknownSessionError,
)

__all__ = ["EngineUnavailableError", "UnknownGameError", "translated"]


class UnknownGameError(UnknownSessionError):
    """No game with this id in memory: never created, or evicted or cleaned up since."""


class EngineUnavailableError(ServiceError):
    """An engine agent was asked for, but no Stockfish binary is installed."""

    code = ErrorCode.EXECUTION_ERROR
    status = 503


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The state manager's errors as the service's (status, code and reason)."""
    try:
        yield
    except MoveParseError as error:
        raise InvalidInputError(str(error), reason=error.reason) from None
    except GameOverError as error:
        raise EpisodeStateError(str(error), reason="game_over") from None
    except GameNotFoundError as error:
        raise UnknownGameError(str(error), reason="unknown_game") from None
