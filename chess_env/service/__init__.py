"""The multi-game chess service: many ``Game``s at once over REST, spectators over WebSocket.

``create_chess_service_app()`` is a standalone FastAPI app (it can also be mounted in another);
``router`` holds its routes, one router per resource, for an app that sets
``app.state.chess_service`` itself. Needs the ``server`` extra (FastAPI); ``import chess_env``
does not import this module.

- ``POST /games`` ``{white: AgentSpec, black: AgentSpec, fen?}`` -> the ``Game`` (201). An agent
  is ``{player, name, seed?, ...AgentConfig fields}``: ``player`` is "remote" (a client moves for
  it) or a player spec the server makes (``chess_env.players``: "random", "greedy",
  "stockfish:3", "stockfish?elo=1500", "alphabeta:2", registered names; 422 naming
  ``white.player`` for any other, 503 when Stockfish is not installed).
- ``GET /games[?status=]``: summaries (with the recorded spectator count, and each side's
  player as ``white_player`` / ``black_player``); ``GET /games/{id}``: the ``Game``;
  ``GET /games/{id}/pgn``: PGN text; ``GET /games/{id}/session``: the game's
  ``GameSession`` (the state manager opens it with the game): ``spectators`` is updated as
  spectators connect and leave, ``last_activity`` by each move and connection, ``is_active``
  turns False when the game ends; the session leaves memory with its game (then 404).
- ``POST /games/{id}/moves`` ``{move, color?, thinking_time?}``: a remote agent's move in UCI or
  SAN. 422 for an illegal move (``reason`` from ``chess_env.move_parsing``), 409 when the game is
  over or the side to move is not remote (or not ``color``).
- ``POST /games/{id}/resign`` ``{color}``.
- ``WS /games/{id}/events``: the game as it is, then ``move_made`` and ``game_ended`` frames;
  the server closes the socket after ``game_ended`` (1000), or when the game leaves memory
  (1001). Every frame stays under 64 KB however long the game, so the game comes in pages: a
  ``snapshot`` frame ``{"game": the Game without move_history, "ply": N}``, then ``history``
  frames ``{"game_id", "from_ply", "moves": [Move, ...]}`` of up to ``frames.HISTORY_PAGE`` moves
  each, N moves in all. ``Game.model_validate({**game, "move_history": moves})`` rebuilds the
  whole record; ``move_made`` frames continue from ply N + 1. ``game_ended`` carries the PGN,
  or null for a PGN over ``frames.MAX_FRAME_PGN`` characters (several thousand plies: ``GET
  /games/{id}/pgn`` has it). The agents' texts are capped (``AgentSpec``) to keep the
  snapshot small.

Server agents move on their turn: right after the remote agent's move (the reply is in the
response), right after creation when they play white, and, when no agent is remote, in a
background task that plays the whole game. Their moves run in worker threads (Stockfish
blocks) and are limited to the agent's ``timeout_seconds``: a late move loses on time. An agent
that fails (raises, or answers an illegal move) resigns for its side, termination
"agent_error"; the error is logged, spectators get ``game_ended``, and the request that set the
agent thinking gets the ended game (201 or 200), not an error: the request itself was fine.
A finished game's server agents are closed at once (no Stockfish process outlives its game).

Games idle longer than the state manager's ``idle_timeout`` are dropped every
``cleanup_interval`` seconds (and before each new game): archived, their agents closed, their
spectators' streams ended (1001). The periodic cleanup starts with the first game, so it runs
whether the app serves on its own or is mounted in another (whose lifespan does not run this
one's), and stops in ``ChessService.close()``.
Errors are ``{"detail", "code", "reason"?}`` as in ``envkit.server``.

The modules, one job each: ``models`` (requests and responses), ``errors``, ``seats`` (the server
agents and their moves), ``frames`` (spectator frames and their size), ``core``
(``ChessService``), ``dependencies`` and the routers ``games``, ``moves`` and ``events``, and
``app`` (``create_chess_service_app``).
"""

from __future__ import annotations

from chess_env.service.app import create_chess_service_app, router
from chess_env.service.core import ChessService
from chess_env.service.dependencies import get_chess_service
from chess_env.service.errors import EngineUnavailableError, UnknownGameError
from chess_env.service.models import (
    AgentSpec,
    CreateGameRequest,
    GameSummary,
    MoveRequest,
    ResignRequest,
)

__all__ = [
    "AgentSpec",
    "ChessService",
    "CreateGameRequest",
    "EngineUnavailableError",
    "GameSummary",
    "MoveRequest",
    "ResignRequest",
    "UnknownGameError",
    "create_chess_service_app",
    "get_chess_service",
    "router",
]
