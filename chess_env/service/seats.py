"""Server agents: the seat of each side of a game, and the server agent's move on its turn.

- ``Seat``: a side's kind and, for a server agent (engine, random, greedy), the ``Opponent`` that
  moves for it; ``REMOTE_SEATS``: both sides played by clients
- ``seat_for(spec, config)``: the seat an ``AgentSpec`` asks for (``EngineUnavailableError``
  without Stockfish); ``close_seats(seats)``
- ``server_move(games, game, seat)``: the game after the seat's agent has moved, in a worker
  thread within its ``timeout``: a late move loses on time, and an agent that raises or answers an
  illegal move resigns for its side (termination "agent_error", the error logged)
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import chess
from starlette.concurrency import run_in_threadpool

from chess_env.errors import StockfishNotFoundError
from chess_env.game import AgentConfig, Color, Game
from chess_env.game_store import StateManager
from chess_env.opponents import GreedyOpponent, Opponent, RandomOpponent, StockfishOpponent
from chess_env.service.errors import EngineUnavailableError
from chess_env.service.models import AgentKind, AgentSpec

__all__ = ["REMOTE_SEATS", "Seat", "close_seats", "seat_for", "server_move"]

# The package's one logger, named as before the split: log settings name "chess_env.service".
logger = logging.getLogger("chess_env.service")


@dataclass
class Seat:
    """One side of a game: its kind and, for a server agent, the opponent that moves for it.

    Example:
        >>> seat = Seat("greedy", GreedyOpponent(), timeout=5.0)
        >>> seat.opponent(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")).uci()
        'a1a8'
        >>> seat.close()  # ends an engine's process; a remote seat holds none
        >>> REMOTE_SEATS["white"]
        Seat(kind='remote', opponent=None, timeout=30.0)
    """

    kind: AgentKind
    opponent: Opponent | None = None
    timeout: float = 30.0

    def close(self) -> None:
        if self.opponent is not None:
            try:
                self.opponent.close()
            except Exception:  # one engine failing to quit must not keep the others running
                logger.exception("closing the %s agent failed", self.kind)


REMOTE_SEATS: dict[Color, Seat] = {"white": Seat("remote"), "black": Seat("remote")}


def seat_for(spec: AgentSpec, config: AgentConfig) -> Seat:
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
    return Seat(spec.kind, opponent, config.timeout_seconds)


def close_seats(seats: dict[Color, Seat]) -> None:
    for seat in seats.values():
        seat.close()


async def server_move(games: StateManager, game: Game, seat: Seat) -> Game:
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
        return await run_in_threadpool(games.timeout, game_id, color)
    except Exception:
        logger.exception("the %s agent (%s) of game %s failed", seat.kind, color, game_id)
        return await run_in_threadpool(games.resign, game_id, color, "agent_error")
    if chosen not in legal:
        logger.error(
            "the %s agent (%s) of game %s answered %r, not a legal move in %s",
            seat.kind,
            color,
            game_id,
            chosen,
            game.board_state.fen,
        )
        return await run_in_threadpool(games.resign, game_id, color, "agent_error")
    elapsed = time.perf_counter() - started
    return await run_in_threadpool(games.apply_move, game_id, chosen.uci(), elapsed)
