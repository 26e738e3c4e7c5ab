"""The moves router: ``POST /games/{id}/moves``, a remote agent's move and the server's reply."""

from __future__ import annotations

from fastapi import APIRouter

from chess_env.game import Game
from chess_env.service.dependencies import NOT_FOUND, NOT_NOW, Service
from chess_env.service.models import MoveRequest

__all__ = ["moves_router"]

moves_router = APIRouter(tags=["Moves"])


@moves_router.post(
    "/games/{game_id}/moves",
    response_model=Game,
    responses={**NOT_FOUND, **NOT_NOW},
    summary="Play a remote agent's move; server agents reply before the response",
)
async def play_move(game_id: str, request: MoveRequest, service: Service) -> Game:
    return await service.move(game_id, request)
