"""The arena's ratings: recovery of known strengths, the closed form, anchors, the prior, the
bootstrap, Wilson intervals and the score matrix. Every random draw comes from a fixed seed."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chess_env.arena.ratings import (
    GameScore,
    RatingFit,
    bradley_terry,
    expected_score,
    fit_ratings,
    score_matrix,
    wilson_interval,
)

TRUE = {f"p{rating}": float(rating) for rating in range(1200, 2401, 240)}
PLAYERS = list(TRUE)


def simulate(games_per_pair: int, seed: int) -> list[GameScore]:
    """A round robin drawn from ``TRUE``: each pair's expected score is the Elo one, and draws
    take min(E, 1 - E) of the games (many between equals, few in a mismatch)."""
    rng = np.random.default_rng(seed)
    games = []
    for i, a in enumerate(PLAYERS):
        for b in PLAYERS[i + 1 :]:
            e = expected_score(TRUE[a], TRUE[b])
            draw = min(e, 1 - e)
            u = rng.random(games_per_pair)
            scores = np.where(u < e - draw / 2, 1.0, np.where(u < e + draw / 2, 0.5, 0.0))
            for k, score in enumerate(scores.tolist()):
                games.append(GameScore(a, b, score) if k % 2 else GameScore(b, a, 1.0 - score))
    return games


def duel(points: float, games: int, prior_draws: float = 0.0) -> float:
    """The rating of "x" scoring ``points`` of ``games`` against "a", anchored at 1500."""
    wins, draws = int(points), int(points % 1 > 0)
    results = [1.0] * wins + [0.5] * draws + [0.0] * (games - wins - draws)
    played = [GameScore("x", "a", s) for s in results]
    return bradley_terry(played, ["a", "x"], {"a": 1500.0}, prior_draws=prior_draws)["x"]


# -- the fit ----------------------------------------------------------------------------------


def test_recovers_simulated_strengths_within_the_bootstrap_intervals() -> None:
    anchors = {"p1440": 1440.0, "p2160": 2160.0}  # the outer players are extrapolated
    fit = fit_ratings(simulate(100, seed=0), PLAYERS, anchors, bootstrap=500, seed=0)
    assert fit.games == 1500 and fit.unanchored == ()
    for name, rating in TRUE.items():
        if name not in anchors:
            assert fit.low[name] <= rating <= fit.high[name], (name, fit.low[name], fit.high[name])
            assert abs(fit.ratings[name] - rating) < 60, (name, fit.ratings[name])
            assert fit.low[name] < fit.ratings[name] < fit.high[name]


@pytest.mark.parametrize(("points", "games"), [(3, 4), (7.5, 10), (1, 10), (50, 100), (0.5, 3)])
def test_two_players_without_prior_match_the_closed_form(points: float, games: int) -> None:
    p = points / games
    assert duel(points, games) == pytest.approx(1500 + 400 * math.log10(p / (1 - p)), abs=1e-6)


def test_the_prior_counts_as_draws_in_the_closed_form() -> None:
    p = (3 + 0.5) / (4 + 1)
    assert duel(3, 4, prior_draws=1) == pytest.approx(
        1500 + 400 * math.log10(p / (1 - p)), abs=1e-6
    )


def test_the_fitted_ratings_reproduce_each_players_total_score() -> None:
    games = simulate(10, seed=3)
    ratings = bradley_terry(games, PLAYERS, prior_draws=0)
    for name in PLAYERS:
        mine = [g for g in games if name in (g.white, g.black)]
        scored = sum(g.score if g.white == name else 1 - g.score for g in mine)
        expected = sum(
            expected_score(ratings[name], ratings[g.black if g.white == name else g.white])
            for g in mine
        )
        assert expected == pytest.approx(scored, abs=1e-6)


def test_anchors_are_pinned_exactly_intervals_included() -> None:
    anchors = {"p1200": 1234.5, "p2400": 2345.25}
    fit = fit_ratings(simulate(10, seed=1), PLAYERS, anchors, bootstrap=50)
    for name, rating in anchors.items():
        assert fit.ratings[name] == fit.low[name] == fit.high[name] == rating
    assert fit.anchors == anchors


def test_without_anchors_the_mean_is_1500_and_every_player_unanchored() -> None:
    fit = fit_ratings(simulate(10, seed=2), PLAYERS, bootstrap=20)
    assert np.mean(list(fit.ratings.values())) == pytest.approx(1500, abs=1e-9)
    assert fit.unanchored == tuple(PLAYERS)


def test_a_group_with_no_game_path_to_an_anchor_is_centred_at_1500_and_reported() -> None:
    games = [GameScore("sf", "x", 0.5), GameScore("y", "z", 1.0), GameScore("z", "y", 0.5)]
    fit = fit_ratings(games, ["sf", "x", "y", "z"], {"sf": 2000.0}, bootstrap=20)
    assert fit.ratings["x"] == pytest.approx(2000)
    assert fit.ratings["y"] + fit.ratings["z"] == pytest.approx(3000)
    assert fit.ratings["y"] > fit.ratings["z"]
    assert fit.unanchored == ("y", "z")


def test_swapping_the_colours_of_every_game_changes_nothing() -> None:
    games = simulate(20, seed=4)
    swapped = [GameScore(g.black, g.white, 1.0 - g.score) for g in games]
    anchors = {"p1680": 1680.0}
    a = bradley_terry(games, PLAYERS, anchors)
    b = bradley_terry(swapped, PLAYERS, anchors)
    assert a == pytest.approx(b, abs=1e-9)


def test_a_perfect_score_is_finite_with_the_prior_and_an_error_without() -> None:
    games = [GameScore("x", "a", 1.0), GameScore("a", "x", 0.0)] * 5
    assert 1500 < bradley_terry(games, ["a", "x"], {"a": 1500.0})["x"] < 2500
    with pytest.raises(ValueError, match=r"^x: no finite rating with prior_draws=0"):
        bradley_terry(games, ["a", "x"], {"a": 1500.0}, prior_draws=0)


def test_without_prior_a_group_that_only_won_against_the_rest_is_named() -> None:
    games = [GameScore("x", "y", 1.0), GameScore("y", "x", 1.0)]  # x and y: even
    games += [GameScore("x", "a", 1.0), GameScore("a", "y", 0.0), GameScore("b", "a", 0.5)]
    with pytest.raises(ValueError, match=r"^x, y: no finite rating"):
        bradley_terry(games, ["a", "b", "x", "y"], {"a": 1500.0}, prior_draws=0)


def test_without_prior_a_bootstrap_resample_with_a_perfect_score_is_named() -> None:
    games = [GameScore("x", "a", 1.0), GameScore("x", "a", 0.0), GameScore("a", "x", 0.5)]
    assert fit_ratings(games, ["a", "x"], {"a": 1500.0}, prior_draws=0, bootstrap=0)
    with pytest.raises(ValueError, match=r"with prior_draws=0 in bootstrap resample \d+"):
        fit_ratings(games, ["a", "x"], {"a": 1500.0}, prior_draws=0, bootstrap=100)


def test_more_games_give_a_narrower_interval() -> None:
    anchors = {"p1200": 1200.0, "p2400": 2400.0}
    games = simulate(20, seed=5)
    few = fit_ratings(games, PLAYERS, anchors, bootstrap=300)
    many = fit_ratings(games * 4, PLAYERS, anchors, bootstrap=300)
    for name in ("p1440", "p1680", "p1920", "p2160"):
        assert many.high[name] - many.low[name] < 0.7 * (few.high[name] - few.low[name])


def test_the_same_seed_gives_the_same_intervals_another_seed_others() -> None:
    games = simulate(10, seed=6)
    first, again, other = (fit_ratings(games, PLAYERS, bootstrap=100, seed=s) for s in (7, 7, 8))
    assert first == again
    assert first.ratings == other.ratings and first.low != other.low


def test_bootstrap_zero_gives_intervals_equal_to_the_estimate() -> None:
    fit = fit_ratings(simulate(5, seed=7), PLAYERS, {"p1200": 1200.0}, bootstrap=0)
    assert fit.low == fit.ratings == fit.high and fit.bootstrap == 0


def test_players_without_games_are_left_out() -> None:
    games = [GameScore("a", "b", 0.5)]
    fit = fit_ratings(
        games, ["a", "idle", "b", "idle-anchor"], {"idle-anchor": 1000.0}, bootstrap=50
    )
    assert list(fit.ratings) == list(fit.low) == ["a", "b"]
    assert fit_ratings([], ["a"], bootstrap=10) == RatingFit(
        {}, {}, {}, {}, games=0, bootstrap=10, prior_draws=1.0, confidence=0.95
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: GameScore("a", "b", 0.7), r"game a - b: white's score must be .*got 0\.7"),
        (lambda: GameScore("a", "a", 1.0), "a player cannot meet itself"),
        (
            lambda: bradley_terry([GameScore("a", "ghost", 1.0)], ["a"]),
            "not among the players: ghost",
        ),
        (lambda: bradley_terry([], ["a"], {"b": 1500.0}), "anchors not among the players: b"),
        (
            lambda: bradley_terry([], ["a"], {"a": math.nan}),
            "anchor a: the rating must be a finite number, got nan",
        ),
        (lambda: bradley_terry([], ["a", "b", "a"]), "players named more than once: a"),
        (lambda: bradley_terry([], ["a"], prior_draws=-1), "prior_draws must be .* got -1"),
        (lambda: fit_ratings([], ["a"], confidence=1.0), "confidence must lie .* got 1.0"),
        (lambda: fit_ratings([], ["a"], confidence=0), "confidence must lie .* got 0"),
        (lambda: fit_ratings([], ["a"], bootstrap=-1), "bootstrap must be an integer >= 0, got -1"),
        (lambda: fit_ratings([], ["a"], bootstrap=1.5), "bootstrap must be an integer"),
        (lambda: score_matrix([GameScore("a", "c", 1.0)], ["a", "b"]), "players: c"),
    ],
)
def test_bad_input_raises_a_value_error_naming_it(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# -- Wilson intervals and the score matrix ------------------------------------------------------


@pytest.mark.parametrize(
    ("points", "games", "confidence", "expected"),
    [
        (50, 100, 0.95, (0.4038, 0.5962)),
        (0, 10, 0.95, (0.0, 0.2775)),
        (10, 10, 0.95, (0.7225, 1.0)),
        (7.5, 10, 0.95, (0.4422, 0.9191)),
        (50, 100, 0.99, (0.3753, 0.6247)),
        (0, 0, 0.95, (0.0, 1.0)),
    ],
)
def test_wilson_interval_known_values(
    points: float, games: int, confidence: float, expected: tuple[float, float]
) -> None:
    assert wilson_interval(points, games, confidence) == pytest.approx(expected, abs=1e-4)


@given(
    games=st.integers(1, 100_000),
    fraction=st.floats(0, 1),
    confidence=st.floats(1e-6, 1 - 1e-9),
)
def test_wilson_interval_holds_the_score_inside_zero_one(
    games: int, fraction: float, confidence: float
) -> None:
    points = round(2 * games * fraction) / 2  # draws count half
    low, high = wilson_interval(points, games, confidence)
    assert 0.0 <= low <= points / games <= high <= 1.0


@pytest.mark.parametrize(("points", "games"), [(11, 10), (-0.5, 10), (1, -1), (math.nan, 4)])
def test_wilson_interval_rejects_points_outside_the_games(points: float, games: int) -> None:
    with pytest.raises(ValueError, match="points must lie between 0 and the games"):
        wilson_interval(points, games)


def test_score_matrix_counts_both_colours_for_each_pair() -> None:
    games = [
        GameScore("a", "b", 1.0),
        GameScore("b", "a", 0.5),
        GameScore("b", "a", 1.0),
        GameScore("c", "a", 0.5),
    ]
    assert score_matrix(games, ["a", "b", "c", "idle"]) == {
        "a": {"b": (1.5, 3), "c": (0.5, 1)},
        "b": {"a": (1.5, 3)},
        "c": {"a": (0.5, 1)},
        "idle": {},
    }
