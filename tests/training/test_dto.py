"""The training DTOs: Wilson intervals against published values, inconsistent results refused
with messages that say what disagrees, NaN metrics as None, JSON round trips."""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from training.config import PPOConfig
from training.dto import (
    ColorResult,
    EvaluationResult,
    PPOTrainingResult,
    finite_or_none,
    wilson_interval,
)

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
# Medicine 17:857-872, Table II, method 3 (score interval without continuity correction).
NEWCOMBE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("successes", "n", "low", "high"), NEWCOMBE)
def test_wilson_matches_the_published_intervals(
    successes: int, n: int, low: float, high: float
) -> None:
    bounds = wilson_interval(successes / n, n)
    assert bounds == pytest.approx((low, high), abs=5e-5)


@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_bounds_solve_the_score_equation(trial: tuple[int, int]) -> None:
    """The bounds are the p with |s - p| = z * sqrt(p (1 - p) / n): a quadratic's roots."""
    successes, n = trial
    s, z = successes / n, NormalDist().inv_cdf(0.975)
    roots = np.sort(np.roots([1 + z * z / n, -(2 * s + z * z / n), s * s]).real)
    assert wilson_interval(s, n) == pytest.approx(tuple(np.clip(roots, 0, 1)), abs=1e-9)


@pytest.mark.parametrize(("score", "n", "match"), [(0.5, 0, "at least one"), (1.5, 4, "[0, 1]")])
def test_wilson_refuses_what_is_not_a_proportion(score: float, n: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wilson_interval(score, n)


def test_finite_or_none() -> None:
    assert [finite_or_none(v) for v in (None, math.nan, math.inf, np.float32(2.5), 1)] == [
        None,
        None,
        None,
        2.5,
        1.0,
    ]


def evaluation(**changes: Any) -> dict[str, Any]:
    result = EvaluationResult.from_counts(
        opponent="random",
        seed=0,
        white=ColorResult(games=5, wins=3, draws=1, losses=1),
        black=ColorResult(games=5, wins=2, draws=2, losses=1),
        mean_plies=80.0,
        illegal_actions=0,
        checkmates=4,
        terminations={"max_plies": 3, "checkmate": 6, "stalemate": 1},
    )
    return {**result.model_dump(), **changes}


def test_from_counts_derives_totals_score_and_interval() -> None:
    result = EvaluationResult.model_validate(evaluation())
    assert (result.games, result.wins, result.draws, result.losses) == (10, 5, 3, 2)
    assert result.score == 0.65
    assert (result.score_low, result.score_high) == wilson_interval(0.65, 10)
    assert list(result.terminations) == ["checkmate", "max_plies", "stalemate"]
    assert result.checkmate_rate == 0.4
    assert result.white.score == 0.7


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"wins": 6, "losses": 1}, "white.wins + black.wins must equal wins"),
        ({"draws": 4}, "wins + draws + losses (5 + 4 + 2) must equal games (10)"),
        ({"terminations": {"checkmate": 6}}, "termination counts must add up to games"),
        ({"checkmates": 6}, "checkmates must not exceed"),
        ({"score": 0.6}, "score must be (wins + draws / 2) / games = 0.65"),
        ({"score_low": 0.7, "score_high": 0.9}, "the interval must contain the score"),
        ({"score": 1.5}, "score\n  Input should be less than or equal to 1"),
        ({"surprise": 1}, "surprise\n  Extra inputs are not permitted"),
        ({"schema_version": 2}, "schema version 1, got 2; migrate the payload first"),
    ],
)
def test_inconsistent_evaluations_are_refused_saying_why(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        EvaluationResult.model_validate(evaluation(**changes))


def test_a_colour_record_must_add_up() -> None:
    with pytest.raises(ValidationError, match=re.escape("(1 + 1 + 1) must equal games (2)")):
        ColorResult(games=2, wins=1, draws=1, losses=1)
    assert ColorResult(games=0, wins=0, draws=0, losses=0).score is None


def ppo_result(**changes: Any) -> PPOTrainingResult:
    fields: dict[str, Any] = {
        "env_id": "chess_env/Chess-v0",
        "algorithm": "MaskablePPO",
        "seed": 0,
        "device": "cpu",
        "total_timesteps": 512,
        "updates": 8,
        "episodes": 3,
        "mean_episode_reward": -1.0,
        "loss_total": np.float32(0.25),
        "explained_variance": math.nan,
        "grad_norm": math.inf,
        "duration_sec": 2.0,
        "steps_per_sec": 256.0,
        "evaluation": EvaluationResult.model_validate(evaluation()),
        "config": PPOConfig(total_timesteps=512),
    }
    return PPOTrainingResult(**{**fields, **changes})


def test_undefined_metrics_become_none_and_round_trip_through_json() -> None:
    result = ppo_result()
    assert result.explained_variance is None and result.grad_norm is None
    assert result.loss_total == 0.25 and result.loss_policy is None
    assert PPOTrainingResult.model_validate(result.model_dump(mode="json")) == result
    assert PPOTrainingResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"algorithm": "DQN"}, "algorithm"),
        ({"duration_sec": -1.0}, "duration_sec"),
        ({"updates": -1}, "updates"),
    ],
)
def test_impossible_ppo_results_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ppo_result(**changes)


def test_results_are_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        ppo_result().seed = 3  # type: ignore[misc]
