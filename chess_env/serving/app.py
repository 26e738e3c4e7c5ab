"""``ChessEnv`` as an OpenEnv server: ``ChessAdapter``, ``create_chess_app`` and ``serve``.

``python -m chess_env serve [--host 127.0.0.1] [--port 8000]`` runs it (``--help`` lists the
rest: token, rate limit, sessions and their idle timeout, the game service and its limits).
The agent plays one side against the opponent chosen at reset, any player spec a server makes
(``chess_env.core.players``: random, greedy, ``stockfish:3``, ``stockfish?elo=1500``,
``alphabeta:2``, registered names; never a model file, an LLM or a human)::

    POST /reset {"opponent": "stockfish:3", "agent_color": "black", "seed": 1}
    POST /step  {"action": {"move": "Nf6"}, "session_id": "..."}   (or {"action": {"action": 2421}})

An action is ``{"move": text}`` (UCI or SAN, read by ``chess_env.core.move_parsing.parse_move``) or
``{"action": index}`` (the AlphaZero index of ``chess_env.core.encoding``). An illegal move is a
VALIDATION_ERROR whose ``reason`` is ``parse_move``'s (e.g. "cannot_move_there") or
"illegal_action" for an index; nothing is played and the agent may try again. The MCP tool
``move`` plays a move too.

Example:
    >>> adapter = ChessAdapter()
    >>> adapter.reset(seed=0, opponent="greedy").observation.legal_moves[:3]
    ['g1h3', 'g1f3', 'b1c3']
    >>> result = adapter.step(ChessAction(move="e4"))
    >>> result.observation.opponent_move, result.reward, result.done
    ('d7d5', 0.0, False)
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import chess
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

import chess_env
from chess_env.core.encoding import ACTION_SIZE
from chess_env.core.env import ChessEnv
from chess_env.core.fen import fen_of
from chess_env.core.move_parsing import MoveParseError
from chess_env.core.opponents import Opponent
from chess_env.core.players import check_player, make_player, parse_player
from chess_env.errors import (
    IllegalActionError,
    InvalidPositionError,
    PlayerFailedError,
    PlayerSpecError,
    StockfishNotFoundError,
)
from chess_env.serving.game_store import DEFAULT_MAX_ARCHIVE_BYTES, DEFAULT_MAX_PLIES
from chess_env.serving.thinking import (
    ENGINE_RETRY_AFTER,
    QUICK_PLAYERS,
    ServedPlayer,
    ThinkingBudget,
    ThinkingLimits,
)
from envkit.server import (
    AdapterResult,
    EpisodeState,
    EpisodeStateError,
    InvalidInputError,
    ToolSpec,
    create_app,
    make_server,
)
from envkit.server.errors import CapacityError
from envkit.server.sessions import current_client
from envkit.server.ws_limits import MAX_WS_PENDING_BYTES

__all__ = [
    "ChessAction",
    "ChessAdapter",
    "ChessObservation",
    "ChessResetOptions",
    "ChessState",
    "ascii_board",
    "create_chess_app",
    "serve",
]

MAX_MOVE_TEXT = 1024  # an LLM's answer may wrap the move in prose; parse_move finds it
MAX_OPENING = 1000  # plies of the "moves" reset option
MAX_PLAYER_SPEC = 200  # characters of the "opponent" reset option (state and errors repeat it)
# FEN placement -> spaced squares: "3" -> ". . . ", "P" -> "P ".
_SPACED_SQUARES = str.maketrans(
    {**{str(n): ". " * n for n in range(1, 9)}, **{piece: f"{piece} " for piece in "PNBRQKpnbrqk"}}
)
_FILES_HEADER = {chess.WHITE: "  a b c d e f g h", chess.BLACK: "  h g f e d c b a"}


class ChessResetOptions(BaseModel):
    """The reset options of a chess episode (besides OpenEnv's ``seed`` and ``episode_id``).

    ``opponent`` is checked by ``chess_env.core.players.check_player(served=True)`` without starting
    anything: a kind the server does not make for its clients, or a malformed spec, is refused
    here with the registry's message.

    Example:
        >>> ChessResetOptions(opponent="greedy", moves=["e2e4"]).model_dump(exclude_defaults=True)
        {'opponent': 'greedy', 'moves': ['e2e4']}
        >>> ChessResetOptions(opponent="stokfish:3")
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ChessResetOptions
        opponent
          Value error, unknown player 'stokfish:3' (did you mean 'stockfish:3'?); ...
    """

    model_config = ConfigDict(extra="forbid")

    opponent: str = Field(
        "random",
        min_length=1,
        max_length=MAX_PLAYER_SPEC,
        description=(
            "Who plays the other side: a player spec of chess_env.core.players that a server makes "
            "for its clients: random, greedy, stockfish[:DEPTH][?depth=&skill=&elo=&movetime=], "
            "alphabeta[:DEPTH], or a name the operator registered (not model:, openai: or human)"
        ),
        examples=[
            "random",
            "greedy",
            "stockfish",
            "stockfish:3",
            "stockfish?elo=1500",
            "stockfish?skill=3&depth=5&movetime=0.1",
            "alphabeta:2",
        ],
    )
    agent_color: Literal["white", "black", "random"] = Field(
        "white", description="The agent's side ('random': drawn from the seed)"
    )
    fen: str | None = Field(None, max_length=100, description="Start position (default: standard)")
    moves: list[str] = Field(
        default_factory=list,
        max_length=MAX_OPENING,
        description="Opening moves in UCI, played first",
    )
    include_tensor: bool = Field(
        False, strict=True, description="Add the (8, 8, 12) board tensor to every observation"
    )

    @field_validator("opponent")
    @classmethod
    def _served_player(cls, opponent: str) -> str:
        check_player(opponent, served=True)  # a PlayerSpecError is a ValueError: 422 on the field
        return opponent


class ChessAction(BaseModel):
    """One move: ``move`` (UCI or SAN text) or ``action`` (AlphaZero index), exactly one.

    Example:
        >>> ChessAction(move="Nf3").move, ChessAction(action=877).action
        ('Nf3', 877)
        >>> ChessAction(move="Nf3", action=877)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ChessAction
          Value error, give exactly one of "move" (UCI or SAN text) or "action" (an index) ...
    """

    model_config = ConfigDict(extra="forbid")

    move: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_MOVE_TEXT,
        description="The move in UCI (e2e4) or SAN (e4)",
    )
    action: int | None = Field(
        None, ge=0, lt=ACTION_SIZE, strict=True, description="The move's AlphaZero action index"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Ignored; OpenEnv's typed clients always send it"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ChessAction:
        if (self.move is None) == (self.action is None):
            raise ValueError('give exactly one of "move" (UCI or SAN text) or "action" (an index)')
        return self


class ChessObservation(BaseModel):
    """The position after the agent's move and the opponent's reply.

    Example:
        >>> observation = ChessAdapter().reset(seed=0).observation
        >>> observation.agent_color, observation.ply, len(observation.legal_moves)
        ('white', 0, 20)
        >>> print(observation.ascii.splitlines()[1])
        8 r n b q k b n r 8
    """

    fen: str = Field(description="The position in FEN")
    legal_moves: list[str] = Field(description="The agent's legal moves in UCI (empty once over)")
    is_check: bool = Field(description="Whether the side to move is in check")
    result: str = Field(description='"1-0", "0-1", "1/2-1/2", or "*" while the game goes on')
    outcome: str | None = Field(description='How the game ended ("checkmate", ...), else None')
    ascii: str = Field(description="The board from the agent's side, in ASCII with coordinates")
    agent_color: Literal["white", "black"] = Field(description="The side the agent plays")
    opponent_move: str | None = Field(description="The opponent's last reply in UCI, if any")
    ply: int = Field(description="Plies played in the game")
    board_tensor: list[list[list[int]]] | None = Field(
        None, description="(8, 8, 12) piece planes, agent's pieces first; only if asked at reset"
    )


class ChessState(EpisodeState):
    """The episode's state (fields other than episode_id and step_count are absent before reset).

    Example:
        >>> adapter = ChessAdapter()
        >>> ChessState(**adapter.state()).fen is None
        True
        >>> _ = adapter.reset(seed=0, opponent="greedy")
        >>> state = ChessState(**adapter.state())
        >>> state.ply, state.agent_color, state.opponent, state.result, state.done
        (0, 'white', 'greedy', '*', False)
    """

    fen: str | None = Field(None, description="The position in FEN")
    ply: int | None = Field(None, description="Plies played in the game")
    agent_color: Literal["white", "black"] | None = Field(None, description="The agent's side")
    opponent: str | None = Field(None, description="The opponent's player spec, as given")
    result: str | None = Field(None, description='"1-0", "0-1", "1/2-1/2" or "*"')
    done: bool | None = Field(None, description="Whether the episode has ended")


class ChessAdapter:
    """One ``ChessEnv`` per session; the opponent and start position are chosen at each reset.

    Args:
        budget: the server's ``ThinkingBudget``, which makes the opponents within its engine
            and search limits for the client resetting (``create_chess_app`` shares one among
            every session and the game service); None: opponents are made as
            ``make_player(served=True)`` makes them, unbounded (in-process use).

    Example:
        >>> adapter = ChessAdapter()
        >>> adapter.reset(seed=0, opponent="greedy", agent_color="black").observation.opponent_move
        'd2d4'
        >>> adapter.step(ChessAction(move="e5")).observation.opponent_move  # greedy takes it
        'd4e5'
        >>> adapter.step(ChessAction(move="Ke3"))
        Traceback (most recent call last):
        ...
        envkit.server.errors.InvalidInputError: the king on e8 cannot move to e3
    """

    name = "chess"
    description = (
        "Chess against an opponent chosen at reset by player spec (random, greedy, stockfish:3, "
        "stockfish?elo=1500, alphabeta:2, ...): the agent sends one move per step, in UCI or SAN "
        "text or as an AlphaZero action index; reward +1 win, -1 loss, 0 draw."
    )
    version = chess_env.__version__
    action_model = ChessAction
    observation_model = ChessObservation
    state_model = ChessState

    def __init__(self, budget: ThinkingBudget | None = None) -> None:
        self.budget = budget
        self._env: ChessEnv | None = None
        self._options = ChessResetOptions()
        self._done = False
        self._blocking = False  # read before every WebSocket step: decided once, at reset

    @property
    def blocking(self) -> bool:
        """Whether a step may wait (an engine, a search, a registered player's code): every
        opponent but random and greedy, which reply in well under a millisecond."""
        return self._blocking

    def reset(self, *, seed: int | None = None, **options: Any) -> AdapterResult:
        """A new episode; on any refusal the previous one stays as it was."""
        parsed = ChessResetOptions.model_validate(options)
        previous = None if self._env is None else self._env.opponent
        opponent = _served_opponent(parsed.opponent, self.budget, previous)
        env = ChessEnv(opponent=opponent, agent_color=parsed.agent_color)
        try:
            _, info = env.reset(seed=seed, options={"fen": parsed.fen, "moves": parsed.moves})
        except (InvalidPositionError, PlayerFailedError) as error:
            _hand_back(opponent)
            env.close()
            if isinstance(error, PlayerFailedError):  # its engine could not start, moving first
                raise _engine_unavailable(error) from None
            raise InvalidInputError(str(error), reason="invalid_position") from None
        if self._env is not None:
            self._env.close()
        if isinstance(opponent, ServedPlayer):
            opponent.lender = None  # the loan, if any, is settled: the lender is closed
        self._env, self._options, self._done = env, parsed, False
        self._blocking = parse_player(parsed.opponent).kind not in QUICK_PLAYERS
        return self._result(info["opponent_move"], None, done=False, truncated=False)

    def step(self, action: ChessAction) -> AdapterResult:
        env = self._live_env()
        game = env.game
        try:
            if action.move is not None:
                move = game.read_move(action.move)
            else:
                move = game.move_for_action(action.action)
        except MoveParseError as error:
            raise InvalidInputError(str(error), reason=error.reason) from None
        except IllegalActionError as error:
            raise InvalidInputError(str(error), reason="illegal_action") from None
        opponent_move, reward = env.play_agent_move(move)
        self._done = env.ended_by is not None  # the rules, or a forfeit (an engine that failed)
        reply = opponent_move.uci() if opponent_move else None
        return self._result(reply, reward, done=self._done, truncated=game.truncated)

    def state(self) -> dict[str, Any]:
        if self._env is None:
            return {}
        board = self._env.board
        return {
            "fen": board.fen(),
            "ply": board.ply(),
            "agent_color": _color(self._env.agent),
            "opponent": self._options.opponent,
            "result": self._env.pgn_result,
            "done": self._done,
        }

    def tools(self) -> list[ToolSpec]:
        return [
            ToolSpec(
                "move",
                "Play one chess move for the agent, in UCI (e2e4) or SAN (Nf3, O-O); the opponent "
                "replies at once. Returns the new position, the reward and whether the game ended.",
                "(move :string) -> {observation :map, reward :double?, done :boolean}",
            )
        ]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> AdapterResult:
        return self.step(ChessAction(move=arguments["move"]))

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _live_env(self) -> ChessEnv:
        if self._env is None:
            raise EpisodeStateError("no episode yet: reset first", reason="not_reset")
        if self._done:
            raise EpisodeStateError(
                f"the episode is over ({self._env.ended_by}); reset to play again",
                reason="episode_over",
            )
        return self._env

    def _result(
        self, opponent_move: str | None, reward: float | None, *, done: bool, truncated: bool
    ) -> AdapterResult:
        """The observation, read off the game: the Gym env's tensor only if it was asked for."""
        assert self._env is not None
        env = self._env
        game, agent = env.game, env.agent
        board = game.board
        fen = fen_of(board)
        fields = {
            "fen": fen,
            "legal_moves": [] if done else game.legal_uci,
            "is_check": board.is_check(),
            "result": env.pgn_result,
            "outcome": env.ended_by,
            "ascii": ascii_board(fen, agent),
            "agent_color": _color(agent),
            "opponent_move": opponent_move,
            "ply": board.ply(),
        }
        if self._options.include_tensor:
            fields["board_tensor"] = game.observation(_color(agent)).tolist()
        metadata = {"truncated": True} if truncated else {}
        return AdapterResult(ChessObservation(**fields), reward, done, metadata)


def ascii_board(fen: str, orientation: chess.Color = chess.WHITE) -> str:
    """``chess_env.core.render.render_ansi`` in ASCII, read off the FEN the step already made.

    Drawing from the board (``Board.unicode``, then translating) took a fifth of a served step.
    The FEN's placement read backwards is the board seen from black.

    Example:
        >>> print(ascii_board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1").splitlines()[-3])
        2 . . . . P . . . 2
    """
    placement = fen.split(" ", 1)[0]
    ranks = "87654321"
    if orientation == chess.BLACK:
        placement, ranks = placement[::-1], ranks[::-1]
    rows = placement.translate(_SPACED_SQUARES).split("/")
    header = _FILES_HEADER[orientation]
    body = [f"{rank} {row}{rank}" for rank, row in zip(ranks, rows, strict=True)]
    return "\n".join([header, *body, header])


def _served_opponent(
    spec: str, budget: ThinkingBudget | None, previous: Opponent | None
) -> Opponent:
    """The opponent ``spec`` names, made within ``budget`` for the client resetting (it may
    take the engine slot of ``previous``, the session's opponent until now). A missing engine
    or a setting it or the server refuses is a 422; no free engine, or one that does not start,
    a 503."""
    try:
        if budget is None:
            return make_player(spec, served=True)
        return budget.make(spec, current_client.get(), replacing=previous)
    except StockfishNotFoundError as error:
        raise InvalidInputError(str(error), reason="opponent_unavailable") from None
    except PlayerSpecError as error:
        raise InvalidInputError(str(error), reason="invalid_opponent") from None
    except PlayerFailedError as error:
        raise _engine_unavailable(error) from None


def _engine_unavailable(error: PlayerFailedError) -> CapacityError:
    """An engine that did not start (an overloaded machine): the client may try again."""
    return CapacityError(str(error), reason="engine_unavailable", retry_after=ENGINE_RETRY_AFTER)


def _hand_back(opponent: Opponent) -> None:
    """Return the engine slot ``opponent`` took from the session's previous opponent when its
    reset fails: the session's episode stays as it was, engine included."""
    if isinstance(opponent, ServedPlayer):
        opponent.repay()


def _color(color: chess.Color) -> Literal["white", "black"]:
    return "white" if color == chess.WHITE else "black"


SERVICE_PATH = "/service"


def create_chess_app(
    *,
    service: bool = False,
    archive_dir: str | os.PathLike[str] | None = None,
    max_games: int = 100,
    game_idle_timeout: float = 1800.0,
    cleanup_interval: float = 60.0,
    listing: Literal["all", "public", "off"] = "public",
    thinking: ThinkingLimits | None = None,
    max_live_games_per_client: int = 16,
    max_spectators_per_game: int = 200,
    max_spectators_per_client: int = 16,
    max_archive_bytes: int | None = DEFAULT_MAX_ARCHIVE_BYTES,
    resume_games: bool = True,
    max_plies: int | None = DEFAULT_MAX_PLIES,
    **settings: Any,
) -> FastAPI:
    """The chess server app; ``settings`` go to ``envkit.server.create_app`` (``max_sessions``,
    ``idle_timeout``, ``token``, ...).

    Every opponent and server agent it makes comes from one ``ThinkingBudget`` with the
    ``thinking`` limits (``chess_env.serving.thinking``: engines alive, searches at once, a
    served engine's time and depth, each per server and per client).

    With ``service`` (or an ``archive_dir``), the multi-game chess service
    (``chess_env.serving.service``) is mounted under ``/service``: ``/service/games`` and
    spectators on ``/service/games/{id}/events``; and the viewer (``chess_env.serving.viewer``)
    under ``/viewer/``:
    pages to watch, replay and play its games, and to replay PGN files and arena runs. At
    shutdown it stops its players and flushes the archive
    (logging by id the games it could not archive). An ``archive_dir`` that cannot be written
    is refused here (``chess_env.serving.game_store.UnwritableArchiveError``, a ``ValueError``). Its
    settings: ``max_games`` held at once, ``game_idle_timeout`` seconds a game may idle,
    ``cleanup_interval`` seconds between two sweeps for idle games, ``listing``: which
    games ``GET /service/games`` shows ("all", "public": those created public, or "off"), and
    what one client may hold: ``max_live_games_per_client`` unfinished games,
    ``max_spectators_per_client`` spectator streams, and any game ``max_spectators_per_game``.
    With an ``archive_dir``: ``max_archive_bytes`` the archive may take (1 GiB; None: no
    limit), and ``resume_games``: whether the unfinished games of the last server on the
    directory are resumed (``chess_env.serving.game_store.StateManager``). Every service game
    ends as a draw at ``max_plies`` plies (default ``DEFAULT_MAX_PLIES``, 1,000; None: no cap).
    The caller's own ``on_shutdown``, if any, runs after the server's.
    """
    budget = ThinkingBudget(thinking)
    adapters = functools.partial(ChessAdapter, budget=budget)
    on_shutdown = settings.pop("on_shutdown", None)
    if not (service or archive_dir is not None):
        return create_app(adapters, on_shutdown=_then(budget.close, on_shutdown), **settings)
    from chess_env.serving.game_store import StateManager
    from chess_env.serving.service import create_chess_service_app
    from chess_env.serving.service.app import close_service
    from chess_env.serving.viewer import mount_viewer

    manager = StateManager(
        max_games,
        idle_timeout=game_idle_timeout,
        archive_dir=archive_dir,
        max_archive_bytes=max_archive_bytes,
        resume=resume_games,
        max_plies=max_plies,
    )
    games = create_chess_service_app(
        state_manager=manager,
        cleanup_interval=cleanup_interval,
        listing=listing,
        allow_origins=settings.get("allow_origins", ()),  # its own checks agree with the parent's
        budget=budget,
        max_live_games_per_client=max_live_games_per_client,
        max_spectators_per_game=max_spectators_per_game,
        max_spectators_per_client=max_spectators_per_client,
    )

    async def closing() -> None:
        # A mounted app's lifespan does not run: the parent closes the service instead.
        try:
            await close_service(games.state.chess_service)
        finally:
            budget.close()

    app = create_app(
        adapters,
        on_startup=games.state.chess_service.start,  # a mounted app's lifespan does not run
        on_shutdown=_then(closing, on_shutdown),
        **settings,
    )
    app.mount(SERVICE_PATH, games)
    mount_viewer(app, games.state.chess_service, allow_origins=settings.get("allow_origins", ()))
    return app


def _then(
    first: Callable[[], Any], then: Callable[[], Any] | None
) -> Callable[[], Awaitable[None]]:
    """One shutdown hook: ``first``, then the caller's own ``then`` (either may be a coroutine
    function), ``then`` even when ``first`` fails."""

    async def both() -> None:
        try:
            await _finish(first())
        finally:
            if then is not None:
                await _finish(then())

    return both


async def _finish(result: Any) -> None:
    if inspect.isawaitable(result):
        await result


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    max_ws_pending_bytes: int = MAX_WS_PENDING_BYTES,
    **settings: Any,
) -> None:
    """Run the chess server with uvicorn until interrupted (``settings`` as
    ``create_chess_app``; ``max_ws_pending_bytes`` as ``envkit.server.make_server``)."""
    app = create_chess_app(**settings)
    make_server(app, host=host, port=port, max_ws_pending_bytes=max_ws_pending_bytes).run()
