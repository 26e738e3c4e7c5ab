"""The viewer's JSON routes (under ``/viewer/api``) and its piece set, one router per resource.

- ``archive_router``: ``GET /api/archive[?limit=&status=&player=]``, the archived games newest
  first (``ArchivedGame``, at most ``MAX_LISTED``); ``GET /api/archive/{id}``, one archived
  ``Game``; both read the archive's database by its indexes
- ``games_router``: ``GET /api/games/{id}/replay``, a service game (in memory, else archived)
  ply by ply (``ReplayGame``), for the game page to step through
- ``replay_router``: ``POST /api/replay`` ``{text, format, start?, count?}`` -> ``Replay``: a PGN
  file's games or a ``games.jsonl``'s, ply by ply, read by python-chess; 422 naming the game,
  its line and the ply for a file it cannot read
- ``pieces_router``: ``GET /pieces.svg``, python-chess's piece drawings (``chess.svg.PIECES``,
  by Colin M.L. Burnett) as one SVG of ``<g id="white-king">``... that the pages draw with
- ``Viewer`` (``ViewerState``, the dependency of every route): the service and the archive

Every route only reads; the routes that change games are the service's (``/service/games``).
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass
from typing import Annotated, Any

import chess.svg
from fastapi import APIRouter, Depends, Query, Response
from starlette.requests import HTTPConnection

from chess_env.core.game import Game, GameStatus
from chess_env.serving.service import ChessService
from chess_env.serving.viewer.archive import MAX_LISTED, GameArchive
from chess_env.serving.viewer.bodies import ArchivedGame, Replay, ReplayGame, ReplayRequest
from chess_env.serving.viewer.replay import ReplayInputError, replay_file, replay_record
from envkit.server.bodies import ErrorResponse
from envkit.server.errors import ErrorDetail, InvalidInputError, UnknownSessionError

__all__ = [
    "NotArchivedError",
    "Viewer",
    "ViewerState",
    "archive_router",
    "games_router",
    "get_viewer",
    "piece_set",
    "pieces_router",
    "replay_router",
]

MAX_PLAYER_FILTER = 200  # characters: a player spec is at most this long (service bodies)
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorResponse, "description": "No such game (SESSION_ERROR)"}
}


@dataclass(frozen=True)
class ViewerState:
    """What the routes read: the service's games in memory (None: no service) and its archive."""

    service: ChessService | None
    archive: GameArchive


def get_viewer(connection: HTTPConnection) -> ViewerState:
    """The viewer app's state (the dependency of every route)."""
    state: ViewerState = connection.app.state.viewer
    return state


Viewer = Annotated[ViewerState, Depends(get_viewer)]


class NotArchivedError(UnknownSessionError):
    """No game with this id in the archive (or in memory, for a replay), or no archive at all."""


# -- the archive -------------------------------------------------------------------------------

archive_router = APIRouter(prefix="/api", tags=["Archive"])


@archive_router.get(
    "/archive",
    response_model=list[ArchivedGame],
    summary="The games the service archived, newest first",
)
def list_archive(
    viewer: Viewer,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LISTED, description="The newest games listed at most")
    ] = MAX_LISTED,
    status: Annotated[
        GameStatus | None, Query(description="Only the games with this status")
    ] = None,
    player: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_PLAYER_FILTER,
            description='Only the games with this model or player spec on either side ("remote": '
            "a client's seat)",
        ),
    ] = None,
) -> list[ArchivedGame]:
    """The last ``limit`` games archived (finished, evicted, or left unfinished at shutdown),
    newest first, each once as archived last; empty when the server keeps no archive."""
    return viewer.archive.latest(limit, status=status, player=player)


@archive_router.get(
    "/archive/{game_id}",
    response_model=Game,
    responses=NOT_FOUND,
    summary="One archived game, as the archive keeps it",
)
def archived_game(game_id: str, viewer: Viewer) -> Game:
    """The archived ``Game`` with this id; 404 (reason "not_archived") for any other id."""
    game = viewer.archive.find(game_id)
    if game is None:
        raise NotArchivedError(f"no archived game has the id {game_id!r}", reason="not_archived")
    return game


# -- one service game, ply by ply --------------------------------------------------------------

games_router = APIRouter(prefix="/api", tags=["Replays"])


@games_router.get(
    "/games/{game_id}/replay",
    response_model=ReplayGame,
    responses=NOT_FOUND,
    summary="A service game ply by ply: the position after each move, its time",
)
def game_replay(game_id: str, viewer: Viewer) -> ReplayGame:
    """The game as it is now if the service holds it (with its status: the page follows
    ``WS /service/games/{id}/events`` from there), else as archived (no status: it is over, or
    was left unfinished)."""
    game, live = None, False
    if viewer.service is not None:
        with contextlib.suppress(UnknownSessionError):  # the service holds no such game
            game, live = viewer.service.get(game_id), True
    if game is None:
        game = viewer.archive.find(game_id)
    if game is None:
        raise NotArchivedError(
            f"no game {game_id!r} in memory or in the archive", reason="unknown_game"
        )
    try:
        return replay_record(game, status=live)
    except ReplayInputError as error:  # an archive edited by hand
        raise InvalidInputError(str(error), reason=error.reason) from None


# -- files -------------------------------------------------------------------------------------

replay_router = APIRouter(prefix="/api", tags=["Replays"])


@replay_router.post(
    "/replay",
    response_model=Replay,
    responses={
        413: {"model": ErrorResponse, "description": "The body is over the limit (6 MB)"},
        422: {
            "model": ErrorResponse,
            "description": "A game that cannot be read, or a file over the limits, named",
        },
    },
    summary="A PGN file's or a games.jsonl's games, ply by ply",
)
def replay(request: ReplayRequest) -> Replay:
    """The games ``start`` to ``start + count`` of the file: per game its headers and start
    position, per ply (of the main line: PGN variations are skipped) the position after it, SAN
    and UCI, the time taken ([%emt] or the record), the comment without its commands, the
    evaluation from White's side ([%eval]) and the answers refused before it. JSON lines may be
    arena games (``ArenaGame``) or the service archive's (``Game``). The games end early, after
    the one that brings the reply to 5,000 plies (``MAX_REPLAY_WINDOW_PLIES``): the next
    window starts at ``start`` plus the games returned. A game that cannot be read is a 422
    naming it, its line and the ply (reasons: not_pgn, invalid_pgn, illegal_move, not_json,
    unknown_record, invalid_record), as are a game of more than 1,000 plies
    (``MAX_REPLAY_PLIES``; too_many_plies) and a file of more than 100,000 games
    (``MAX_REPLAY_FILE_GAMES``; too_many_games)."""
    try:
        return replay_file(request.text, request.format, request.start, request.count)
    except ReplayInputError as error:
        detail = ErrorDetail(loc=("body", "text"), msg=str(error), type=error.reason)
        raise InvalidInputError(str(error), reason=error.reason, errors=[detail]) from None


# -- the pieces --------------------------------------------------------------------------------

pieces_router = APIRouter(tags=["Pieces"])
_STYLE = re.compile(r'style="([^"]*)"')


@pieces_router.get(
    "/pieces.svg",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}, "description": "The piece set"}},
    summary="The piece drawings the boards use (python-chess's, by Colin M.L. Burnett)",
)
def pieces() -> Response:
    """One SVG whose ``<defs>`` hold a ``<g id="white-king">`` ... ``<g id="black-pawn">``
    per piece, 45 units square: python-chess's ``chess.svg.PIECES`` (triple licensed GFDL, BSD
    and GPL), so the package ships no drawing of its own."""
    headers = {"Cache-Control": "public, max-age=86400"}
    return Response(piece_set(), media_type="image/svg+xml", headers=headers)


@functools.lru_cache(maxsize=1)
def piece_set() -> str:
    """``chess.svg.PIECES`` as one SVG, inline styles turned into attributes (the viewer's
    Content-Security-Policy allows no inline style).

    Example:
        >>> sprite = piece_set()
        >>> sprite.count("<g id="), 'id="white-knight"' in sprite, "style=" in sprite
        (12, True, False)
    """
    groups = "".join(_STYLE.sub(_attributes, drawing) for drawing in chess.svg.PIECES.values())
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 45 45"><defs>{groups}</defs></svg>'
    )


def _attributes(style: re.Match[str]) -> str:
    """``style="fill:#fff; stroke:none;"`` as ``fill="#fff" stroke="none"``."""
    pairs = (item.split(":", 1) for item in style.group(1).split(";") if ":" in item)
    return " ".join(f'{name.strip()}="{value.strip()}"' for name, value in pairs)
