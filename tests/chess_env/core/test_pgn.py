"""``chess_env.core.pgn``: no tag value can end its tag, in every PGN chess_env writes (the game
model's ``to_pgn`` is tested with the models; training's evaluation in tests/training)."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import chess.pgn
import pytest

from chess_env.core.pgn import set_tags, tag_value
from chess_env.text.evaluation import GameRecord, _pgn
from chess_env.text.play import play_game

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from forged_pgn import FORGED, read_games


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("Magnus Carlsen", "Magnus Carlsen"),
        ('a"b', "a'b"),
        ("a\\b", "a/b"),
        ("a]\n[b", "a] [b"),
        ("a\r\nb\tc", "a  b c"),
        ("a\u2028b\x85c\x0bd", "a b c d"),
        ("lone \ud800 surrogate", "lone   surrogate"),
        ("Ünïcødé ♞ 名前", "Ünïcødé ♞ 名前"),
    ],
)
def test_tag_value_keeps_text_and_spaces_what_breaks_a_tag(text: str, safe: str) -> None:
    assert tag_value(text) == safe
    game = chess.pgn.Game()
    set_tags(game, White=text)
    (parsed,) = read_games(str(game))
    assert parsed.headers["White"] == safe


def test_the_evaluation_pgn_is_one_game_whatever_the_names() -> None:
    record = GameRecord(
        seed=0,
        agent_color="white",
        result="0-1",
        outcome="illegal_move",
        score="loss",
        plies=0,
        moves=0,
        illegal_attempts=1,
        timed_out=False,
        thinking_time=0.0,
    )
    (parsed,) = read_games(_pgn(chess.Board(), record, FORGED, "random\n[Result", 1))
    assert parsed.headers["White"] == tag_value(FORGED)
    assert parsed.headers["Black"] == "random [Result"
    assert parsed.headers["Result"] == "0-1"


def test_a_played_game_s_pgn_is_one_game_whatever_its_event() -> None:
    played = play_game("random", "random", seed=1, max_plies=4, event=FORGED)
    (parsed,) = read_games(str(played.pgn))
    assert parsed.headers["Event"] == tag_value(FORGED) and parsed.headers["Result"] == "*"
    assert len(list(parsed.mainline_moves())) == 4
