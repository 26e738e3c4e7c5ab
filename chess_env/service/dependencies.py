"""What the routers share: the service each route works on, and the refusals they document.

- ``get_chess_service`` (the dependency of every route), ``Service`` (a parameter annotated with
  it)
- ``NOT_FOUND`` (404, unknown game) and ``NOT_NOW`` (409, game over or not a remote turn): the
  ``responses`` of the routes that may refuse so
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from starlette.requests import HTTPConnection

from chess_env.service.core import ChessService
from envkit.server.models import ErrorResponse

__all__ = ["NOT_FOUND", "NOT_NOW", "Service", "get_chess_service"]


def get_chess_service(connection: HTTPConnection) -> ChessService:
    """The app's service (the dependency of every route)."""
    service: ChessService = connection.app.state.chess_service
    return service


Service = Annotated[ChessService, Depends(get_chess_service)]

NOT_FOUND = {404: {"model": ErrorResponse, "description": "Unknown game (SESSION_ERROR)"}}
NOT_NOW = {409: {"model": ErrorResponse, "description": "Game over, or not a remote turn"}}
