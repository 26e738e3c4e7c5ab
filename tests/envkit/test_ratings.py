"""The shared ratings have one home: the arena's names are envkit's objects, and training's Wilson
interval (a fraction and a normal quantile) is envkit's (points, games and a confidence)."""

from __future__ import annotations

from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chess_env.arena.ratings as arena_ratings
import envkit.ratings
import envkit.stats
import training.dto


@pytest.mark.parametrize("name", arena_ratings.__all__)
def test_the_arena_names_are_envkits_objects(name: str) -> None:
    home = envkit.stats if name == "wilson_interval" else envkit.ratings
    assert getattr(arena_ratings, name) is getattr(home, name)


@given(
    st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, 2 * n), st.just(n))),
    st.floats(0.5, 0.999),
)
def test_trainings_wilson_interval_is_envkits(trial: tuple[int, int], confidence: float) -> None:
    half_points, games = trial
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    expected = envkit.stats.wilson_interval(half_points / 2, games, confidence)
    assert training.dto.wilson_interval(half_points / 2 / games, games, z) == pytest.approx(
        expected, abs=1e-12
    )


def test_trainings_wilson_interval_refuses_a_z_that_is_no_quantile() -> None:
    with pytest.raises(ValueError, match=r"z must be a normal quantile > 0, got -1\.0"):
        training.dto.wilson_interval(0.5, 10, -1.0)
