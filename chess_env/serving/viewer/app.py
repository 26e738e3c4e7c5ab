"""The viewer as an app: ``create_viewer_app`` (its pages, piece set and JSON routes) and
``mount_viewer`` (it, under ``/viewer`` of the chess server).

The static pages are ``chess_env/serving/viewer/static/`` (``index.html`` at ``/viewer/``); the JSON
routes are ``chess_env.serving.viewer.routes``'s, under ``/viewer/api`` (their OpenAPI document at
``/viewer/api/openapi.json``; no ``/docs`` page, which would load its scripts from a CDN that the
viewer's Content-Security-Policy refuses). Errors are ``{"detail", "code", "reason"?}`` as in
``envkit.server``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.staticfiles import StaticFiles

from chess_env.serving.service import ChessService
from chess_env.serving.viewer.archive import GameArchive
from chess_env.serving.viewer.bodies import MAX_REPLAY_BODY
from chess_env.serving.viewer.routes import (
    ViewerState,
    archive_router,
    games_router,
    pieces_router,
    replay_router,
)
from chess_env.serving.viewer.security import RouteBodyLimits, ViewerHeaders, allow_larger_body
from envkit.server.errors import ServiceError, error_payload
from envkit.server.origins import JsonBodies, OriginCheck
from envkit.server.replies import CodedErrors

__all__ = ["REPLAY_PATH", "STATIC_DIR", "VIEWER_PATH", "create_viewer_app", "mount_viewer"]

VIEWER_PATH = "/viewer"
REPLAY_PATH = "/api/replay"  # the one route that takes a large body: a file to replay
STATIC_DIR = Path(__file__).parent / "static"


def create_viewer_app(
    service: ChessService | None = None, *, allow_origins: Sequence[str] = ()
) -> FastAPI:
    """The viewer: its static pages, ``/pieces.svg`` and its JSON routes.

    Args:
        service: the chess service whose games the pages show (its archive is the state
            manager's ``archive_dir``); None: only the replay of files works.
        allow_origins: origins besides the app's own whose pages may post to it (as the
            service's; ``envkit.server.origins``).
    """
    app = FastAPI(
        title="Chess viewer",
        description="Live games, replays of archived games, PGN files and arena runs.",
        version="1.0.0",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    archive = GameArchive(None if service is None else service.games.archive_dir)
    app.state.viewer = ViewerState(service=service, archive=archive)
    app.add_middleware(CodedErrors)
    app.add_middleware(JsonBodies)
    app.add_middleware(RouteBodyLimits, larger={REPLAY_PATH: MAX_REPLAY_BODY})
    app.add_middleware(OriginCheck, allow_origins=allow_origins)
    app.add_middleware(ViewerHeaders)
    for handled in (ServiceError, ValidationError, RequestValidationError):
        app.add_exception_handler(handled, _error_response)
    for router in (archive_router, games_router, replay_router, pieces_router):
        app.include_router(router)
    app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="static")
    return app


def mount_viewer(
    app: FastAPI,
    service: ChessService | None = None,
    *,
    path: str = VIEWER_PATH,
    allow_origins: Sequence[str] = (),
) -> FastAPI:
    """Mount the viewer at ``path`` of ``app`` (before it serves) and return the viewer's app.

    ``app``'s body limit (``BodySizeLimit``, 64 KB in ``envkit.server``) stays as it is for
    every route but the replay of a file, which may take ``MAX_REPLAY_BODY`` (6 MB).
    """
    viewer = create_viewer_app(service, allow_origins=allow_origins)
    app.mount(path, viewer)
    allow_larger_body(app, path + REPLAY_PATH, MAX_REPLAY_BODY)
    return viewer


async def _error_response(request: Request, error: Exception) -> JSONResponse:
    """Refused requests as ``{"detail", "code", "reason"?}``, as ``envkit.server`` sends them."""
    status, body = error_payload(error)
    return JSONResponse({"detail": body.pop("message"), **body}, status_code=status)
