"""A short game between two built-in players, printed as a board, a PGN and the outcome."""

from __future__ import annotations

import datetime

import chess
import chess.pgn

from chess_env.players import make_player
from chess_env.render import render_ansi
from chess_env.rules import ChessGame

__all__ = ["play_game"]


def play_game(
    white: str = "greedy", black: str = "random", *, seed: int = 0, max_plies: int | None = 200
) -> tuple[ChessGame, chess.pgn.Game]:
    """Play ``white`` against ``black`` (opponent names) with the shared rules core."""
    players = {chess.WHITE: make_player(white), chess.BLACK: make_player(black)}
    for offset, player in enumerate(players.values()):
        player.reset(seed=seed + offset)
    game = ChessGame(max_plies=max_plies)
    try:
        while not game.is_over:
            game.play(players[game.board.turn].choose_move(game.board, game.legal_moves))
    finally:
        for player in players.values():
            player.close()
    pgn = chess.pgn.Game.from_board(game.board)
    pgn.headers.update(
        Event="polyarena demo",
        Date=datetime.date.today().strftime("%Y.%m.%d"),
        White=white,
        Black=black,
        Result=game.outcome.result() if game.outcome else "*",
    )
    return game, pgn


def describe(game: ChessGame) -> str:
    if game.outcome is None:
        return f"unfinished after {game.plies} plies (max_plies reached)"
    winner = {chess.WHITE: "white wins", chess.BLACK: "black wins", None: "draw"}
    return (
        f"{game.outcome.result()} ({winner[game.outcome.winner]} by "
        f"{game.outcome.termination.name.lower()}) after {game.plies} plies"
    )


def main(white: str, black: str, seed: int, max_plies: int | None) -> None:
    game, pgn = play_game(white, black, seed=seed, max_plies=max_plies)
    print(render_ansi(game.board))
    print()
    print(pgn)
    print()
    print(f"Outcome: {describe(game)}")
