"""training.evaluation: colours alternate, a seed replays a match, masks keep a policy legal and
an unmasked illegal choice is counted and lost, the PGN holds every game."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import chess
import chess.pgn
import gymnasium as gym
import pytest
import torch

from chess_env import ACTION_SIZE
from chess_env.core.encoding import N_PLANES, encode_move
from chess_env.core.env import board_space
from training.evaluation import evaluate
from training.policies import ChessCnnMaskablePolicy


def read_pgn(path: Path) -> list[chess.pgn.Game]:
    stream, games = io.StringIO(path.read_text(encoding="utf-8")), []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


@pytest.fixture(scope="module")
def rook_pusher() -> ChessCnnMaskablePolicy:
    """A policy whose top logit is always "rook a1 up one square" (in the mover's frame), which
    the pawn in front of it blocks for both colours at the start."""
    policy = ChessCnnMaskablePolicy(board_space(), gym.spaces.Discrete(ACTION_SIZE), lambda _: 0.0)
    plane = encode_move(chess.Move.from_uci("a1a2"), chess.WHITE)
    assert plane == encode_move(chess.Move.from_uci("a8a7"), chess.BLACK) < N_PLANES
    with torch.no_grad():
        policy.action_net.planes.weight.zero_()
        policy.action_net.planes.bias.zero_()
        policy.action_net.planes.bias[plane] = 10.0
    return policy


def test_the_pgn_results_are_the_rules_results_claimed_draws_too(tmp_path: Path) -> None:
    pgn = tmp_path / "games.pgn"
    result = evaluate("random", "random", games=40, seed=2, pgn_path=pgn)
    games = read_pgn(pgn)
    claimed = [
        g for g in games if g.headers["Termination"] in ("threefold_repetition", "fifty_moves")
    ]
    assert claimed  # draws python-chess's board.result() leaves as "*"
    assert all(game.headers["Result"] == "1/2-1/2" for game in claimed)
    unfinished = [g for g in games if g.headers["Result"] == "*"]
    assert all(game.headers["Termination"] == "max_plies" for game in unfinished)
    drawn = sum(game.headers["Result"] == "1/2-1/2" for game in games)
    assert drawn + len(unfinished) == result.draws


def test_colours_alternate_and_the_pgn_holds_every_game(tmp_path: Path) -> None:
    pgn = tmp_path / "games.pgn"
    result = evaluate("greedy", "random", games=4, seed=0, max_plies=40, pgn_path=pgn)
    assert result.white.games == result.black.games == 2
    games = read_pgn(pgn)
    assert [game.headers["White"] for game in games] == ["greedy", "random"] * 2
    assert [game.headers["Round"] for game in games] == ["1", "2", "3", "4"]
    terminations = [game.headers["Termination"] for game in games]
    assert {name: terminations.count(name) for name in terminations} == result.terminations
    for index, game in enumerate(games):
        board = game.end().board()
        assert board.ply() <= 40
        if game.headers["Termination"] == "max_plies":
            assert game.headers["Result"] == "*"
        elif game.headers["Termination"] == "checkmate":
            winner = "1-0" if board.turn == chess.BLACK else "0-1"
            agent_won = (winner == "1-0") == (index % 2 == 0)
            assert game.headers["Result"] == winner and agent_won == (result.checkmates > 0)


def test_a_seed_replays_the_match(tmp_path: Path) -> None:
    paths = [tmp_path / f"{name}.pgn" for name in ("a", "b", "c")]
    match = {"games": 4, "max_plies": 60}
    first = evaluate("random", "random", seed=5, pgn_path=paths[0], **match)
    second = evaluate("random", "random", seed=5, pgn_path=paths[1], **match)
    evaluate("random", "random", seed=6, pgn_path=paths[2], **match)
    assert first == second
    assert paths[0].read_text() == paths[1].read_text() != paths[2].read_text()


def test_random_against_random_is_even_within_the_interval() -> None:
    result = evaluate("random", "random", games=20, seed=0, max_plies=60)
    assert result.score_low <= 0.5 <= result.score_high


def test_greedy_beats_random() -> None:
    result = evaluate("greedy", "random", games=8, seed=0)
    assert result.wins > result.losses and result.score > 0.5
    assert result.checkmates == result.terminations.get("checkmate", 0) > 0


def test_a_masked_policy_never_plays_an_illegal_move(rook_pusher: ChessCnnMaskablePolicy) -> None:
    result = evaluate(rook_pusher, "random", games=4, seed=0, max_plies=30)
    assert result.illegal_actions == 0 and "illegal_action" not in result.terminations
    assert result.mean_plies > 1


def test_an_unmasked_illegal_move_is_counted_and_loses(
    rook_pusher: ChessCnnMaskablePolicy, tmp_path: Path
) -> None:
    pgn = tmp_path / "games.pgn"
    result = evaluate(rook_pusher, "random", games=4, seed=0, masked=False, pgn_path=pgn)
    assert result.illegal_actions == result.losses == 4
    assert result.terminations == {"illegal_action": 4}
    assert result.white.losses == result.black.losses == 2
    results = [game.headers["Result"] for game in read_pgn(pgn)]
    assert results == ["0-1", "1-0"] * 2  # the agent (white in even games) lost each


def test_evaluate_refuses_bad_players_and_counts_before_any_game() -> None:
    for agent, opponent, match in [
        ("nobody", "random", "unknown player 'nobody'"),
        ("random", "random:2", "random takes no ':' argument"),
        ("random", "stockfish:0", "depth must be in 1..30"),
        ("alphabeta:x", "random", "depth must be a whole number"),
    ]:
        with pytest.raises(ValueError, match=re.escape(match)):
            evaluate(agent, opponent, games=1)
    with pytest.raises(ValueError, match="at least 1"):
        evaluate("random", "random", games=0)


@pytest.mark.stockfish
@pytest.mark.skipif(
    shutil.which("stockfish") is None and not Path("/usr/games/stockfish").exists(),
    reason="needs the Stockfish binary",
)
def test_stockfish_beats_greedy() -> None:
    result = evaluate("greedy", "stockfish:1", games=2, seed=0)
    assert result.opponent == "stockfish:1" and result.losses == 2
