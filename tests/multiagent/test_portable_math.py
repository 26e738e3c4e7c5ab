"""``multiagent.portable_math`` against the C library's ``math``: within 3 units in the last place
(the logarithm) and 1e-15 (the cosine), over the whole range gaussian noise uses."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from multiagent.portable_math import cos_of_turns, log_of_one_minus

UNIT = st.floats(min_value=0.0, max_value=1.0, exclude_max=True, allow_subnormal=True)


@given(st.lists(UNIT, min_size=1, max_size=50))
def test_log_of_one_minus_is_within_three_ulps_of_log1p(values: list[float]) -> None:
    got = log_of_one_minus(np.array(values))
    for value, result in zip(values, got, strict=True):
        expected = math.log1p(-value)
        assert abs(result - expected) <= 3 * math.ulp(expected), (value, result, expected)


@given(st.lists(UNIT, min_size=1, max_size=50))
def test_cos_of_turns_is_within_1e_15_of_cos(values: list[float]) -> None:
    got = cos_of_turns(np.array(values))
    for value, result in zip(values, got, strict=True):
        assert abs(result - math.cos(2 * math.pi * value)) <= 1e-15, value


def test_the_quarter_turns_are_exact() -> None:
    turns = np.array([0.0, 0.25, 0.5, 0.75])
    assert cos_of_turns(turns).tolist() == [1.0, 0.0, -1.0, 0.0]
    assert log_of_one_minus(np.array([0.0, 0.5])).tolist() == [0.0, -math.log(2)]
