"""The chess viewer: web pages served by the chess server to watch, replay and play games.

``python -m chess_env serve --service`` serves it at ``/viewer/`` (``mount_viewer``), from the
server's own origin: static HTML, CSS and JavaScript in ``static/`` (no build step, nothing from
another host), drawing SVG boards with their own ``board.js`` and python-chess's pieces. The
pages talk only to documented routes: the service's (``/service/games``, its moves, resignations
and the spectators' WebSocket) and the viewer's JSON routes below. Needs the ``server`` extra;
``import chess_env`` does not import this package.

Pages:

- ``index.html``: the service's games (in play and finished) and the archived ones
- ``game.html?id=ID``: one game, live over ``WS /service/games/{id}/events``, or replayed
- ``replay.html``: a PGN file or an arena run's ``games.jsonl``, opened by the user
- ``play.html``: a person against any player the server makes, on a remote seat

Routes (``chess_env.serving.viewer.routes``; OpenAPI at ``/viewer/api/openapi.json``):

- ``GET /viewer/api/archive[?limit=]``: the archived games, newest first (at most 500)
- ``GET /viewer/api/archive/{id}``: one archived ``Game``; 404 "not_archived"
- ``GET /viewer/api/games/{id}/replay``: a service game ply by ply (in memory, else archived)
- ``POST /viewer/api/replay`` ``{text, format: "pgn" | "jsonl", start?, count?}``: a file's
  games ply by ply (up to 6 MB; 413 beyond; 422 naming the game, line and ply it cannot read)
- ``GET /viewer/pieces.svg``: the piece drawings

Every reply carries a Content-Security-Policy that keeps the pages on their own origin
(``chess_env.serving.viewer.security``). No token ever goes in a URL: a seat's token lives in the
play page's memory and travels in the ``X-Seat-Token`` header.

The modules, one job each: ``models`` (requests and replies), ``replay`` (games read by
python-chess, ply by ply), ``archive`` (the service's archive database, read by its indexes),
``routes``, ``security`` (headers and the replay's body limit) and ``app``
(``create_viewer_app``, ``mount_viewer``).
"""

from __future__ import annotations

from chess_env.serving.viewer.app import REPLAY_PATH, VIEWER_PATH, create_viewer_app, mount_viewer

__all__ = ["REPLAY_PATH", "VIEWER_PATH", "create_viewer_app", "mount_viewer"]
