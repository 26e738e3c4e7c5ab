"""``ChessService``: the games of one ``StateManager``, their server agents and their spectators.

It turns requests into the state manager's calls, one at a time per game (a lock each), lets the
server agents move on their turn (a driver task per game), tells the spectators each change
(a queue each; None ends a stream), and drops idle games every ``cleanup_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.concurrency import run_in_threadpool

from chess_env.errors import InvalidPositionError
from chess_env.game import Color, Game, GameSession, GameStatus
from chess_env.game_store import GameNotFoundError, SessionNotFoundError, StateManager
from chess_env.service.errors import translated
from chess_env.service.frames import ended_frame, move_made_frame
from chess_env.service.models import CreateGameRequest, GameSummary, MoveRequest
from chess_env.service.seats import REMOTE_SEATS, Seat, close_seats, seat_for, server_move
from envkit.server.errors import EpisodeStateError, InvalidInputError

__all__ = ["QUEUE_SIZE", "ChessService"]

# One logger for the whole service package, so one log setting covers all its modules.
logger = logging.getLogger("chess_env.service")

QUEUE_SIZE = 1024  # events a spectator may lag behind before it is dropped


class ChessService:
    """The games of one ``StateManager``, their server agents and their spectators.

    All methods run on the app's event loop; the per-game ``asyncio.Lock`` makes the turn check
    and the move one step, so two requests never play for the same turn.

    Args:
        state_manager: where the games and their sessions live.
        cleanup_interval: seconds between two sweeps for idle games (default 60).

    Example:
        >>> from chess_env.game_store import StateManager
        >>> from chess_env.service.models import AgentSpec
        >>> request = CreateGameRequest(white=AgentSpec(player="remote", name="Me"),
        ...                             black=AgentSpec(player="greedy", name="G", seed=0))
        >>> async def open_game(service: ChessService) -> list[str]:
        ...     game = await service.create(request)
        ...     game = await service.move(game.game_id, MoveRequest(move="e4"))  # G replies
        ...     await service.close()
        ...     return [move.uci_notation for move in game.move_history]
        >>> asyncio.run(open_game(ChessService(StateManager(max_games=10))))
        ['e2e4', 'c7c5']
    """

    def __init__(self, state_manager: StateManager, *, cleanup_interval: float = 60.0) -> None:
        if not cleanup_interval > 0:
            raise ValueError(f"cleanup_interval must be positive, got {cleanup_interval}")
        self.games = state_manager
        self.cleanup_interval = cleanup_interval
        self._seats: dict[str, dict[Color, Seat]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._spectators: dict[str, set[asyncio.Queue[dict[str, Any] | None]]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- games ----------------------------------------------------------------------------------

    async def create(self, request: CreateGameRequest) -> Game:
        """A new game; server agents play until a remote one is to move (all of it, if none is:
        in the background)."""
        configs = {"white": request.white.config("white"), "black": request.black.config("black")}
        seats: dict[Color, Seat] = {}
        try:
            seats["white"] = seat_for(request.white, configs["white"])
            seats["black"] = seat_for(request.black, configs["black"])
            game = await run_in_threadpool(
                self.games.create_game, configs["white"], configs["black"], request.fen
            )
        except InvalidPositionError as error:
            close_seats(seats)
            raise InvalidInputError(str(error), reason="invalid_position") from None
        except BaseException:
            close_seats(seats)
            raise
        self._seats[game.game_id] = seats
        self._forget_gone()
        self._start_sweeping()
        driver = self._drive(game.game_id)
        if not any(seat.remote for seat in seats.values()):
            return game
        await asyncio.wait({driver})  # unlike awaiting it: a client leaving does not cancel it
        return self.get(game.game_id)

    def get(self, game_id: str) -> Game:
        with translated():
            return self.games.get_game(game_id)

    def session(self, game_id: str) -> GameSession:
        """The game's session: its spectators, activity and whether it is live."""
        with translated():
            return self.games.session_of(game_id)

    def summaries(self, status: GameStatus | None) -> list[GameSummary]:
        summaries = []
        for game in self.games.list_games(status):
            try:
                session = self.games.session_of(game.game_id)
            except GameNotFoundError:
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
                )
            )
        return summaries

    async def move(self, game_id: str, request: MoveRequest) -> Game:
        """Play a remote agent's move, then the server agent's replies."""
        async with self._lock(game_id):
            before = self.get(game_id)
            self._check_remote_turn(before, request.color)
            with translated():
                after = await run_in_threadpool(
                    self.games.apply_move, game_id, request.move, request.thinking_time
                )
            self._publish(before, after)
        await asyncio.wait({self._drive(game_id)})  # a client leaving must not stop the agent
        return self.get(game_id)

    async def resign(self, game_id: str, color: Color) -> Game:
        async with self._lock(game_id):
            before = self.get(game_id)
            with translated():
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
        seat = self._seats.get(game.game_id, REMOTE_SEATS)[turn]
        if not seat.remote:
            raise EpisodeStateError(
                f"it is {turn}'s turn in game {game.game_id}, played by the server's "
                f"{seat.player} agent",
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
                    seat = self._seats.get(game_id, REMOTE_SEATS)[game.current_turn]
                    if game.is_over or seat.opponent is None:
                        return
                    after = await server_move(self.games, game, seat)
                except GameNotFoundError:
                    return  # evicted meanwhile
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
        self._locks.pop(game_id, None)

    def _retire_seats(self, game_id: str) -> None:
        """Close a finished game's agents, keeping their players for the summaries."""
        seats = self._seats.get(game_id)
        if seats is not None:
            self._seats[game_id] = {color: Seat(seat.player) for color, seat in seats.items()}
            close_seats(seats)

    def _end_streams(self, game_id: str) -> None:
        for queue in self._spectators.pop(game_id, set()):
            _end_stream(queue)


def _end_stream(queue: asyncio.Queue[dict[str, Any] | None]) -> None:
    """Make None the next thing ``queue`` gives, dropping what is still queued."""
    while not queue.empty():
        queue.get_nowait()
    queue.put_nowait(None)
