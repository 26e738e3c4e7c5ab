"""The chess service as an app: its routers as one ``router``, ``create_chess_service_app`` and
``close_service`` (its shutdown, for an app that mounts it).

Errors are ``{"detail", "code", "reason"?}`` as in ``envkit.server``. An archive that fails when
a new game needs room is 503 CAPACITY_REACHED, reason "archive_unavailable", with Retry-After;
so is a new game when every place holds a live game (reason "games_full").
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from chess_env.serving.game_store import (
    DEFAULT_MAX_PLIES,
    ArchiveError,
    StateManager,
)
from chess_env.serving.service.bodies import Listing
from chess_env.serving.service.core import ChessService
from chess_env.serving.service.events import events_router
from chess_env.serving.service.games import games_router
from chess_env.serving.service.moves import moves_router
from chess_env.serving.thinking import ThinkingBudget
from envkit.server.access import ClientAddress
from envkit.server.bodies import ErrorResponse
from envkit.server.errors import ErrorCode, ServiceError, error_headers, error_payload
from envkit.server.headers import ReplyHeaders
from envkit.server.limits import BodySizeLimit, Limits
from envkit.server.origins import JsonBodies, OriginCheck
from envkit.server.replies import CodedErrors
from envkit.server.schema_docs import publish_openapi_without_examples

__all__ = ["ARCHIVE_RETRY_AFTER", "close_service", "create_chess_service_app", "router"]

logger = logging.getLogger("chess_env.serving.service")

ARCHIVE_RETRY_AFTER = 10  # seconds a client waits after a 503 for the archive

router = APIRouter()
for _module_router in (games_router, moves_router, events_router):
    router.include_router(_module_router)


def create_chess_service_app(
    state_manager: StateManager | None = None,
    *,
    archive_dir: str | os.PathLike[str] | None = None,
    max_games: int = 100,
    cleanup_interval: float = 60.0,
    listing: Listing = "public",
    allow_origins: Sequence[str] = (),
    budget: ThinkingBudget | None = None,
    max_live_games_per_client: int = 16,
    max_spectators_per_game: int = 200,
    max_spectators_per_client: int = 16,
) -> FastAPI:
    """The chess service as an app; ``close_service`` (which closes ``state_manager``,
    archiving its games, and logs by id those it could not) runs when the app shuts down.

    Args:
        state_manager: where the games live; default a new ``StateManager(max_games,
            archive_dir=archive_dir, max_plies=DEFAULT_MAX_PLIES)`` (``archive_dir`` and
            ``max_games`` are for that one only).
        archive_dir: where the games are kept as they change and archived (``games.sqlite3``,
            with ``games.jsonl`` and ``games.pgn`` as exports; ``game_store.StateManager``).
        max_games: games held at once; to make room the least recently updated finished (or
            aborted) game goes, never a live one (503 "games_full" when all are live).
        cleanup_interval: seconds between two sweeps for idle games (default 60); the idle
            time itself is the state manager's ``idle_timeout``.
        listing: which games ``GET /games`` shows: "all", "public" (default: those created
            public) or "off" (403).
        allow_origins: origins besides the app's own whose pages may create games and move
            (``envkit.server.origins``): the app refuses other origins' state-changing requests
            and WebSocket handshakes (403), bodies not declared JSON (415), and gives every
            error a code, on its own as mounted in ``envkit.server`` apps, which check the same.
        budget: makes the server agents within the server's engine and search limits
            (``chess_env.serving.thinking``); default one of its own, with default limits.
        max_live_games_per_client: unfinished games one client may have created
            (``ChessService``; a client is the connection's peer, or the address a trusted
            proxy names when the app is mounted in an ``envkit.server`` app).
        max_spectators_per_game: spectator streams open on one game.
        max_spectators_per_client: spectator streams one client may hold open.
    """
    if state_manager is not None and archive_dir is not None:
        raise ValueError("archive_dir is for the default StateManager; set it on yours instead")
    if state_manager is None:
        state_manager = StateManager(
            max_games=max_games, archive_dir=archive_dir, max_plies=DEFAULT_MAX_PLIES
        )
    service = ChessService(
        state_manager,
        cleanup_interval=cleanup_interval,
        listing=listing,
        budget=budget,
        max_live_games_per_client=max_live_games_per_client,
        max_spectators_per_game=max_spectators_per_game,
        max_spectators_per_client=max_spectators_per_client,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        yield
        await close_service(service)

    app = FastAPI(
        title="Chess service",
        description="Many chess games between engines, simple agents and remote clients.",
        version="1.0.0",
        lifespan=lifespan,
        responses={422: {"model": ErrorResponse, "description": "Malformed or illegal input"}},
    )
    app.state.chess_service = service
    publish_openapi_without_examples(app)
    # As envkit.server's apps have: envkit.server.make_server reads the WebSocket frame limit.
    app.state.limits = Limits()
    app.add_middleware(CodedErrors)
    app.add_middleware(JsonBodies)
    app.add_middleware(BodySizeLimit, max_bytes=app.state.limits.max_body_bytes)
    app.add_middleware(OriginCheck, allow_origins=allow_origins)
    app.add_middleware(ClientAddress)  # the per-client limits count by it, mounted or not
    app.add_middleware(ReplyHeaders)  # nosniff and a policy on every reply, standalone too
    for handled in (ServiceError, ValidationError, RequestValidationError):
        app.add_exception_handler(handled, _error_response)
    app.add_exception_handler(ArchiveError, _archive_unavailable)
    app.include_router(router)
    return app


async def close_service(service: ChessService) -> None:
    """Close ``service`` at shutdown; the games the archive could not take are logged by id, not
    raised (a raise would fail the server's shutdown, and the log is where an operator looks)."""
    try:
        await service.close()
    except ArchiveError as error:
        logger.error("%s", error)


async def _error_response(request: Request, error: Exception) -> JSONResponse:
    """Refused requests as ``{"detail", "code", "reason"?}``, as ``envkit.server`` sends them."""
    status, body = error_payload(error)
    body = {"detail": body.pop("message"), **body}
    return JSONResponse(body, status_code=status, headers=error_headers(error))


async def _archive_unavailable(request: Request, error: Exception) -> JSONResponse:
    """503 when a new game needs room and the archive cannot take the game that would leave.
    Neither the path nor other games' ids are told: they are the operator's."""
    reason = error.reason if isinstance(error, ArchiveError) else str(error)
    body = {
        "detail": f"the game archive cannot be written ({reason}): no game could leave memory "
        "to make room for a new one; the games are kept and the archive is retried",
        "code": ErrorCode.CAPACITY_REACHED.value,
        "reason": "archive_unavailable",
    }
    headers = {"Retry-After": str(ARCHIVE_RETRY_AFTER)}
    return JSONResponse(body, status_code=503, headers=headers)
