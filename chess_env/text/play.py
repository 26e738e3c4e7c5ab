"""A game between two players of ``chess_env.core.players``, watched move by move if asked.

``play_game(white, black)`` is what ``python -m chess_env demo`` and ``play`` run: the rules core
(``ChessGame``, with the envs' draw claims and ply cap), a seed for each side, and a ``PlayedGame``
with the PGN. A player that cannot move (``PlayerFailedError``: an engine that died or overran,
a person who resigned) or answers an illegal move loses the game.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

import chess
import chess.pgn

from chess_env.core.pgn import set_tags
from chess_env.core.players import PlayerLike, make_player
from chess_env.core.rules import ChessGame
from chess_env.errors import PlayerFailedError

__all__ = ["PlayedGame", "play_game"]


@dataclass
class PlayedGame:
    """A finished game: the rules' record, the PGN and, when a side lost by failing, which."""

    game: ChessGame
    pgn: chess.pgn.Game
    failed: chess.Color | None = None
    failure: str = ""

    @property
    def result(self) -> str:
        if self.failed is not None:
            return "0-1" if self.failed == chess.WHITE else "1-0"
        return self.game.outcome.result() if self.game.outcome else "*"

    def describe(self) -> str:
        """The result and how the game ended, in words."""
        plies = self.game.plies
        if self.failed is not None:
            return f"{self.result} ({chess.COLOR_NAMES[self.failed]} failed: {self.failure})"
        outcome = self.game.outcome
        if outcome is None:
            return f"unfinished after {plies} plies (max_plies reached)"
        winner = {chess.WHITE: "white wins", chess.BLACK: "black wins", None: "draw"}
        ending = outcome.termination.name.lower()
        return f"{outcome.result()} ({winner[outcome.winner]} by {ending}) after {plies} plies"


def play_game(
    white: PlayerLike = "greedy",
    black: PlayerLike = "random",
    *,
    seed: int = 0,
    max_plies: int | None = 200,
    on_move: Callable[[ChessGame, chess.Move], None] | None = None,
    event: str = "polyarena game",
) -> PlayedGame:
    """Play ``white`` against ``black`` (any players); ``on_move(game, move)`` sees each move
    after it is played. White is seeded with ``seed``, black with ``seed + 1``.

    Example:
        >>> played = play_game("greedy", "random", seed=3, max_plies=20)
        >>> played.game.plies, played.pgn.headers["White"], played.result
        (20, 'greedy', '*')
    """
    players = {chess.WHITE: make_player(white), chess.BLACK: make_player(black)}
    for offset, player in enumerate(players.values()):
        player.reset(seed=seed + offset)
    game = ChessGame(max_plies=max_plies)
    failed, failure = None, ""
    try:
        while not game.is_over:
            mover = game.board.turn
            try:
                move = players[mover].choose_move(game.board.copy(), game.legal_moves)
            except PlayerFailedError as error:
                failed, failure = mover, str(error)
                break
            if not isinstance(move, chess.Move) or not game.is_legal(move):
                failed, failure = mover, f"answered {move!r}, not a legal move"
                break
            game.play(move)
            if on_move is not None:
                on_move(game, move)
    finally:
        for player in players.values():
            player.close()
    played = PlayedGame(game, chess.pgn.Game.from_board(game.board), failed, failure)
    set_tags(
        played.pgn,
        Event=event,
        Date=datetime.date.today().strftime("%Y.%m.%d"),
        White=players[chess.WHITE].name,
        Black=players[chess.BLACK].name,
        Result=played.result,
    )
    if failed is not None:
        set_tags(played.pgn, Termination=f"{chess.COLOR_NAMES[failed]} failed: {failure}")
    return played
