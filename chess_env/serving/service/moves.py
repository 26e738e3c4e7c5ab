"""The moves router: ``POST /games/{id}/moves``, a remote agent's move (with its seat's token in
``X-Seat-Token``) and the server's reply."""

from __future__ import annotations

from fastapi import APIRouter

from chess_env.core.game import Game
from chess_env.serving.service.bodies import MoveRequest
from chess_env.serving.service.dependencies import (
    NOT_FOUND,
    NOT_NOW,
    SEAT_REFUSALS,
    SeatToken,
    Service,
)

__all__ = ["moves_router"]

moves_router = APIRouter(tags=["Moves"])


@moves_router.post(
    "/games/{game_id}/moves",
    response_model=Game,
    responses={**SEAT_REFUSALS, **NOT_FOUND, **NOT_NOW},
    summary="Play the move of the seat whose token is sent; server agents reply at once",
)
async def play_move(game_id: str, request: MoveRequest, token: SeatToken, service: Service) -> Game:
    return await service.move(game_id, request, token)
