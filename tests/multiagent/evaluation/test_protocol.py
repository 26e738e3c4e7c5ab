"""The protocol gives meaningful numbers on the built-in worlds: a scripted forager beats random
with an interval that excludes 0, and on the commons the sustainable population survives longer
than the greedy one with intervals that do not overlap."""

from __future__ import annotations

from pathlib import Path

import pytest

from multiagent.evaluation import EvalResult, evaluate
from multiagent.evaluation.result import GroupScore

WALKER = "scripted:multiagent.worlds.forage:walk_to_food"
GREEDY = "scripted:multiagent.worlds.commons:greedy"
SUSTAINABLE = "scripted:multiagent.worlds.commons:sustainable"


def group(result: EvalResult, focal: str) -> GroupScore:
    (found,) = [g for g in result.groups if g.focal == focal]
    return found


def test_on_forage_a_scripted_focal_player_beats_random(tmp_path: Path) -> None:
    result = evaluate("forage", focal=[WALKER], scenarios=["visitor"], episodes=6,
                      out=tmp_path, progress=False)  # fmt: skip
    walker = group(result, WALKER)
    assert walker.versus_random is not None and walker.versus_random.low > 0
    assert walker.normalised is not None and walker.normalised.estimate == pytest.approx(1.0)
    assert group(result, "random").normalised.estimate == pytest.approx(0.0)


def test_on_the_commons_sustainable_outlives_greedy_without_overlap(tmp_path: Path) -> None:
    result = evaluate("commons", focal=[GREEDY], scenarios=["all_focal"], episodes=12,
                      out=tmp_path, progress=False)  # fmt: skip
    greedy, sustainable = group(result, GREEDY).survival, group(result, SUSTAINABLE).survival
    assert greedy is not None and sustainable is not None
    assert greedy.turns.high < sustainable.turns.low
    assert (greedy.collapsed, sustainable.collapsed) == (1.0, 0.0)
    assert group(result, GREEDY).normalised.high < 0  # worse than random, on the same seeds
