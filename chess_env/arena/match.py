"""One arena game, from its opening to its ``ArenaGame`` record.

- ``PlayerPool``: players made once per process and reset for each game (a model loads once, an
  engine starts once); ``fresh=True`` makes new ones per game, for games run in threads.
- ``play_scheduled(game, pool, max_plies)``: plays it on the rules core (``ChessGame``, with the
  envs' draw claims), timing every move and keeping what a text player reports about it.

How a game can end besides the rules (``chess_env.arena.results.ENDINGS``):
- ``illegal_move``: a text player gave no legal answer within its retries (it loses);
- ``player_failed``: a player could not move (an engine died or overran) or returned something
  that is not a legal move (it loses);
- ``endpoint_failure``: an LLM's endpoint failed after its retries (``envkit.llm.ChatError``).
  That is not a chess result: the game is recorded without one and a rerun plays it again;
- ``max_plies``: still going after ``max_plies`` plies: a draw.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import chess

from chess_env.arena.results import ArenaGame, MoveRecord
from chess_env.arena.schedule import ScheduledGame
from chess_env.core.opponents import Opponent
from chess_env.core.players import make_player
from chess_env.core.rules import ChessGame
from chess_env.errors import MoveRetriesExhaustedError, PlayerFailedError
from chess_env.text.prompt_conditions import PromptCondition
from envkit.llm.client import ChatError

__all__ = ["PlayerPool", "play_scheduled"]


class PlayerPool:
    """Players by spec, made on first use.

    Example:
        >>> pool = PlayerPool()
        >>> with pool.players("greedy", "random") as (white, black):
        ...     white.name, black.name
        ('greedy', 'random')
        >>> pool.close()
    """

    def __init__(self, *, fresh: bool = False) -> None:
        self.fresh = fresh
        self._players: dict[str, Opponent] = {}

    @contextmanager
    def players(self, white: str, black: str) -> Iterator[tuple[Opponent, Opponent]]:
        if self.fresh:
            made = [make_player(white), make_player(black)]
            try:
                yield made[0], made[1]
            finally:
                for player in made:
                    player.close()
            return
        yield self._get(white), self._get(black)

    def _get(self, spec: str) -> Opponent:
        if spec not in self._players:
            self._players[spec] = make_player(spec)
        return self._players[spec]

    def close(self) -> None:
        for player in self._players.values():
            player.close()
        self._players.clear()


def play_scheduled(scheduled: ScheduledGame, pool: PlayerPool, max_plies: int) -> ArenaGame:
    """Play ``scheduled`` to its end and return its record (see the module docstring)."""
    opening = scheduled.opening
    game = ChessGame(opening.board(), max_plies=max_plies)
    moves: list[MoveRecord] = []
    failed: chess.Color | None = None
    ending, failure = None, ""
    started = time.perf_counter()
    with pool.players(scheduled.white, scheduled.black) as (white, black):
        sides = {chess.WHITE: white, chess.BLACK: black}
        white.reset(seed=scheduled.seed)
        black.reset(seed=scheduled.seed + 1)
        conditions = {
            chess.COLOR_NAMES[color]: condition.label
            for color, player in sides.items()
            if isinstance(condition := getattr(player, "condition", None), PromptCondition)
        }
        while not game.is_over:
            mover = game.board.turn
            player = sides[mover]
            if hasattr(player, "last_decision"):
                player.last_decision = None  # what it reports next is about this move only
            before = time.perf_counter()
            try:
                move = player.choose_move(game.board.copy(), game.legal_moves)
            except ChatError as error:
                failed, ending, failure = mover, "endpoint_failure", str(error)
                break
            except MoveRetriesExhaustedError as error:
                failed, ending, failure = mover, "illegal_move", str(error)
                break
            except PlayerFailedError as error:
                failed, ending, failure = mover, "player_failed", str(error)
                break
            seconds = time.perf_counter() - before
            if not isinstance(move, chess.Move) or not game.is_legal(move):
                failed, ending = mover, "player_failed"
                failure = f"answered {move!r}, not a legal move"
                break
            moves.append(_move_record(game.board, move, seconds, player))
            game.play(move)
        unplayed = _unplayed_move(player) if failed is not None else None
    return ArenaGame(
        game_id=scheduled.game_id,
        index=scheduled.index,
        white=scheduled.white,
        black=scheduled.black,
        opening_id=opening.id,
        opening_name=opening.name,
        root_fen=opening.root_fen,
        opening_moves=list(opening.moves),
        seed=scheduled.seed,
        moves=moves,
        unplayed=unplayed,
        result=_result(game, failed, ending),
        ending=ending or game.ending or "max_plies",
        failed_side=None if failed is None else chess.COLOR_NAMES[failed],
        failure=failure[:2000],
        conditions=conditions,
        wall_seconds=time.perf_counter() - started,
    )


def _result(game: ChessGame, failed: chess.Color | None, ending: str | None) -> Any:
    if ending == "endpoint_failure":
        return None
    if failed is not None:
        return "0-1" if failed == chess.WHITE else "1-0"
    return game.outcome.result() if game.outcome is not None else "1/2-1/2"


def _move_record(board: chess.Board, move: chess.Move, seconds: float, player: Any) -> MoveRecord:
    """The move with what its player reported about it (LLM players report a decision)."""
    decision = getattr(player, "last_decision", None)
    return _with_decision(decision, uci=move.uci(), san=board.san(move), seconds=seconds)


def _unplayed_move(player: Any) -> MoveRecord | None:
    """What a text player sent before it forfeited or its endpoint failed: a move that was not
    played (``uci`` empty) but whose refused answers and tokens still count."""
    decision = getattr(player, "last_decision", None)
    if decision is None or not decision.requests:
        return None
    return _with_decision(decision, uci="", san="", seconds=decision.seconds)


def _with_decision(decision: Any, **move: Any) -> MoveRecord:
    """A ``MoveRecord`` of ``move`` with the fields of a text player's ``MoveDecision``."""
    if decision is None:
        return MoveRecord(**move)
    return MoveRecord(
        **move,
        comment=decision.reasoning,
        rejected=list(decision.rejected),
        requests=decision.requests,
        tokens_in=decision.tokens_in,
        tokens_out=decision.tokens_out,
        endpoint_retries=decision.endpoint_retries,
    )
