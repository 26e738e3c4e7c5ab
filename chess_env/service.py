"""The multi-game chess service: many ``Game``s at once over REST, spectators over WebSocket.

``create_chess_service_app()`` is a standalone FastAPI app (it can also be mounted in another);
``router`` holds its routes, one router per resource, for an app that sets
``app.state.chess_service`` itself. Needs the ``server`` extra (FastAPI); ``import chess_env``
does not import this module.

- ``POST /games`` ``{white: AgentSpec, black: AgentSpec, fen?}`` -> the ``Game`` (201). An agent
  is ``{kind, name, depth?, seed?, ...AgentConfig fields}``: "engine" (Stockfish at ``depth``;
  503 when not installed), "random", "greedy", or "remote" (a client moves for it).
- ``GET /games[?status=]``: summaries (with the recorded spectator count); ``GET /games/{id}``:
  the ``Game``; ``GET /games/{id}/pgn``: PGN text; ``GET /games/{id}/session``: the game's
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
  frames ``{"game_id", "from_ply", "moves": [Move, ...]}`` of up to ``HISTORY_PAGE`` moves
  each, N moves in all. ``Game.model_validate({**game, "move_history": moves})`` rebuilds the
  whole record; ``move_made`` frames continue from ply N + 1. ``game_ended`` carries the PGN,
  or null for a PGN over ``MAX_FRAME_PGN`` characters (several thousand plies: ``GET
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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

import chess
from fastapi import APIRouter, Depends, FastAPI, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocketDisconnect

from chess_env.errors import GameOverError, InvalidPositionError, StockfishNotFoundError
from chess_env.game import (
    AgentConfig,
    Color,
    Game,
    GameResult,
    GameSession,
    GameStatus,
    Termination,
)
from chess_env.game_store import GameNotFoundError, SessionNotFoundError, StateManager
from chess_env.move_parsing import MoveParseError
from chess_env.opponents import GreedyOpponent, Opponent, RandomOpponent, StockfishOpponent
from envkit.server.errors import (
    EpisodeStateError,
    ErrorCode,
    InvalidInputError,
    ServiceError,
    UnknownSessionError,
    error_payload,
)
from envkit.server.limits import BodySizeLimit, Limits
from envkit.server.models import ErrorResponse

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

logger = logging.getLogger(__name__)

AgentKind = Literal["engine", "random", "greedy", "remote"]
_UCI_MOVE = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?$")
_SAN_MOVE = re.compile(
    r"^(?:[NBRQK]?[a-h]?[1-8]?x?[a-h][1-8](?:=?[QRBN])?|O-O(?:-O)?|0-0(?:-0)?)[+#]?$"
)
_CONFIG_FIELDS = (
    "personality",
    "model_name",
    "system_prompt",
    "temperature",
    "max_tokens",
    "timeout_seconds",
)
QUEUE_SIZE = 1024  # events a spectator may lag behind before it is dropped
HISTORY_PAGE = 100  # moves per history frame: a Move is at most about 330 bytes of JSON
MAX_FRAME_PGN = 32 * 1024  # characters of PGN a game_ended frame carries at most
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY_VIOLATION = 1008


class UnknownGameError(UnknownSessionError):
    """No game with this id in memory: never created, or evicted or cleaned up since."""


class EngineUnavailableError(ServiceError):
    """An engine agent was asked for, but no Stockfish binary is installed."""

    code = ErrorCode.EXECUTION_ERROR
    status = 503


# -- request and response models ----------------------------------------------------------------


class AgentSpec(BaseModel):
    """Who plays one side: the kind of agent, and the ``AgentConfig`` fields to record for it."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"kind": "engine", "name": "Stockfish", "depth": 3}]},
    )

    kind: AgentKind = Field(description="engine (Stockfish), random, greedy, or remote (a client)")
    name: str = Field(min_length=1, max_length=50, description="Display name")
    depth: int | None = Field(
        None, ge=1, le=30, description="Stockfish's search depth (engine only; default 1)"
    )
    seed: int | None = Field(
        None, ge=0, lt=2**64, description="Seed of a random or greedy agent's choices"
    )
    # Capped so that a game's snapshot frame stays well under 64 KB (4 bytes a character).
    personality: str | None = Field(
        None, max_length=100, description="Playing style (default: the kind)"
    )
    model_name: str | None = Field(
        None, min_length=1, max_length=200, description="Model id (default: the kind)"
    )
    system_prompt: str | None = Field(None, max_length=4000, description="The agent's instructions")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int | None = Field(None, gt=0, description="Most tokens in one reply")
    timeout_seconds: float | None = Field(
        None, gt=0, description="Longest a server agent may think (default 30 s)"
    )

    @model_validator(mode="after")
    def _options_fit_kind(self) -> AgentSpec:
        if self.depth is not None and self.kind != "engine":
            raise ValueError(f"depth is for engine agents, not {self.kind}")
        if self.seed is not None and self.kind not in ("random", "greedy"):
            raise ValueError(f"seed is for random and greedy agents, not {self.kind}")
        return self

    def config(self, color: Color) -> AgentConfig:
        """The ``AgentConfig`` the game records for this agent playing ``color``."""
        default_model = f"stockfish-depth-{self.depth or 1}" if self.kind == "engine" else self.kind
        given = self.model_dump(include=set(_CONFIG_FIELDS), exclude_none=True)
        defaults = {"personality": self.kind, "model_name": default_model, "system_prompt": ""}
        return AgentConfig(agent_id=color, name=self.name, **{**defaults, **given})


class CreateGameRequest(BaseModel):
    """The two agents, and the start position (default: the standard one)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "white": {"kind": "remote", "name": "Me"},
                    "black": {"kind": "random", "name": "R"},
                }
            ]
        },
    )

    white: AgentSpec = Field(description="The agent playing white")
    black: AgentSpec = Field(description="The agent playing black")
    fen: str | None = Field(None, max_length=100, description="Start position in FEN")


class MoveRequest(BaseModel):
    """A remote agent's move."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"move": "e2e4"}, {"move": "Nf3"}]}
    )

    move: str = Field(max_length=10, description="UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5)")
    color: Color | None = Field(
        None, description="The side the client plays; 409 when it is not that side's turn"
    )
    thinking_time: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="Seconds the agent took (recorded as is)"
    )

    @field_validator("move")
    @classmethod
    def _uci_or_san(cls, move: str) -> str:
        if not (_UCI_MOVE.match(move) or _SAN_MOVE.match(move)):
            raise ValueError("not a move in UCI (e2e4, e7e8q) or SAN (Nf3, O-O, exd5, e8=Q)")
        return move


class ResignRequest(BaseModel):
    """The side giving up."""

    model_config = ConfigDict(extra="forbid")

    color: Color = Field(description="The side that resigns; the other wins")


class GameSummary(BaseModel):
    """One game in a listing (``GET /games/{id}`` has the whole record)."""

    game_id: str = Field(description="The game's UUID4")
    white: str = Field(description="White's name")
    black: str = Field(description="Black's name")
    white_kind: AgentKind = Field(description="Who plays white")
    black_kind: AgentKind = Field(description="Who plays black")
    status: GameStatus = Field(description="Playing, or how the game ended")
    result: GameResult | None = Field(description="Set once the game is over")
    termination: Termination | None = Field(description="Why it ended, once over")
    current_turn: Color = Field(description="The side to move")
    ply: int = Field(description="Moves played")
    fen: str = Field(description="The position now")
    last_updated: datetime = Field(description="The latest change")
    spectators: int = Field(description="Spectators connected now (as the game's session says)")


# -- the service --------------------------------------------------------------------------------


@dataclass
class _Seat:
    """One side of a game: its kind and, for a server agent, the opponent that moves for it."""

    kind: AgentKind
    opponent: Opponent | None = None
    timeout: float = 30.0

    def close(self) -> None:
        if self.opponent is not None:
            try:
                self.opponent.close()
            except Exception:  # one engine failing to quit must not keep the others running
                logger.exception("closing the %s agent failed", self.kind)


_REMOTE_SEATS = {"white": _Seat("remote"), "black": _Seat("remote")}


def _seat(spec: AgentSpec, config: AgentConfig) -> _Seat:
    """The seat for ``spec``; a missing Stockfish is ``EngineUnavailableError``."""
    opponent: Opponent | None
    if spec.kind == "engine":
        try:
            opponent = StockfishOpponent(depth=spec.depth or 1)
        except StockfishNotFoundError as error:
            raise EngineUnavailableError(str(error), reason="engine_unavailable") from None
    elif spec.kind == "random":
        opponent = RandomOpponent()
    elif spec.kind == "greedy":
        opponent = GreedyOpponent()
    else:
        opponent = None
    if opponent is not None:
        opponent.reset(spec.seed)
    return _Seat(spec.kind, opponent, config.timeout_seconds)


class ChessService:
    """The games of one ``StateManager``, their server agents and their spectators.

    All methods run on the app's event loop; the per-game ``asyncio.Lock`` makes the turn check
    and the move one step, so two requests never play for the same turn.

    Args:
        state_manager: where the games and their sessions live.
        cleanup_interval: seconds between two sweeps for idle games (default 60).
    """

    def __init__(self, state_manager: StateManager, *, cleanup_interval: float = 60.0) -> None:
        if not cleanup_interval > 0:
            raise ValueError(f"cleanup_interval must be positive, got {cleanup_interval}")
        self.games = state_manager
        self.cleanup_interval = cleanup_interval
        self._seats: dict[str, dict[Color, _Seat]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._spectators: dict[str, set[asyncio.Queue[dict[str, Any] | None]]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- games ----------------------------------------------------------------------------------

    async def create(self, request: CreateGameRequest) -> Game:
        """A new game; server agents play until a remote one is to move (all of it, if none is:
        in the background)."""
        configs = {"white": request.white.config("white"), "black": request.black.config("black")}
        seats: dict[Color, _Seat] = {}
        try:
            seats["white"] = _seat(request.white, configs["white"])
            seats["black"] = _seat(request.black, configs["black"])
            game = await run_in_threadpool(
                self.games.create_game, configs["white"], configs["black"], request.fen
            )
        except InvalidPositionError as error:
            self._close_seats(seats)
            raise InvalidInputError(str(error), reason="invalid_position") from None
        except BaseException:
            self._close_seats(seats)
            raise
        self._seats[game.game_id] = seats
        self._forget_gone()
        self._start_sweeping()
        driver = self._drive(game.game_id)
        if all(seat.kind != "remote" for seat in seats.values()):
            return game
        await asyncio.wait({driver})  # unlike awaiting it: a client leaving does not cancel it
        return self.get(game.game_id)

    def get(self, game_id: str) -> Game:
        try:
            return self.games.get_game(game_id)
        except GameNotFoundError as error:
            raise UnknownGameError(str(error), reason="unknown_game") from None

    def session(self, game_id: str) -> GameSession:
        """The game's session: its spectators, activity and whether it is live."""
        try:
            return self.games.session_of(game_id)
        except GameNotFoundError as error:
            raise UnknownGameError(str(error), reason="unknown_game") from None

    def summaries(self, status: GameStatus | None) -> list[GameSummary]:
        summaries = []
        for game in self.games.list_games(status):
            try:
                session = self.games.session_of(game.game_id)
            except GameNotFoundError:
                continue  # evicted since it was listed
            seats = self._seats.get(game.game_id, _REMOTE_SEATS)
            summaries.append(
                GameSummary(
                    game_id=game.game_id,
                    white=game.white.name,
                    black=game.black.name,
                    white_kind=seats["white"].kind,
                    black_kind=seats["black"].kind,
                    status=game.status,
                    result=game.result,
                    termination=game.termination,
                    current_turn=game.current_turn,
                    ply=len(game.move_history),
                    fen=game.board_state.fen,
                    last_updated=game.last_updated,
                    spectators=session.spectators,
                )
            )
        return summaries

    async def move(self, game_id: str, request: MoveRequest) -> Game:
        """Play a remote agent's move, then the server agent's replies."""
        async with self._lock(game_id):
            before = self.get(game_id)
            self._check_remote_turn(before, request.color)
            with _translated(game_id):
                after = await run_in_threadpool(
                    self.games.apply_move, game_id, request.move, request.thinking_time
                )
            self._publish(before, after)
        await asyncio.wait({self._drive(game_id)})  # a client leaving must not stop the agent
        return self.get(game_id)

    async def resign(self, game_id: str, color: Color) -> Game:
        async with self._lock(game_id):
            before = self.get(game_id)
            with _translated(game_id):
                after = await run_in_threadpool(self.games.resign, game_id, color)
            self._publish(before, after)
            return after

    # -- spectators -----------------------------------------------------------------------------

    def subscribe(self, game_id: str) -> tuple[Game, asyncio.Queue[dict[str, Any] | None]]:
        """The game now and a queue of its next events (None: the game left memory)."""
        game = self.get(game_id)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._spectators.setdefault(game_id, set()).add(queue)
        self._record_spectators(game_id)
        return game, queue

    def unsubscribe(self, game_id: str, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        watching = self._spectators.get(game_id)
        if watching is None:
            return  # the game left memory, and its session with it
        watching.discard(queue)
        self._record_spectators(game_id)

    # -- lifetime -------------------------------------------------------------------------------

    async def sweep(self) -> list[str]:
        """Drop the games idle longer than the state manager's ``idle_timeout`` now, as the
        periodic cleanup does: archived, agents closed, spectators told (1001). Their ids."""
        dropped = await run_in_threadpool(self.games.cleanup_idle)
        self._forget_gone()
        return dropped

    async def close(self) -> None:
        """Stop the cleanup and the agents, end the spectators' streams and close the state
        manager (which archives the games)."""
        tasks = list(self._drivers.values())
        if self._sweeper is not None:
            tasks.append(self._sweeper)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for game_id in list(self._seats):
            self._forget(game_id)
        for game_id in list(self._spectators):
            self._end_streams(game_id)
        await run_in_threadpool(self.games.close)

    # -- inside ---------------------------------------------------------------------------------

    def _start_sweeping(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep_periodically())

    async def _sweep_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.cleanup_interval)
            try:
                await self.sweep()
            except Exception:  # e.g. the archive's disk is full: the next sweep tries again
                logger.exception("cleaning up idle games failed")

    def _record_spectators(self, game_id: str) -> None:
        """Write the number of spectators of ``game_id`` into its session."""
        try:
            session = self.games.session_of(game_id)
            self.games.touch(session.session_id, len(self._spectators.get(game_id, ())))
        except (GameNotFoundError, SessionNotFoundError):
            pass  # evicted in a worker thread a moment ago; _forget_gone follows

    def _lock(self, game_id: str) -> asyncio.Lock:
        return self._locks.setdefault(game_id, asyncio.Lock())

    def _check_remote_turn(self, game: Game, color: Color | None) -> None:
        if game.is_over:
            raise EpisodeStateError(
                f"game {game.game_id} is over ({game.status}, {game.result}): no more moves",
                reason="game_over",
            )
        turn = game.current_turn
        if color is not None and color != turn:
            raise EpisodeStateError(
                f"it is {turn}'s turn in game {game.game_id}, not {color}'s", reason="not_your_turn"
            )
        seat = self._seats.get(game.game_id, _REMOTE_SEATS)[turn]
        if seat.kind != "remote":
            raise EpisodeStateError(
                f"it is {turn}'s turn in game {game.game_id}, played by the server's "
                f"{seat.kind} agent",
                reason="not_remote_turn",
            )

    def _drive(self, game_id: str) -> asyncio.Task[None]:
        """The task playing the server agents' moves in ``game_id`` (one per game at a time)."""
        driver = self._drivers.get(game_id)
        if driver is None or driver.done():
            driver = asyncio.create_task(self._play_server_moves(game_id))
            self._drivers[game_id] = driver
            driver.add_done_callback(self._driver_done)
        return driver

    def _driver_done(self, driver: asyncio.Task[None]) -> None:
        for game_id, task in list(self._drivers.items()):
            if task is driver:
                del self._drivers[game_id]
        if not driver.cancelled() and driver.exception() is not None:
            logger.error("a server agent failed", exc_info=driver.exception())

    async def _play_server_moves(self, game_id: str) -> None:
        """Move for the server agents until a remote agent is to move or the game ends."""
        while True:
            async with self._lock(game_id):
                try:
                    game = self.games.get_game(game_id)
                    seat = self._seats.get(game_id, _REMOTE_SEATS)[game.current_turn]
                    if game.is_over or seat.opponent is None:
                        return
                    after = await self._server_move(game, seat)
                except GameNotFoundError:
                    return  # evicted meanwhile
                self._publish(game, after)

    async def _server_move(self, game: Game, seat: _Seat) -> Game:
        """The game after the server agent's move; it loses on time when late, and resigns
        ("agent_error") when it raises or answers an illegal move."""
        assert seat.opponent is not None
        board = chess.Board(game.start_fen)
        for move in game.move_history:  # the whole stack: engines see repetitions
            board.push(chess.Move.from_uci(move.uci_notation))
        legal = list(board.legal_moves)  # before the agent sees the board: it might push on it
        color, game_id = game.current_turn, game.game_id
        started = time.perf_counter()
        # asyncio's executor, not anyio's: a timed-out thread is abandoned, not waited for.
        thinking = asyncio.to_thread(seat.opponent.choose_move, board, legal)
        try:
            chosen = await asyncio.wait_for(thinking, seat.timeout)
        except asyncio.TimeoutError:  # not TimeoutError's alias before Python 3.11
            return await run_in_threadpool(self.games.timeout, game_id, color)
        except Exception:
            logger.exception("the %s agent (%s) of game %s failed", seat.kind, color, game_id)
            return await run_in_threadpool(self.games.resign, game_id, color, "agent_error")
        if chosen not in legal:
            logger.error(
                "the %s agent (%s) of game %s answered %r, not a legal move in %s",
                seat.kind,
                color,
                game_id,
                chosen,
                game.board_state.fen,
            )
            return await run_in_threadpool(self.games.resign, game_id, color, "agent_error")
        elapsed = time.perf_counter() - started
        return await run_in_threadpool(self.games.apply_move, game_id, chosen.uci(), elapsed)

    def _publish(self, before: Game, after: Game) -> None:
        """Tell the spectators what changed from ``before`` to ``after``; release the agents of
        a game that has just ended."""
        if len(after.move_history) > len(before.move_history):
            last = after.move_history[-1]
            data = {
                "game_id": after.game_id,
                "ply": len(after.move_history),
                "move": last.uci_notation,
                "san": last.san_notation,
                "player": last.player,
                "fen": after.board_state.fen,
            }
            self._broadcast(after.game_id, {"type": "move_made", "data": data})
        if after.is_over and not before.is_over:
            self._broadcast(after.game_id, _ended_frame(after))
            self._retire_seats(after.game_id)

    def _broadcast(self, game_id: str, event: dict[str, Any]) -> None:
        for queue in list(self._spectators.get(game_id, ())):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # too slow a spectator: end its stream
                self.unsubscribe(game_id, queue)
                _end_stream(queue)

    def _forget_gone(self) -> None:
        """Release what the games evicted or cleaned up by the state manager held."""
        present = {game.game_id for game in self.games.list_games()}
        for game_id in [game_id for game_id in self._seats if game_id not in present]:
            self._forget(game_id)
            self._end_streams(game_id)

    def _forget(self, game_id: str) -> None:
        driver = self._drivers.pop(game_id, None)
        if driver is not None:
            driver.cancel()
        self._close_seats(self._seats.pop(game_id, {}))
        self._locks.pop(game_id, None)

    def _retire_seats(self, game_id: str) -> None:
        """Close a finished game's agents, keeping their kinds for the summaries."""
        seats = self._seats.get(game_id)
        if seats is not None:
            self._seats[game_id] = {color: _Seat(seat.kind) for color, seat in seats.items()}
            self._close_seats(seats)

    def _end_streams(self, game_id: str) -> None:
        for queue in self._spectators.pop(game_id, set()):
            _end_stream(queue)

    @staticmethod
    def _close_seats(seats: dict[Color, _Seat]) -> None:
        for seat in seats.values():
            seat.close()


def _end_stream(queue: asyncio.Queue[dict[str, Any] | None]) -> None:
    """Make None the next thing ``queue`` gives, dropping what is still queued."""
    while not queue.empty():
        queue.get_nowait()
    queue.put_nowait(None)


def _snapshot_frames(game: Game) -> Iterator[dict[str, Any]]:
    """The game as frames of bounded size: the record without its moves, then the moves in
    pages of ``HISTORY_PAGE``."""
    record = game.model_dump(mode="json", exclude={"move_history"})
    yield {"type": "snapshot", "data": {"game": record, "ply": len(game.move_history)}}
    for start in range(0, len(game.move_history), HISTORY_PAGE):
        page = game.move_history[start : start + HISTORY_PAGE]
        data = {
            "game_id": game.game_id,
            "from_ply": start + 1,
            "moves": [move.model_dump(mode="json") for move in page],
        }
        yield {"type": "history", "data": data}


def _ended_frame(game: Game) -> dict[str, Any]:
    pgn = game.to_pgn()
    data = {
        "game_id": game.game_id,
        "status": game.status,
        "result": game.result,
        "termination": game.termination,
        "pgn": pgn if len(pgn) <= MAX_FRAME_PGN else None,
    }
    return {"type": "game_ended", "data": data}


@contextlib.contextmanager
def _translated(game_id: str) -> Iterator[None]:
    """The state manager's errors as the service's (status, code and reason)."""
    try:
        yield
    except MoveParseError as error:
        raise InvalidInputError(str(error), reason=error.reason) from None
    except GameOverError as error:
        raise EpisodeStateError(str(error), reason="game_over") from None
    except GameNotFoundError as error:
        raise UnknownGameError(str(error), reason="unknown_game") from None


def get_chess_service(connection: HTTPConnection) -> ChessService:
    """The app's service (the dependency of every route)."""
    service: ChessService = connection.app.state.chess_service
    return service


Service = Annotated[ChessService, Depends(get_chess_service)]

# -- routers ------------------------------------------------------------------------------------

_NOT_FOUND = {404: {"model": ErrorResponse, "description": "Unknown game (SESSION_ERROR)"}}
_NOT_NOW = {409: {"model": ErrorResponse, "description": "Game over, or not a remote turn"}}

games_router = APIRouter(tags=["Games"])


@games_router.post(
    "/games",
    status_code=201,
    response_model=Game,
    responses={503: {"model": ErrorResponse, "description": "Stockfish is not installed"}},
    summary="Start a game between two agents",
)
async def create_game(request: CreateGameRequest, service: Service) -> Game:
    return await service.create(request)


@games_router.get("/games", response_model=list[GameSummary], summary="The games in memory")
def list_games(
    service: Service,
    status: Annotated[GameStatus | None, Query(description="Only games with this status")] = None,
) -> list[GameSummary]:
    return service.summaries(status)


@games_router.get("/games/{game_id}", response_model=Game, responses=_NOT_FOUND, summary="One game")
def get_game(game_id: str, service: Service) -> Game:
    return service.get(game_id)


@games_router.get(
    "/games/{game_id}/session",
    response_model=GameSession,
    responses=_NOT_FOUND,
    summary="The game's session: spectators, activity, live or not",
)
def game_session(game_id: str, service: Service) -> GameSession:
    return service.session(game_id)


@games_router.get(
    "/games/{game_id}/pgn",
    response_class=PlainTextResponse,
    responses={**_NOT_FOUND, 200: {"content": {"text/plain": {}}, "description": "The PGN"}},
    summary="The game in PGN",
)
def game_pgn(game_id: str, service: Service) -> str:
    return service.get(game_id).to_pgn()


@games_router.post(
    "/games/{game_id}/resign",
    response_model=Game,
    responses={**_NOT_FOUND, **_NOT_NOW},
    summary="One side resigns",
)
async def resign(game_id: str, request: ResignRequest, service: Service) -> Game:
    return await service.resign(game_id, request.color)


moves_router = APIRouter(tags=["Moves"])


@moves_router.post(
    "/games/{game_id}/moves",
    response_model=Game,
    responses={**_NOT_FOUND, **_NOT_NOW},
    summary="Play a remote agent's move; server agents reply before the response",
)
async def play_move(game_id: str, request: MoveRequest, service: Service) -> Game:
    return await service.move(game_id, request)


events_router = APIRouter(tags=["Events"])


@events_router.websocket("/games/{game_id}/events")
async def game_events(websocket: WebSocket, game_id: str, service: Service) -> None:
    """The game in pages, then each move and the ending; client messages are ignored."""
    await websocket.accept()
    try:
        game, queue = service.subscribe(game_id)
    except ServiceError as error:
        await _send(websocket, {"type": "error", "data": error_payload(error)[1]})
        await websocket.close(CLOSE_POLICY_VIOLATION, "unknown game")
        return
    left = asyncio.ensure_future(_until_disconnect(websocket))
    try:
        for frame in _snapshot_frames(game):
            await _send(websocket, frame)
        if game.is_over:
            await _send(websocket, _ended_frame(game))
            await websocket.close()
            return
        await _forward(websocket, queue, left, len(game.move_history))
    except WebSocketDisconnect:
        pass
    finally:
        left.cancel()
        service.unsubscribe(game_id, queue)


async def _forward(
    websocket: WebSocket,
    queue: asyncio.Queue[dict[str, Any] | None],
    left: asyncio.Future[None],
    seen: int,
) -> None:
    """Send the events after ply ``seen`` until the game ends or leaves memory, or the
    spectator leaves (``left``)."""
    while True:
        getting = asyncio.ensure_future(queue.get())
        await asyncio.wait({getting, left}, return_when=asyncio.FIRST_COMPLETED)
        if not getting.done():
            getting.cancel()
            return
        event = getting.result()
        if event is None:
            await websocket.close(CLOSE_GOING_AWAY, "the game left memory")
            return
        if event["type"] == "move_made":
            if event["data"]["ply"] <= seen:  # already in the snapshot
                continue
            seen = event["data"]["ply"]
        await _send(websocket, event)
        if event["type"] == "game_ended":
            await websocket.close()
            return


async def _send(websocket: WebSocket, frame: dict[str, Any]) -> None:
    # UTF-8 rather than \u escapes: at most 4 bytes a character instead of 12.
    await websocket.send_text(json.dumps(frame, ensure_ascii=False))


async def _until_disconnect(websocket: WebSocket) -> None:
    while (await websocket.receive())["type"] != "websocket.disconnect":
        pass


router = APIRouter()
for _module_router in (games_router, moves_router, events_router):
    router.include_router(_module_router)


# -- the app ------------------------------------------------------------------------------------


def create_chess_service_app(
    state_manager: StateManager | None = None,
    *,
    archive_dir: str | os.PathLike[str] | None = None,
    max_games: int = 100,
    cleanup_interval: float = 60.0,
) -> FastAPI:
    """The chess service as an app; ``ChessService.close()`` (which closes ``state_manager``,
    archiving its games) runs when the app shuts down.

    Args:
        state_manager: where the games live; default a new ``StateManager(max_games,
            archive_dir=archive_dir)`` (``archive_dir`` and ``max_games`` are for that one only).
        archive_dir: where finished, evicted and (at shutdown) unfinished games are appended.
        max_games: games held at once; the least recently updated (finished ones first) go.
        cleanup_interval: seconds between two sweeps for idle games (default 60); the idle
            time itself is the state manager's ``idle_timeout``.
    """
    if state_manager is not None and archive_dir is not None:
        raise ValueError("archive_dir is for the default StateManager; set it on yours instead")
    if state_manager is None:
        state_manager = StateManager(max_games=max_games, archive_dir=archive_dir)
    service = ChessService(state_manager, cleanup_interval=cleanup_interval)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await service.close()

    app = FastAPI(
        title="Chess service",
        description="Many chess games between engines, simple agents and remote clients.",
        version="1.0.0",
        lifespan=lifespan,
        responses={422: {"model": ErrorResponse, "description": "Malformed or illegal input"}},
    )
    app.state.chess_service = service
    # As envkit.server's apps have: envkit.server.make_server reads the WebSocket frame limit.
    app.state.limits = Limits()
    app.add_middleware(BodySizeLimit, max_bytes=app.state.limits.max_body_bytes)
    for handled in (ServiceError, ValidationError, RequestValidationError):
        app.add_exception_handler(handled, _error_response)
    app.include_router(router)
    return app


async def _error_response(request: Request, error: Exception) -> JSONResponse:
    """Refused requests as ``{"detail", "code", "reason"?}``, as ``envkit.server`` sends them."""
    status, body = error_payload(error)
    return JSONResponse({"detail": body.pop("message"), **body}, status_code=status)
