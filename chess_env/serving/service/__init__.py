"""The multi-game chess service: many ``Game``s at once over REST, spectators over WebSocket.

``create_chess_service_app()`` is a standalone FastAPI app (it can also be mounted in another);
``router`` holds its routes, one router per resource, for an app that sets
``app.state.chess_service`` itself. Needs the ``server`` extra (FastAPI); ``import chess_env``
does not import this module.

- ``POST /games`` ``{white: AgentSpec, black: AgentSpec, fen?, public?}`` -> ``{game, tokens:
  {white, black, creator}}`` (201, ``CreatedGame``). An agent is ``{player, name, seed?,
  ...AgentConfig fields}``: ``player`` is "remote" (a client moves for it) or a player spec the
  server makes (``chess_env.core.players``: "random", "greedy", "stockfish:3", "stockfish?elo=1500",
  "alphabeta:2", registered names; 422 naming ``white.player`` for any other, 503 when
  Stockfish is not installed). ``tokens`` has a secret per side a client plays (null for the
  server's) and one for the creator; this reply is the only one that carries them.
- ``GET /games[?status=]``: summaries (with the recorded spectator count, and each side's
  player as ``white_player`` / ``black_player``) of the games the service's ``listing`` shows:
  "all", "public" (the default: games created with ``public: true``, by default those no
  client plays) or "off" (403, reason "listing_off"). Every game, listed or not, is readable
  by its id (a UUID4: 122 random bits); ``GET /games/{id}``: the ``Game``;
  ``GET /games/{id}/pgn``: PGN text; ``GET /games/{id}/session``: the game's
  ``GameSession`` (the state manager opens it with the game): ``spectators`` is updated as
  spectators connect and leave, ``last_activity`` by each move and connection, ``is_active``
  turns False when the game ends; the session leaves memory with its game (then 404).
- ``POST /games/{id}/moves`` ``{move, color?, thinking_time?}`` with the seat's token in the
  ``X-Seat-Token`` header: that seat's move in UCI or SAN. 422 for an illegal move (``reason``
  from ``chess_env.core.move_parsing``), 409 when the game is over ("game_over"), aborted
  ("aborted") or it is the other side's turn ("not_your_turn").
- ``POST /games/{id}/resign`` ``{color?}`` with the seat's token: that seat resigns.
- ``POST /games/{id}/abort`` with the creator's token: the game stops for good (its server agents
  stop, moves get 409 "aborted", spectators ``game_aborted``); its record stays unfinished and
  leaves memory as idle games do (archived). The creator's only power: it neither moves nor
  resigns.
- Who may act: without ``X-Seat-Token`` 401 ("seat_token_required"); with a token that is not
  the seat's (another seat's, the creator's for a seat, nobody's) 403 ("wrong_seat_token"), and
  for a side the server plays 403 ("server_seat"); ``color``, when given, must be the token's
  side. Errors say whose a token is, never the token. Tokens are ``secrets.token_urlsafe(32)``,
  compared with ``hmac.compare_digest``, kept only in the service's memory (``ChessService``),
  never on the ``Game``, so never in a listing, the session, a frame, the PGN, the archive or a
  log line; they travel in a header, never in a URL (which access logs print).
- ``WS /games/{id}/events`` (read-only: client messages are ignored): the game as it is, then
  ``move_made`` and ``game_ended`` (or ``game_aborted``) frames; the server closes the socket after
  the last (1000), or when the game leaves memory (1001). Every frame stays under 64 KB however
  long the game, so the game comes in pages: a ``snapshot`` frame ``{"game": the Game without
  move_history, "ply": N}``, then ``history`` frames ``{"game_id", "from_ply", "moves": [Move,
  ...]}`` of up to ``frames.HISTORY_PAGE`` moves each, N moves in all.
  ``Game.model_validate({**game, "move_history": moves})`` rebuilds the whole record; ``move_made``
  frames continue from ply N + 1. ``game_ended`` carries the PGN, or null for a PGN over
  ``frames.MAX_FRAME_PGN`` characters (several thousand plies: ``GET /games/{id}/pgn`` has it). The
  agents' texts are capped (``AgentSpec``) to keep the snapshot small.

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
spectators' streams ended (1001). The periodic cleanup and the agents of games resumed from the
last run start with ``ChessService.start()`` (the app's startup, or the mounting app's), or with
the first game, and stop in ``ChessService.close()``.

What one client may hold (live games it created, spectator streams, engines and searches of its
agents) is bounded, so that no client can spoil another's games; a served player thinks on the
server's ``chess_env.serving.thinking.ThinkingBudget``, its clock running only while it thinks.
Errors are ``{"detail", "code", "reason"?}`` as in ``envkit.server``.

The modules, one job each: ``models`` (requests and responses), ``errors``, ``tokens`` (the seat
tokens), ``seats`` (the server agents and their moves), ``frames`` (spectator frames and their
size), ``core``
(``ChessService``), ``dependencies`` and the routers ``games``, ``moves`` and ``events``, and
``app`` (``create_chess_service_app``).
"""

from __future__ import annotations

from chess_env.serving.service.app import create_chess_service_app, router
from chess_env.serving.service.bodies import (
    AgentSpec,
    CreatedGame,
    CreateGameRequest,
    GameSummary,
    Listing,
    MoveRequest,
    ResignRequest,
)
from chess_env.serving.service.core import ChessService
from chess_env.serving.service.dependencies import get_chess_service
from chess_env.serving.service.errors import (
    EngineUnavailableError,
    ListingOffError,
    MissingSeatTokenError,
    SeatForbiddenError,
)
from chess_env.serving.service.tokens import SEAT_TOKEN_HEADER, SeatTokens

__all__ = [
    "SEAT_TOKEN_HEADER",
    "AgentSpec",
    "ChessService",
    "CreateGameRequest",
    "CreatedGame",
    "EngineUnavailableError",
    "GameSummary",
    "Listing",
    "ListingOffError",
    "MissingSeatTokenError",
    "MoveRequest",
    "ResignRequest",
    "SeatForbiddenError",
    "SeatTokens",
    "create_chess_service_app",
    "get_chess_service",
    "router",
]
