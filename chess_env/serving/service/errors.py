"""The service's own errors, and the state manager's errors translated into them.

- ``EngineUnavailableError`` (503); the store's ``UnknownGameError`` is answered as a 404
  ``unknown_game`` by ``translated()``, its ``GamesFullError`` as a 503 ``games_full`` with
  ``Retry-After``
- ``MissingSeatTokenError`` (401) and ``SeatForbiddenError`` (403): a seat's move, resignation or
  the creator's abort without a token, or with one that is not that seat's (code UNAUTHORIZED)
- ``ListingOffError`` (403): ``GET /games`` on a service whose listing is "off"
- ``translated()``: a ``with`` block in which ``chess_env.serving.game_store`` and
  ``chess_env.core.move_parsing`` errors become ``envkit.server`` errors (status, code and reason)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from chess_env.core.move_parsing import MoveParseError
from chess_env.errors import GameOverError
from chess_env.serving.game_store import GamesFullError, UnknownGameError
from envkit.server.errors import (
    CapacityError,
    EpisodeStateError,
    ErrorCode,
    InvalidInputError,
    ServiceError,
    UnknownSessionError,
)

__all__ = [
    "EngineUnavailableError",
    "ListingOffError",
    "MissingSeatTokenError",
    "SeatForbiddenError",
    "translated",
]


class EngineUnavailableError(ServiceError):
    """An engine agent was asked for, but no Stockfish binary is installed."""

    code = ErrorCode.EXECUTION_ERROR
    status = 503


class MissingSeatTokenError(ServiceError):
    """A request that acts for a seat (or the creator) came without its token."""

    code = ErrorCode.UNAUTHORIZED
    status = 401


class SeatForbiddenError(ServiceError):
    """The token is not the one of the seat the request acts for (another seat's, the
    creator's for a move, or nobody's), or the seat is played by the server."""

    code = ErrorCode.UNAUTHORIZED
    status = 403


class ListingOffError(ServiceError):
    """The operator turned the listing of games off (``listing="off"``)."""

    code = ErrorCode.UNAUTHORIZED
    status = 403


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The state manager's errors as the service's (status, code and reason)."""
    try:
        yield
    except MoveParseError as error:
        raise InvalidInputError(str(error), reason=error.reason) from None
    except GameOverError as error:
        raise EpisodeStateError(str(error), reason="game_over") from None
    except UnknownGameError as error:
        raise UnknownSessionError(str(error), reason="unknown_game") from None
    except GamesFullError as error:  # every place holds a live game
        raise CapacityError(
            str(error), reason="games_full", retry_after=error.retry_after
        ) from None
