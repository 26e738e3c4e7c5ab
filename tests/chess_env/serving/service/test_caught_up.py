"""``caught_up``: the board a game's server agent sees, brought up to date a move at a time."""

from __future__ import annotations

import random

import chess

from chess_env.core.game import AgentConfig, Game
from chess_env.serving.service.seats import caught_up

AGENT = {"personality": "p", "model_name": "m", "system_prompt": ""}


def new_game() -> Game:
    return Game.new(
        AgentConfig(agent_id="white", name="W", **AGENT),
        AgentConfig(agent_id="black", name="B", **AGENT),
    )


def test_a_kept_board_takes_only_the_new_moves_and_matches_a_fresh_one() -> None:
    rng, game, board = random.Random(5), new_game(), None
    pushes: list[int] = []
    for _ in range(120):
        if game.is_over:
            break
        legal = list(caught_up(None, game).legal_moves)
        game = game.with_move(rng.choice(legal).uci())
        before = None if board is None else len(board.move_stack)
        board = caught_up(board, game)
        pushes.append(len(board.move_stack) - (before or 0))
        fresh = caught_up(None, game)
        assert board.fen() == fresh.fen() and board.move_stack == fresh.move_stack
    assert set(pushes[1:]) == {1}  # one push a move, however long the game


def test_a_board_of_another_line_is_made_again() -> None:
    game = new_game().with_move("e4").with_move("e5")
    other = chess.Board()
    other.push_uci("d2d4")
    board = caught_up(other, game)
    assert [move.uci() for move in board.move_stack] == ["e2e4", "e7e5"]
    longer = caught_up(None, game.with_move("Nf3"))
    assert caught_up(longer, game).move_stack == board.move_stack  # ahead of the game: made again
