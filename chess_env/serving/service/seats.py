"""Server agents: the seat of each side of a game, and the server agent's move on its turn.

- ``Seat``: a side's player ("remote" or a spec) and, for a server agent, the ``ServedPlayer``
  that moves for it; ``REMOTE_SEATS``: both sides played by clients
- ``seat_for(spec, config, budget, client)``: the seat an ``AgentSpec`` asks for, its player made
  by the server's ``ThinkingBudget`` for the client creating the game
  (``EngineUnavailableError`` without Stockfish, ``EngineLimitError`` when no engine is free)
- ``close_seats(seats)``
- ``caught_up(board, game)``: a board kept for a game brought to its last move, a move at a time
- ``server_move(games, game, seat, budget, board, stopped)``: the game after the seat's agent has
  moved, or None when ``stopped`` is set first (an abort does not wait for a search):
  a quick player at once, a searching one on the budget's threads once a search slot is free,
  within its ``timeout`` of thinking (the wait for a slot is not counted): a late move loses on
  time, and an agent that raises or answers an illegal move resigns for its side (termination
  "agent_error", the error logged)
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import chess
from starlette.concurrency import run_in_threadpool

from chess_env.core.game import AgentConfig, Color, Game
from chess_env.errors import PlayerFailedError, PlayerSpecError, StockfishNotFoundError
from chess_env.serving.game_store import StateManager
from chess_env.serving.service.bodies import REMOTE, AgentSpec
from chess_env.serving.service.errors import EngineUnavailableError
from chess_env.serving.thinking import ServedPlayer, ThinkingBudget
from envkit.server.errors import ErrorDetail, InvalidInputError

__all__ = ["REMOTE_SEATS", "Seat", "caught_up", "close_seats", "seat_for", "server_move"]

# One logger for the whole service package, so one log setting covers all its modules.
logger = logging.getLogger("chess_env.serving.service")


@dataclass
class Seat:
    """One side of a game: its player ("remote" or a spec) and, for a server agent, the
    player that moves for it.

    Example:
        >>> greedy, budget = AgentSpec(player="greedy", name="G"), ThinkingBudget()
        >>> seat = seat_for(greedy, greedy.config("white"), budget, client="10.0.0.1")
        >>> seat.opponent(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")).uci()
        'a1a8'
        >>> seat.close()  # ends an engine's process and frees its slot; a remote seat holds none
        >>> REMOTE_SEATS["white"]
        Seat(player='remote', opponent=None, timeout=30.0)
        >>> budget.close()
    """

    player: str
    opponent: ServedPlayer | None = None
    timeout: float = 30.0

    @property
    def remote(self) -> bool:
        return self.player == REMOTE

    def close(self) -> None:
        if self.opponent is not None:
            try:
                self.opponent.close()
            except Exception:  # one engine failing to quit must not keep the others running
                logger.exception("closing the %s agent failed", self.player)


REMOTE_SEATS: dict[Color, Seat] = {"white": Seat(REMOTE), "black": Seat(REMOTE)}


def seat_for(
    spec: AgentSpec, config: AgentConfig, budget: ThinkingBudget, client: str | None
) -> Seat:
    """The seat for ``spec``, its player made for ``client`` within ``budget``; a missing or
    failing Stockfish is ``EngineUnavailableError`` (503), no free engine ``EngineLimitError``
    (503), a setting the player or the server refuses ``InvalidInputError`` (422)."""
    if spec.player == REMOTE:
        return Seat(REMOTE, None, config.timeout_seconds)
    try:
        opponent = budget.make(spec.player, client)
    except (StockfishNotFoundError, PlayerFailedError) as error:
        raise EngineUnavailableError(str(error), reason="engine_unavailable") from None
    except PlayerSpecError as error:
        where = ("body", config.agent_id, "player")  # agent_id is the side: white.player
        detail = ErrorDetail(loc=where, msg=str(error), type="value_error")
        message = f"{config.agent_id}.player: {error}"
        raise InvalidInputError(message, reason="invalid_player", errors=[detail]) from None
    opponent.reset(spec.seed)
    return Seat(spec.player, opponent, config.timeout_seconds)


def close_seats(seats: dict[Color, Seat]) -> None:
    for seat in seats.values():
        seat.close()


async def server_move(
    games: StateManager,
    game: Game,
    seat: Seat,
    budget: ThinkingBudget,
    board: chess.Board,
    stopped: asyncio.Event,
) -> Game | None:
    """The game after the server agent's move; it loses on time when it thinks longer than its
    timeout, and resigns ("agent_error") when it raises or answers an illegal move. ``board``
    is the game's position with its whole move stack (``caught_up``), which engines need to see
    repetitions; the agent gets a copy. None: ``stopped`` was set (the game was aborted) while
    the agent thought; its thought is dropped."""
    assert seat.opponent is not None
    legal = list(board.legal_moves)
    board = board.copy()  # the agent might push on it
    color, game_id = game.current_turn, game.game_id
    thinking = asyncio.ensure_future(budget.think(seat.opponent, board, legal, seat.timeout))
    stopping = asyncio.ensure_future(stopped.wait())
    either: set[asyncio.Future[Any]] = {thinking, stopping}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not thinking.done():
            thinking.cancel()
    if thinking.cancelled() or not thinking.done():  # stopped first: the thought is dropped
        return None
    try:
        chosen, seconds = thinking.result()
    except TimeoutError:
        return await run_in_threadpool(games.timeout, game_id, color)
    except Exception:
        logger.exception("the %s agent (%s) of game %s failed", seat.player, color, game_id)
        return await run_in_threadpool(games.resign, game_id, color, "agent_error")
    if chosen not in legal:
        logger.error(
            "the %s agent (%s) of game %s answered %r, not a legal move in %s",
            seat.player,
            color,
            game_id,
            chosen,
            game.board_state.fen,
        )
        return await run_in_threadpool(games.resign, game_id, color, "agent_error")
    return await run_in_threadpool(games.apply_move, game_id, chosen.uci(), seconds)


def caught_up(board: chess.Board | None, game: Game) -> chess.Board:
    """``board`` (kept from the game's last server move, or None) at ``game``'s position: the
    moves since pushed onto it, so that a move costs the same however long the game is; a
    board that is not a prefix of the game's moves is made again from its start.

    Example:
        >>> from chess_env.core.game import AgentConfig
        >>> agent = dict(personality="p", model_name="m", system_prompt="")
        >>> game = Game.new(AgentConfig(agent_id="white", name="W", **agent),
        ...                 AgentConfig(agent_id="black", name="B", **agent)).with_move("e4")
        >>> board = caught_up(None, game)
        >>> caught_up(board, game.with_move("e5")) is board, board.fen().split()[0]
        (True, 'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR')
    """
    history = game.move_history
    played = len(board.move_stack) if board is not None else 0
    if (
        board is None
        or played > len(history)
        or (played and board.move_stack[-1].uci() != history[played - 1].uci_notation)
    ):
        board, played = chess.Board(game.start_fen), 0
    for move in history[played:]:
        board.push(chess.Move.from_uci(move.uci_notation))
    return board
