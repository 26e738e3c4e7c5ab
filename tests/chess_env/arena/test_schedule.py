"""The schedule: who meets whom, with which opening and colours, and each game's stable seed."""

from __future__ import annotations

from collections import Counter

import pytest

from chess_env.arena.openings import load_openings, pick_openings
from chess_env.arena.schedule import game_seed, pairings, schedule


def test_round_robin_meets_every_pair_once() -> None:
    pairs = pairings(["a", "b", "c"], ["x"], "round-robin")
    assert len(pairs) == 6
    assert {frozenset(pair) for pair in pairs} == {
        frozenset(pair) for pair in [("a", "b"), ("a", "c"), ("a", "x"), ("b", "c"), ("b", "x"),
                                     ("c", "x")]
    }  # fmt: skip


def test_gauntlet_plays_candidates_against_the_ladder_and_the_ladder_among_itself() -> None:
    pairs = pairings(["a", "b"], ["x", "y", "z"], "gauntlet")
    candidates = [pair for pair in pairs if pair[0] in ("a", "b")]
    assert len(candidates) == 6 and all(pair[1] in ("x", "y", "z") for pair in candidates)
    assert ("a", "b") not in pairs and ("b", "a") not in pairs
    assert sorted(pair for pair in pairs if pair[0] not in ("a", "b")) == [
        ("x", "y"),
        ("x", "z"),
        ("y", "z"),
    ]


@pytest.mark.parametrize(
    ("players", "anchors", "format", "message"),
    [
        (["a", "a"], [], "round-robin", "repeated: a"),
        (["a"], ["a"], "gauntlet", "repeated: a"),
        (["a"], [], "round-robin", "at least two"),
        (["a", "b"], [], "gauntlet", "needs a ladder"),
        (["a", "b"], [], "swiss", "'round-robin' or 'gauntlet'"),
    ],
)
def test_bad_pairings_are_refused(players, anchors, format, message) -> None:
    with pytest.raises(ValueError, match=message):
        pairings(players, anchors, format)


def test_every_pairing_plays_each_opening_with_both_colours() -> None:
    suite = load_openings("default")
    openings = pick_openings(suite, 5, seed=3)
    pairs = pairings(["a", "b"], ["x"], "round-robin")
    games = schedule(pairs, openings, 10, seed=3)
    assert len(games) == 30
    assert [game.index for game in games] == list(range(30))
    assert len({game.game_id for game in games}) == 30
    for first, second in pairs:
        met = [game for game in games if {game.white, game.black} == {first, second}]
        by_opening = Counter((game.opening.id, game.white) for game in met)
        assert set(by_opening.values()) == {1}
        assert {opening_id for opening_id, _ in by_opening} == {o.id for o in openings}
        assert Counter(game.white for game in met) == {first: 5, second: 5}


def test_more_games_than_openings_replays_them_in_rounds_with_new_seeds() -> None:
    games = schedule([("a", "b")], load_openings("startpos").openings, 6, seed=0)
    assert [game.game_id.split("-")[2] for game in games] == ["r0", "r0", "r1", "r1", "r2", "r2"]
    assert len({game.seed for game in games}) == 6


def test_seeds_depend_on_the_game_and_the_tournament_seed_only() -> None:
    suite = load_openings("default").openings
    small = schedule([("a", "b")], suite[:2], 4, seed=7)
    large = schedule([("a", "b"), ("a", "c")], suite[:2], 4, seed=7)
    seeds = {game.game_id: game.seed for game in large}
    assert all(seeds[game.game_id] == game.seed for game in small)
    assert game_seed(7, "p0-x-r0-ab") != game_seed(8, "p0-x-r0-ab")


@pytest.mark.parametrize("games_per_pair", [0, 1, 3, 7])
def test_odd_or_too_few_games_per_pair_are_refused(games_per_pair: int) -> None:
    with pytest.raises(ValueError, match="even number"):
        schedule([("a", "b")], load_openings("startpos").openings, games_per_pair, seed=0)
