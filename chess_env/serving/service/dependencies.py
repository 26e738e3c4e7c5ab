"""What the routers share: the service each route works on, the seat token, and the refusals
they document.

- ``get_chess_service`` (the dependency of every route), ``Service`` (a parameter annotated with
  it)
- ``seat_token`` (``SeatToken``): the ``X-Seat-Token`` header of a route that acts for a seat or
  the creator; ``MissingSeatTokenError`` (401) without it
- ``NOT_FOUND`` (404, unknown game), ``NOT_NOW`` (409, game over, aborted or not that side's
  turn) and ``SEAT_REFUSALS`` (401, 403): the ``responses`` of the routes that may refuse so
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header
from starlette.requests import HTTPConnection

from chess_env.serving.service.core import ChessService
from chess_env.serving.service.errors import MissingSeatTokenError
from chess_env.serving.service.tokens import SEAT_TOKEN_HEADER
from envkit.server.bodies import ErrorResponse

__all__ = [
    "NOT_FOUND",
    "NOT_NOW",
    "SEAT_REFUSALS",
    "SeatToken",
    "Service",
    "get_chess_service",
    "seat_token",
]


def get_chess_service(connection: HTTPConnection) -> ChessService:
    """The app's service (the dependency of every route)."""
    service: ChessService = connection.app.state.chess_service
    return service


def seat_token(
    token: Annotated[
        str | None,
        Header(
            alias=SEAT_TOKEN_HEADER,
            max_length=200,
            description="The seat's token (the creator's to abort), as POST /games returned it",
        ),
    ] = None,
) -> str:
    """The request's seat token; 401 without one (whether it is the right one is the
    service's to say: 403)."""
    if not token:
        raise MissingSeatTokenError(
            f"this request acts for a seat: send its token in the {SEAT_TOKEN_HEADER} header",
            reason="seat_token_required",
        )
    return token


Service = Annotated[ChessService, Depends(get_chess_service)]
SeatToken = Annotated[str, Depends(seat_token)]

# FastAPI's type for a route's ``responses``: OpenAPI response objects by status code.
_Responses = dict[int | str, dict[str, Any]]

NOT_FOUND: _Responses = {
    404: {"model": ErrorResponse, "description": "Unknown game (SESSION_ERROR)"}
}
NOT_NOW: _Responses = {
    409: {"model": ErrorResponse, "description": "Game over or aborted, or not your turn"}
}
SEAT_REFUSALS: _Responses = {
    401: {"model": ErrorResponse, "description": f"No {SEAT_TOKEN_HEADER} (UNAUTHORIZED)"},
    403: {
        "model": ErrorResponse,
        "description": "Not that seat's token, or a side the server plays (UNAUTHORIZED)",
    },
}
