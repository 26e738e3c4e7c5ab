"""score(): every number against a hand computation on small hand-built runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multiagent.evaluation.records import SEAT_STATUSES
from multiagent.evaluation.result import EvalResult, GroupScore, PlayerUsage, score


def group(result: EvalResult, focal: str, condition: str = "configured") -> GroupScore:
    (found,) = [g for g in result.groups if g.focal == focal and g.condition == condition]
    return found


def test_per_capita_welfare_equality_and_survival(build):
    episodes = [
        build.episode(build.focal, 0, (2.0, 4.0, 6.0), turns=10),
        build.episode(build.focal, 1, (0.0, 0.0, 3.0), turns=4, collapsed=True),
    ]
    result = score(build.config(), episodes, world=build.world(), bootstrap=200)
    scored = group(result, build.focal)
    assert scored.episodes == 2
    assert scored.focal_return.estimate == 1.5  # (3 + 0) / 2
    assert scored.background_return is not None
    assert scored.background_return.estimate == 4.5  # (6 + 3) / 2
    assert scored.welfare.estimate == 7.5  # (12 + 3) / 2
    # Gini of [2, 4, 6]: ordered-pair |differences| 16 over 2 * 3^2 * mean 4 = 2/9;
    # of [0, 0, 3]: 12 over 2 * 9 * 1 = 2/3. Equality: mean of 7/9 and 1/3 = 5/9.
    assert scored.equality is not None
    assert scored.equality.estimate == pytest.approx(5 / 9)
    assert scored.survival is not None
    assert scored.survival.turns.estimate == 7.0
    assert scored.survival.collapsed == 0.5
    for estimate in (scored.focal_return, scored.welfare, scored.survival.turns):
        assert estimate.low <= estimate.estimate <= estimate.high
        assert estimate.n == 2 and estimate.confidence == 0.95
    assert (scored.focal_return.low, scored.focal_return.high) == (0.0, 3.0)


def test_no_survival_without_collapse_and_no_background_without_background_seats(build):
    seats = [build.seat("Forager_1", True, build.focal, 1.0)]
    episodes = [build.episode(build.focal, 0, (0, 0, 0), seats=seats)]
    result = score(build.config(), episodes, world=build.world(collapse=False), bootstrap=10)
    scored = group(result, build.focal)
    assert scored.survival is None and scored.background_return is None
    assert result.collapse is False


def test_normalised_score_is_exact_when_the_intervals_collapse(build):
    result = score(build.config(), build.constant_run(), world=build.world(), bootstrap=300)
    expected = {build.focal: 0.5, "random": 0.0, build.strong: 1.0}  # (3 - 1) / (5 - 1)
    for spec, value in expected.items():
        normalised = group(result, spec).normalised
        assert normalised is not None
        assert (normalised.estimate, normalised.low, normalised.high) == (value, value, value)
        assert group(result, spec).note == ""
    assert [g.baseline for g in result.groups] == [False, True, True]


def test_normalised_score_pairs_episodes_by_index(build):
    # focal (3, 7), random (1, 1), strong (5, 9): on the shared index 0 only: (3-1)/(5-1).
    episodes = [
        build.episode(build.focal, 0, (3, 3, 0)),
        build.episode(build.focal, 1, (7, 7, 0)),
        build.episode("random", 0, (1, 1, 0)),
        build.episode(build.strong, 0, (5, 5, 0)),
        build.episode(build.strong, 1, (9, 9, 0)),
    ]
    result = score(build.config(), episodes, world=build.world(), bootstrap=50)
    normalised = group(result, build.focal).normalised
    assert normalised is not None
    assert (normalised.estimate, normalised.n) == (0.5, 1)


def test_missing_baselines_give_none_with_a_note(build):
    run = [e for e in build.constant_run() if e.focal != build.strong]
    scored = group(score(build.config(), run, world=build.world(), bootstrap=10), build.focal)
    assert scored.normalised is None
    assert build.strong in scored.note and "add them to the baselines" in scored.note

    run = [e for e in build.constant_run() if e.focal == build.focal]
    scored = group(score(build.config(), run, world=build.world(), bootstrap=10), build.focal)
    assert scored.normalised is None and "'random'" in scored.note

    no_baseline = build.world(baseline=None)
    scored = group(
        score(build.config(), build.constant_run(), world=no_baseline, bootstrap=10), build.focal
    )
    assert scored.normalised is None and "names no baseline" in scored.note


def test_strong_equal_to_random_gives_none_with_a_note(build):
    episodes = [
        build.episode(spec, index, (1, 1, 0))
        for spec in (build.focal, "random", build.strong)
        for index in range(2)
    ]
    scored = group(score(build.config(), episodes, world=build.world(), bootstrap=10), build.focal)
    assert scored.normalised is None and "same as random" in scored.note


def test_negative_returns_leave_equality_out_with_a_note(build):
    episodes = [build.episode(build.focal, 0, (-1.0, 2.0, 0.0))]
    scored = group(score(build.config(), episodes, world=build.world(), bootstrap=10), build.focal)
    assert scored.equality is None and "Forager_1" in scored.note


def test_value_of_information_is_the_paired_difference_against_configured(build):
    configured = [build.episode(build.focal, i, (v, v, 0)) for i, v in enumerate([1.0, 5.0, 2.0])]
    full = [
        build.episode(build.focal, i, (v, v, 0), condition="full")
        for i, v in enumerate([3.0, 7.0, 4.0])
    ]
    worse = [
        build.episode(build.focal, i, (v, v, 0), condition="configured@noise=2")
        for i, v in enumerate([0.0, 4.0, 0.0])
    ]
    result = score(build.config(), full + worse + configured, world=build.world(), bootstrap=200)
    assert result.reference_condition == "configured"
    effects = {effect.condition: effect for effect in result.condition_effects}
    assert set(effects) == {"full", "configured@noise=2"}
    gain = effects["full"].difference
    assert (gain.estimate, gain.low, gain.high) == (2.0, 2.0, 2.0)  # +2 on every seed
    loss = effects["configured@noise=2"].difference
    assert loss.estimate == pytest.approx(-4 / 3) and loss.high < 0
    assert all(effect.reference == "configured" for effect in result.condition_effects)
    # the configuration's conditions in its order, then the others by name
    assert [g.condition for g in result.groups] == ["configured", "full", "configured@noise=2"]


def test_reference_without_configured_is_the_first_condition_in_the_configuration(build):
    config = build.config().model_copy(update={"observability": ["none", "full"]})
    episodes = [build.episode(build.focal, 0, (1, 1, 0), condition=c) for c in ("full", "none")]
    result = score(config, episodes, world=build.world(), bootstrap=10)
    assert result.reference_condition == "none"
    assert [e.condition for e in result.condition_effects] == ["full"]


def test_ratings_put_the_dominating_spec_first_and_anchor_random(build):
    values = {build.focal: 3.0, "random": 1.0, build.strong: 5.0}
    episodes = [
        build.episode(spec, index, (value + index % 2, value, 0.0))
        for spec, value in values.items()
        for index in range(6)
    ]
    result = score(build.config(), episodes, world=build.world(), bootstrap=100)
    ratings = result.ratings
    assert ratings is not None
    assert [r.player for r in ratings.ratings] == [build.strong, build.focal, "random"]
    assert ratings.games == 18 and ratings.anchored  # 3 pairs on 6 seeds
    random_rating = ratings.ratings[-1]
    assert random_rating.anchor and random_rating.rating == random_rating.low == 1000.0


def test_ratings_tie_on_equal_returns_and_need_two_specs(build):
    episodes = [build.episode(spec, 0, (1, 1, 0)) for spec in ("a", "b")]
    config = build.config(focal=["a", "b"], baselines=[])
    ratings = score(config, episodes, world=build.world(), bootstrap=20).ratings
    assert ratings is not None and not ratings.anchored
    assert [r.rating for r in ratings.ratings] == pytest.approx([1500.0, 1500.0])
    alone = score(config, episodes[:1], world=build.world(), bootstrap=20)
    assert alone.ratings is None


def test_player_usage_counts_statuses_reasons_and_percentiles(build):
    def seats(index: int):
        return [
            build.seat("Forager_1", True, build.focal, 1.0, status="completed", decisions=20,
                       invalid_actions=1, invalid_reasons={"bad_enum": 1},
                       latencies=[1.0, 2.0][index:index + 1]),
            build.seat("Forager_2", True, build.focal, 1.0, status="forfeit", decisions=20,
                       invalid_actions=1, invalid_reasons={"bad_enum": 1, "range": 2},
                       fallback_actions=3, latencies=[3.0, 4.0][index:index + 1]),
            build.seat("Forager_3", False, "noop", 0.0, decisions=20),
        ]  # fmt: skip

    episodes = [build.episode(build.focal, i, (0, 0, 0), seats=seats(i)) for i in range(2)]
    result = score(build.config(), episodes, world=build.world(), bootstrap=10)
    focal, background = result.players
    assert (focal.player, focal.focal, background.player, background.focal) == (
        build.focal, True, "noop", False,
    )  # fmt: skip
    assert (focal.seat_episodes, focal.decisions, focal.invalid_actions) == (4, 80, 4)
    assert focal.invalid_per_1000 == 50.0
    assert focal.invalid_reasons == {"bad_enum": 4, "range": 4}
    assert focal.fallback_actions == 6
    assert focal.statuses == {"completed": 2, "truncated": 0, "forfeit": 2,
                              "endpoint_failure": 0, "context_limit": 0}  # fmt: skip
    assert list(background.statuses) == list(SEAT_STATUSES)
    # latencies 1, 2, 3, 4: p50 = 2.5, p95 = 3 + 0.85 (linear interpolation)
    assert focal.latency_p50 == 2.5 and focal.latency_p95 == pytest.approx(3.85)
    assert background.latency_p50 is None and background.invalid_per_1000 == 0.0
    assert (focal.tokens_in, focal.cost_usd) == (None, None)  # no requests: not an LLM
    untimed = score(build.config(), episodes, world=build.world(), bootstrap=10, timings=False)
    assert untimed.players[0].latency_p50 is None
    assert (untimed.totals.cpu_seconds, untimed.totals.wall_seconds) == (0.0, 0.0)
    assert (result.totals.cpu_seconds, result.totals.wall_seconds) == (2.0, 3.0)
    assert (result.totals.episodes, result.totals.seat_episodes) == (2, 6)


def llm_run(build, tokens: list[tuple[int, int | None, int | None]]):
    """One episode per (requests, tokens_in, tokens_out), the LLM in both focal seats."""
    return [
        build.episode(build.llm, index, (0, 0, 0), seats=[
            build.seat(name, True, build.llm, 1.0, requests=requests, cached_requests=1,
                       self_corrections=1, endpoint_retries=2, tokens_in=tin, tokens_out=tout)
            for name in ("Forager_1", "Forager_2")
        ] + [build.seat("Forager_3", False, "noop", 0.0)])
        for index, (requests, tin, tout) in enumerate(tokens)
    ]  # fmt: skip


def test_tokens_and_cost_from_reported_usage(build):
    config = build.config(focal=[build.llm])
    episodes = llm_run(build, [(3, 100, 50), (2, 150, 0), (0, None, None)])
    result = score(config, episodes, world=build.world(), prices={"tiny-model": (2.0, 10.0)})
    usage = result.players[0]
    assert (usage.tokens_in, usage.tokens_out) == (500, 100)  # 2 seats x (100 + 150), (50 + 0)
    assert usage.cost_usd == pytest.approx((500 * 2.0 + 100 * 10.0) / 1e6)
    assert (usage.requests, usage.cached_requests) == (10, 6)
    assert (usage.self_corrections, usage.endpoint_retries) == (6, 12)
    unpriced = score(config, episodes, world=build.world(), bootstrap=10).players[0]
    assert unpriced.cost_usd is None and unpriced.tokens_in == 500


def test_tokens_are_unknown_when_a_seat_with_requests_reported_none(build):
    episodes = llm_run(build, [(3, 100, 50), (1, None, 7)])
    usage = score(build.config(focal=[build.llm]), episodes, world=build.world(), bootstrap=10,
                  prices={"tiny-model": (1.0, 1.0)}).players[0]  # fmt: skip
    assert (usage.tokens_in, usage.tokens_out, usage.cost_usd) == ("unknown", 114, "unknown")
    assert PlayerUsage.model_validate_json(usage.model_dump_json()) == usage


def test_same_input_gives_an_equal_result_in_any_order_and_round_trips(build):
    episodes = build.constant_run() + build.constant_run("full")
    episodes[0] = build.episode(build.focal, 0, (2.5, 1.0, 4.0))
    first = score(build.config(), episodes, world=build.world(), bootstrap=100, timings=False)
    again = score(build.config(), episodes[::-1], world=build.world(), bootstrap=100, timings=False)
    assert first == again
    assert EvalResult.model_validate_json(first.model_dump_json()) == first


def hand_gini(values: tuple[float, ...]) -> float:
    """Mean absolute difference over ordered pairs, over twice the mean."""
    total = sum(values)
    pairs = sum(abs(a - b) for a in values for b in values)
    return pairs / (2 * len(values) * total) if total else 0.0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rewards=st.lists(
        st.tuples(*[st.floats(0, 100, allow_nan=False) for _ in range(3)]), min_size=1, max_size=8
    ),
    order=st.randoms(use_true_random=False),
)
def test_group_means_match_a_direct_computation_in_any_order(build, rewards, order):
    world, config = build.world(), build.config()
    episodes = [build.episode(build.focal, index, r) for index, r in enumerate(rewards)]
    shuffled = list(episodes)
    order.shuffle(shuffled)
    result = score(config, shuffled, world=world, bootstrap=20, timings=False)
    assert result == score(config, episodes, world=world, bootstrap=20, timings=False)
    scored = group(result, build.focal)
    focal = [(a + b) / 2 for a, b, _ in rewards]
    assert scored.focal_return.estimate == pytest.approx(np.mean(focal))
    assert min(focal) - 1e-9 <= scored.focal_return.low <= scored.focal_return.high
    assert scored.focal_return.high <= max(focal) + 1e-9
    assert scored.welfare.estimate == pytest.approx(np.mean([sum(r) for r in rewards]))
    assert scored.background_return is not None
    assert scored.background_return.estimate == pytest.approx(np.mean([c for *_, c in rewards]))
    assert scored.equality is not None
    equality = np.mean([1 - hand_gini(r) for r in rewards])
    assert scored.equality.estimate == pytest.approx(equality, abs=1e-9)


def test_bad_input_is_refused_naming_the_field(build):
    run = build.constant_run()
    with pytest.raises(ValueError, match=r"episodes\[6\]: episode 0 of configured/duel"):
        score(build.config(), [*run, run[0]], world=build.world())
    with pytest.raises(ValueError, match=r"episodes\[0\]\.seats: no focal seat"):
        seats = [build.seat("Forager_3", False, "noop", 0.0)]
        score(build.config(), [build.episode(build.focal, 0, (0, 0, 0), seats=seats)],
              world=build.world())  # fmt: skip
    with pytest.raises(ValueError, match=r"prices\['m'\]"):
        score(build.config(), run, world=build.world(), prices={"m": (-1.0, 1.0)})
    with pytest.raises(ValueError, match="bootstrap must be an integer >= 1"):
        score(build.config(), run, world=build.world(), bootstrap=0)


def test_no_episodes_gives_an_empty_result(build):
    result = score(build.config(), [], world=build.world())
    assert (result.groups, result.condition_effects, result.players) == ([], [], [])
    assert result.ratings is None and result.reference_condition is None
    assert math.isclose(result.totals.cpu_seconds, 0.0)
    assert np.isfinite(result.confidence)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_baseline_that_ties_random_on_some_resamples_gives_none_quietly(build):
    # strong beats random on seed 0 and ties it on seed 1: some resamples divide by zero
    episodes = [
        build.episode(build.focal, 0, (3, 3, 0)),
        build.episode(build.focal, 1, (3, 3, 0)),
        build.episode("random", 0, (1, 1, 0)),
        build.episode("random", 1, (1, 1, 0)),
        build.episode(build.strong, 0, (5, 5, 0)),
        build.episode(build.strong, 1, (1, 1, 0)),
    ]
    scored = group(score(build.config(), episodes, world=build.world(), bootstrap=200), build.focal)
    assert scored.normalised is None and scored.note
