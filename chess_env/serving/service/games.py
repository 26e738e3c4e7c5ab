"""The games router: create, list, read (record, session, PGN), resign and abort.

- ``POST /games`` (the game and its seat tokens), ``GET /games[?status=]`` (as the service's
  ``listing`` allows), ``GET /games/{id}``, ``GET /games/{id}/session``, ``GET /games/{id}/pgn``
  (anyone who knows the id), ``POST /games/{id}/resign`` (a seat's token),
  ``POST /games/{id}/abort`` (the creator's token)
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from chess_env.core.game import Game, GameSession, GameStatus
from chess_env.serving.service.bodies import (
    CreatedGame,
    CreateGameRequest,
    GameSummary,
    ResignRequest,
)
from chess_env.serving.service.dependencies import (
    NOT_FOUND,
    NOT_NOW,
    SEAT_REFUSALS,
    SeatToken,
    Service,
)
from envkit.server.bodies import ErrorResponse

__all__ = ["games_router"]

games_router = APIRouter(tags=["Games"])


@games_router.post(
    "/games",
    status_code=201,
    response_model=CreatedGame,
    responses={503: {"model": ErrorResponse, "description": "Stockfish is not installed"}},
    summary="Start a game between two agents; the only reply with its seat tokens",
)
async def create_game(request: CreateGameRequest, service: Service) -> CreatedGame:
    return await service.create(request)


@games_router.get(
    "/games",
    response_model=list[GameSummary],
    responses={403: {"model": ErrorResponse, "description": "Listing is off on this server"}},
    summary="The games in memory (all, the public ones, or none, as the server is set)",
)
def list_games(
    service: Service,
    status: Annotated[GameStatus | None, Query(description="Only games with this status")] = None,
) -> list[GameSummary]:
    return service.summaries(status)


@games_router.get("/games/{game_id}", response_model=Game, responses=NOT_FOUND, summary="One game")
def get_game(game_id: str, service: Service) -> Game:
    return service.get(game_id)


@games_router.get(
    "/games/{game_id}/session",
    response_model=GameSession,
    responses=NOT_FOUND,
    summary="The game's session: spectators, activity, live or not",
)
def game_session(game_id: str, service: Service) -> GameSession:
    return service.session(game_id)


@games_router.get(
    "/games/{game_id}/pgn",
    response_class=PlainTextResponse,
    responses={**NOT_FOUND, 200: {"content": {"text/plain": {}}, "description": "The PGN"}},
    summary="The game in PGN",
)
def game_pgn(game_id: str, service: Service) -> str:
    return service.get(game_id).to_pgn()


@games_router.post(
    "/games/{game_id}/resign",
    response_model=Game,
    responses={**SEAT_REFUSALS, **NOT_FOUND, **NOT_NOW},
    summary="The side whose seat token is sent resigns",
)
async def resign(game_id: str, request: ResignRequest, token: SeatToken, service: Service) -> Game:
    return await service.resign(game_id, token, request.color)


@games_router.post(
    "/games/{game_id}/abort",
    response_model=Game,
    responses={**SEAT_REFUSALS, **NOT_FOUND, **NOT_NOW},
    summary="The creator stops the game for good; the record stays unfinished",
)
async def abort(game_id: str, token: SeatToken, service: Service) -> Game:
    return await service.abort(game_id, token)
