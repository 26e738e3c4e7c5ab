"""``ChessService``: the games of one ``StateManager``, their server agents and their spectators.

It turns requests into the state manager's calls, one at a time per game (a lock each), lets the
server agents move on their turn (a driver task per game), tells the spectators each change
(a queue each; None ends a stream), and drops idle games every ``cleanup_interval`` seconds.

Who may act: each game's ``SeatTokens`` live here, never on the ``Game``. A move or resignation
acts for the side whose token it carries (``color``, if given, must be that side); the
creator's token only aborts. Every refusal happens before anything changes.

What one client may hold, so that it cannot spoil the others' games: at most
``max_live_games_per_client`` unfinished games it created, ``max_spectators_per_client`` open
spectator streams (and any game at most ``max_spectators_per_game``), and the engines and
searches its server agents use (``chess_env.serving.thinking.ThinkingBudget``). A client is the
address ``envkit.server.sessions.current_client`` names; a service called in-process names none,
and only the server-wide limits apply to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

import chess
from starlette.concurrency import run_in_threadpool

from chess_env.core.game import Color, Game, GameSession, GameStatus
from chess_env.errors import InvalidPositionError
from chess_env.serving.game_store import (
    ResumedGame,
    SessionNotFoundError,
    StateManager,
    UnknownGameError,
)
from chess_env.serving.service.bodies import (
    AgentSpec,
    CreatedGame,
    CreateGameRequest,
    GameSummary,
    Listing,
    MoveRequest,
)
from chess_env.serving.service.errors import (
    ListingOffError,
    SeatForbiddenError,
    translated,
)
from chess_env.serving.service.frames import aborted_frame, ended_frame, move_made_frame
from chess_env.serving.service.seats import (
    REMOTE_SEATS,
    Seat,
    caught_up,
    close_seats,
    seat_for,
    server_move,
)
from chess_env.serving.service.tokens import SEAT_TOKEN_HEADER, Holder, SeatDigests, SeatTokens
from chess_env.serving.thinking import ThinkingBudget
from envkit.server.errors import CapacityError, EpisodeStateError, InvalidInputError, ServiceError
from envkit.server.sessions import current_client

__all__ = ["QUEUE_SIZE", "ChessService"]

# One logger for the whole service package, so one log setting covers all its modules.
logger = logging.getLogger("chess_env.serving.service")

QUEUE_SIZE = 1024  # events a spectator may lag behind before it is dropped
SPECTATOR_RETRY_AFTER = 30  # seconds before a full game may have room for one more spectator
Spectator = asyncio.Queue[dict[str, Any] | None]  # one spectator's events; None ends its stream


class ChessService:
    """The games of one ``StateManager``, their server agents and their spectators.

    All methods run on the app's event loop; the per-game ``asyncio.Lock`` makes the turn check
    and the move one step, so two requests never play for the same turn.

    Args:
        state_manager: where the games and their sessions live.
        cleanup_interval: seconds between two sweeps for idle games (default 60).
        listing: which games ``summaries`` shows: "all", "public" (default: those created
            public) or "off" (``ListingOffError``, 403).
        budget: makes the server agents and bounds their engines and searches (default: a
            ``ThinkingBudget`` of its own, closed with the service).
        max_live_games_per_client: unfinished games one client may have created (default 16;
            one more is 503 CAPACITY_REACHED, reason "client_game_limit").
        max_spectators_per_game: spectator streams open on one game (default 200).
        max_spectators_per_client: spectator streams one client may hold open (default 16; one
            more, or one over the game's, is refused with reason "spectator_limit").

    Example:
        >>> from chess_env.serving.game_store import StateManager
        >>> from chess_env.serving.service.bodies import AgentSpec
        >>> request = CreateGameRequest(white=AgentSpec(player="remote", name="Me"),
        ...                             black=AgentSpec(player="greedy", name="G", seed=0))
        >>> async def open_game(service: ChessService) -> list[str]:
        ...     created = await service.create(request)
        ...     game_id, token = created.game.game_id, created.tokens.white
        ...     game = await service.move(game_id, MoveRequest(move="e4"), token)  # G replies
        ...     await service.close()
        ...     return [move.uci_notation for move in game.move_history]
        >>> asyncio.run(open_game(ChessService(StateManager(max_games=10))))
        ['e2e4', 'c7c5']
    """

    def __init__(
        self,
        state_manager: StateManager,
        *,
        cleanup_interval: float = 60.0,
        listing: Listing = "public",
        budget: ThinkingBudget | None = None,
        max_live_games_per_client: int = 16,
        max_spectators_per_game: int = 200,
        max_spectators_per_client: int = 16,
    ) -> None:
        if not cleanup_interval > 0:
            raise ValueError(f"cleanup_interval must be positive, got {cleanup_interval}")
        if listing not in ("all", "public", "off"):
            raise ValueError(f"listing must be 'all', 'public' or 'off', got {listing!r}")
        limits = {
            "max_live_games_per_client": max_live_games_per_client,
            "max_spectators_per_game": max_spectators_per_game,
            "max_spectators_per_client": max_spectators_per_client,
        }
        for name, limit in limits.items():
            if limit < 1:
                raise ValueError(f"{name} must be at least 1, got {limit}")
        self.games = state_manager
        self.cleanup_interval = cleanup_interval
        self.listing = listing
        self.budget = budget if budget is not None else ThinkingBudget()
        self._owns_budget = budget is None
        self.max_live_games_per_client = max_live_games_per_client
        self.max_spectators_per_game = max_spectators_per_game
        self.max_spectators_per_client = max_spectators_per_client
        self._creators: dict[str, str | None] = {}  # game id -> the client that created it
        self._creating: Counter[str | None] = Counter()  # games being made, by client
        self._watching: dict[Spectator, str | None] = {}  # spectator -> its client
        self._seats: dict[str, dict[Color, Seat]] = {}
        self._boards: dict[str, chess.Board] = {}  # per game, as its server agent last saw it
        self._stops: dict[str, asyncio.Event] = {}  # set: the game's agents are to stop
        self._tokens: dict[str, SeatDigests] = {}  # their digests: no token is ever kept
        self._public: set[str] = set()
        self._aborted: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._spectators: dict[str, set[Spectator]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        for resumed in state_manager.resumed_games():
            self._resume(resumed)

    # -- games ----------------------------------------------------------------------------------

    async def create(self, request: CreateGameRequest) -> CreatedGame:
        """A new game and its tokens; server agents play until a remote one is to move (all of
        it, if none is: in the background)."""
        client = current_client.get()
        self._check_live_games(client)
        self._creating[client] += 1  # counted as live while it is made: no burst slips past
        try:
            seats, game = await self._open(request, client)
        finally:
            self._creating[client] -= 1
            if not self._creating[client]:
                del self._creating[client]
        self._seats[game.game_id] = seats
        self._creators[game.game_id] = client
        tokens = SeatTokens.new(request.remote_sides)
        self._tokens[game.game_id] = SeatDigests.of(tokens)
        if request.listed:
            self._public.add(game.game_id)
        kept = _service_data(request, self._tokens[game.game_id], client)
        with contextlib.suppress(UnknownGameError):  # evicted already: nothing to resume
            await run_in_threadpool(self.games.attach_service_data, game.game_id, kept)
        self._forget_gone()
        self._start_sweeping()
        driver = self._drive(game.game_id)
        if request.remote_sides:
            await asyncio.wait({driver})  # unlike awaiting it: a client leaving does not cancel it
            game = self.get(game.game_id)
        return CreatedGame(game=game, tokens=tokens)

    async def _open(
        self, request: CreateGameRequest, client: str | None
    ) -> tuple[dict[Color, Seat], Game]:
        """The seats and the stored game ``request`` asks for; nothing is kept on a refusal."""
        configs = {"white": request.white.config("white"), "black": request.black.config("black")}
        seats: dict[Color, Seat] = {}
        try:
            seats["white"] = seat_for(request.white, configs["white"], self.budget, client)
            seats["black"] = seat_for(request.black, configs["black"], self.budget, client)
            with translated():  # no place free: 503 games_full
                game = await run_in_threadpool(
                    self.games.create_game, configs["white"], configs["black"], request.fen
                )
        except InvalidPositionError as error:
            close_seats(seats)
            raise InvalidInputError(str(error), reason="invalid_position") from None
        except BaseException:
            close_seats(seats)
            raise
        return seats, game

    def get(self, game_id: str) -> Game:
        with translated():
            return self.games.get_game(game_id)

    def session(self, game_id: str) -> GameSession:
        """The game's session: its spectators, activity and whether it is live."""
        with translated():
            return self.games.session_of(game_id)

    def summaries(self, status: GameStatus | None) -> list[GameSummary]:
        """The games ``listing`` shows (all, the public ones, or a ``ListingOffError``)."""
        if self.listing == "off":
            raise ListingOffError("this server does not list its games", reason="listing_off")
        summaries = []
        for game in self.games.list_games(status):
            if self.listing == "public" and game.game_id not in self._public:
                continue
            try:
                session = self.games.session_of(game.game_id)
            except UnknownGameError:
                continue  # evicted since it was listed
            seats = self._seats.get(game.game_id, REMOTE_SEATS)
            summaries.append(
                GameSummary(
                    game_id=game.game_id,
                    white=game.white.name,
                    black=game.black.name,
                    white_player=seats["white"].player,
                    black_player=seats["black"].player,
                    status=game.status,
                    result=game.result,
                    termination=game.termination,
                    current_turn=game.current_turn,
                    ply=len(game.move_history),
                    fen=game.board_state.fen,
                    last_updated=game.last_updated,
                    spectators=session.spectators,
                    aborted=game.game_id in self._aborted,
                )
            )
        return summaries

    def is_aborted(self, game_id: str) -> bool:
        return game_id in self._aborted

    async def move(self, game_id: str, request: MoveRequest, token: str) -> Game:
        """Play the move of the side ``token`` is for, then the server agent's replies."""
        self.get(game_id)  # an unknown game is 404 before it gets a lock
        async with self._lock(game_id):
            before = self.get(game_id)
            color = self._seat_of(before, token, request.color)
            self._check_turn(before, color)
            with translated():
                after = await run_in_threadpool(
                    self.games.apply_move, game_id, request.move, request.thinking_time
                )
            self._publish(before, after)
        await asyncio.wait({self._drive(game_id)})  # a client leaving must not stop the agent
        return self.get(game_id)

    async def resign(self, game_id: str, token: str, color: Color | None = None) -> Game:
        """The side ``token`` is for resigns (``color``, if given, must be that side)."""
        self.get(game_id)
        async with self._lock(game_id):
            before = self.get(game_id)
            color = self._seat_of(before, token, color)
            with translated():
                after = await run_in_threadpool(self.games.resign, game_id, color)
            self._publish(before, after)
            return after

    async def abort(self, game_id: str, token: str) -> Game:
        """The creator stops the game for good: its server agents stop, nobody moves any more
        (409 "aborted"), spectators get ``game_aborted``. The record stays as it was,
        unfinished, and leaves memory as idle games do (archived)."""
        self.get(game_id)
        if self._holder(game_id, token) == "creator":  # its agents stop thinking now
            self._stops.setdefault(game_id, asyncio.Event()).set()
        async with self._lock(game_id):
            game = self.get(game_id)
            if self._holder(game_id, token) != "creator":
                raise SeatForbiddenError(
                    f"only the creator's {SEAT_TOKEN_HEADER} aborts game {game_id}",
                    reason="not_creator",
                )
            self._check_playing(game)
            with translated():
                await run_in_threadpool(self.games.mark_aborted, game_id)
            self._aborted.add(game_id)
            self._retire_seats(game_id)
            self._broadcast(game_id, aborted_frame(game))
            return game

    # -- spectators -----------------------------------------------------------------------------

    def subscribe(self, game_id: str) -> tuple[Game, Spectator]:
        """The game now and a queue of its next events (None: the game left memory); a
        ``CapacityError`` (reason "spectator_limit") past the game's or the client's limit."""
        game = self.get(game_id)
        client = current_client.get()
        watching = self._spectators.get(game_id, set())
        if len(watching) >= self.max_spectators_per_game:
            raise CapacityError(
                f"game {game_id} has {self.max_spectators_per_game} spectators, this server's "
                "limit per game; try again later",
                reason="spectator_limit",
                retry_after=SPECTATOR_RETRY_AFTER,
            )
        held = sum(1 for whose in self._watching.values() if whose == client)
        if client is not None and held >= self.max_spectators_per_client:
            raise CapacityError(
                f"this client already watches {held} streams, this server's limit per client: "
                "close one first",
                reason="spectator_limit",
            )
        queue: Spectator = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._spectators.setdefault(game_id, set()).add(queue)
        self._watching[queue] = client
        self._record_spectators(game_id)
        return game, queue

    def unsubscribe(self, game_id: str, queue: Spectator) -> None:
        self._watching.pop(queue, None)
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
        if self._owns_budget:
            self.budget.close()
        await run_in_threadpool(self.games.close)

    async def start(self) -> None:
        """Start the periodic cleanup and the server agents of the games resumed from the last
        run (on the app's loop, when the server starts; creating a game starts the cleanup too)."""
        self._start_sweeping()
        for game_id in list(self._seats):
            self._drive(game_id)

    # -- inside ---------------------------------------------------------------------------------

    def _resume(self, resumed: ResumedGame) -> None:
        """Take a game of the last run back: its seats made again, its tokens' digests, its
        creator. One without the service's data is played by nobody and idles out; one whose
        server agent cannot be made again (no engine free) is that side's loss."""
        game, data = resumed.game, resumed.service_data
        if data is None:
            return
        game_id = game.game_id
        seats: dict[Color, Seat] = {}
        for color in ("white", "black"):
            kept = data["seats"][color]
            try:
                spec = AgentSpec.model_validate(kept)
                seats[color] = seat_for(spec, spec.config(color), self.budget, data["creator"])
            except (ServiceError, ValueError) as error:  # a kind no longer registered, ...
                logger.warning("resumed game %s: its %s agent is lost (%s)", game_id, color, error)
                seats[color] = Seat(str(kept.get("player")))  # no agent: the game ends below
        self._seats[game_id] = seats
        self._tokens[game_id] = SeatDigests.model_validate(data["tokens"])
        self._creators[game_id] = data["creator"]
        if data["public"]:
            self._public.add(game_id)
        lost = [color for color, seat in seats.items() if not seat.remote and seat.opponent is None]
        if lost:
            self.games.resign(game_id, lost[0], "agent_error")
            self._retire_seats(game_id)

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
        except (UnknownGameError, SessionNotFoundError):
            pass  # evicted in a worker thread a moment ago; _forget_gone follows

    def _lock(self, game_id: str) -> asyncio.Lock:
        return self._locks.setdefault(game_id, asyncio.Lock())

    def _holder(self, game_id: str, token: str) -> Holder | None:
        tokens = self._tokens.get(game_id)  # none: made outside the service, nobody plays it
        return None if tokens is None else tokens.holder(token)

    def _seat_of(self, game: Game, token: str, side: Color | None) -> Color:
        """The side ``token`` plays in ``game``, which must be ``side`` when given; 403
        otherwise (or for a side the server plays), 409 once the game is over or aborted."""
        game_id = game.game_id
        holder = self._holder(game_id, token)
        if holder is None:
            raise SeatForbiddenError(
                f"this {SEAT_TOKEN_HEADER} is not one of game {game_id}'s",
                reason="wrong_seat_token",
            )
        self._check_playing(game)
        seat = self._seats.get(game_id, REMOTE_SEATS)[side] if side is not None else None
        if seat is not None and not seat.remote:
            raise SeatForbiddenError(
                f"{side} is played by the server's {seat.player} agent in game {game_id}: no "
                "client moves or resigns for it (the creator may abort the game)",
                reason="server_seat",
            )
        if holder == "creator" or (side is not None and holder != side):
            raise SeatForbiddenError(
                f"this {SEAT_TOKEN_HEADER} is the {holder}'s in game {game_id}, not "
                f"{side or 'a side'}'s",
                reason="wrong_seat_token",
            )
        color: Color = "white" if holder == "white" else "black"
        return color

    def _check_live_games(self, client: str | None) -> None:
        """Refuse a new game to a client that already plays its limit of unfinished ones."""
        if client is None:
            return
        live = self._creating[client]
        for game_id, creator in self._creators.items():
            if creator != client or game_id in self._aborted:
                continue
            with contextlib.suppress(UnknownGameError):  # evicted meanwhile
                live += not self.games.get_game(game_id).is_over
        if live >= self.max_live_games_per_client:
            raise CapacityError(
                f"this client already has {live} unfinished games, this server's limit per "
                "client: finish, resign or abort one first",
                reason="client_game_limit",
            )

    def _check_playing(self, game: Game) -> None:
        if game.is_over:
            raise EpisodeStateError(
                f"game {game.game_id} is over ({game.status}, {game.result}): no more moves",
                reason="game_over",
            )
        if game.game_id in self._aborted:
            raise EpisodeStateError(
                f"game {game.game_id} was aborted by its creator: no more moves", reason="aborted"
            )

    def _check_turn(self, game: Game, color: Color) -> None:
        turn = game.current_turn
        if color != turn:
            raise EpisodeStateError(
                f"it is {turn}'s turn in game {game.game_id}, not {color}'s", reason="not_your_turn"
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
                    seat = self._seats.get(game_id, REMOTE_SEATS)[game.current_turn]
                    if game.is_over or seat.opponent is None:
                        return
                    board = self._boards[game_id] = caught_up(self._boards.get(game_id), game)
                    stopped = self._stops.setdefault(game_id, asyncio.Event())
                    after = await server_move(self.games, game, seat, self.budget, board, stopped)
                except UnknownGameError:
                    return  # evicted meanwhile
                if after is None:
                    return  # aborted while its agent thought
                self._publish(game, after)

    def _publish(self, before: Game, after: Game) -> None:
        """Tell the spectators what changed from ``before`` to ``after``; release the agents of
        a game that has just ended."""
        if len(after.move_history) > len(before.move_history):
            self._broadcast(after.game_id, move_made_frame(after))
        if after.is_over and not before.is_over:
            self._broadcast(after.game_id, ended_frame(after))
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
        close_seats(self._seats.pop(game_id, {}))
        self._boards.pop(game_id, None)
        self._stops.pop(game_id, None)
        self._creators.pop(game_id, None)
        self._tokens.pop(game_id, None)
        self._public.discard(game_id)
        self._aborted.discard(game_id)
        self._locks.pop(game_id, None)

    def _retire_seats(self, game_id: str) -> None:
        """Close a finished game's agents, keeping their players for the summaries."""
        seats = self._seats.get(game_id)
        self._boards.pop(game_id, None)
        if seats is not None:
            self._seats[game_id] = {color: Seat(seat.player) for color, seat in seats.items()}
            close_seats(seats)

    def _end_streams(self, game_id: str) -> None:
        for queue in self._spectators.pop(game_id, set()):
            self._watching.pop(queue, None)
            _end_stream(queue)


def _service_data(
    request: CreateGameRequest, tokens: SeatDigests, client: str | None
) -> dict[str, Any]:
    """What the store keeps with a game for a restart: the seats' specs, the tokens' digests,
    whether it is listed and who created it."""
    return {
        "seats": {
            "white": request.white.model_dump(mode="json"),
            "black": request.black.model_dump(mode="json"),
        },
        "tokens": tokens.model_dump(mode="json"),
        "public": request.listed,
        "creator": client,
    }


def _end_stream(queue: Spectator) -> None:
    """Make None the next thing ``queue`` gives, dropping what is still queued."""
    while not queue.empty():
        queue.get_nowait()
    queue.put_nowait(None)
