"""``dict_builder``: the dicts it builds are ``dict(zip(keys, values))`` in everything but memory
layout, for any keys: those CPython can share and those it cannot."""

from __future__ import annotations

import copy
import json
import keyword
import pickle
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from multiagent.dict_builders import SHARED_KEYS_LIMIT, _shared_keys_builder, dict_builder

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
ANY_KEYS = st.one_of(
    NAMES,
    st.sampled_from(["class", "None", "__dict__", "__class__", "__init__", "ﬁle", "a b", ""]),
    st.text(max_size=4),
)
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3))


def same(built: dict[str, Any], expected: dict[str, Any]) -> None:
    assert type(built) is dict
    assert list(built.items()) == list(expected.items())


@given(keys=st.lists(NAMES, max_size=40, unique=True), data=st.data())
def test_a_built_dict_is_dict_of_zip_with_the_keys_in_order(keys: list[str], data: Any) -> None:
    values = data.draw(st.lists(VALUES, min_size=len(keys), max_size=len(keys)))
    built = dict_builder(keys)(*values)
    same(built, dict(zip(keys, values, strict=True)))
    assert json.dumps(built) == json.dumps(dict(zip(keys, values, strict=True)))


@given(keys=st.lists(ANY_KEYS, max_size=8), data=st.data())
def test_keys_no_attribute_can_have_still_build_the_right_dict(keys: list[str], data: Any) -> None:
    """Keywords, dunders, names the parser would normalise, non-names, repeated keys."""
    values = data.draw(st.lists(VALUES, min_size=len(keys), max_size=len(keys)))
    same(dict_builder(keys)(*values), dict(zip(keys, values, strict=True)))


@pytest.mark.parametrize(
    "keys",
    [("class",), ("__dict__",), ("__class__", "x"), ("ﬁle",), ("a b",), ("x", "x"), ()],
    ids=repr,
)
def test_keys_that_cannot_be_shared_get_the_plain_builder(keys: tuple[str, ...]) -> None:
    assert _shared_keys_builder(keys) is None
    values = list(range(len(keys)))
    same(dict_builder(keys)(*values), dict(zip(keys, values, strict=True)))


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="key sharing is CPython's")
def test_key_sets_up_to_the_limit_share_their_keys_and_larger_ones_do_not() -> None:
    within = tuple(f"k{i}" for i in range(SHARED_KEYS_LIMIT))
    beyond = (*within, "one_more")
    assert _shared_keys_builder(within) is not None
    assert _shared_keys_builder(beyond) is None
    shared, plain = dict_builder(within)(*within), dict(zip(within, within, strict=True))
    assert sys.getsizeof(shared) < sys.getsizeof(plain)  # its keys live in its class's table


def test_built_dicts_are_independent_and_behave_as_plain_ones() -> None:
    keys = ("gold", "name", "position")
    build = dict_builder(keys)
    assert dict_builder(list(keys)) is build  # one builder per key tuple
    first, second = build(1, "A", (0.5, 1.5)), build(2, "B", (2.5, 3.5))
    first["extra"] = [1]  # a key the others do not have
    del first["gold"]
    second["gold"] += 1
    assert first == {"name": "A", "position": (0.5, 1.5), "extra": [1]}
    assert second == {"gold": 3, "name": "B", "position": (2.5, 3.5)}
    third = build(9, "C", (0.0, 0.0))
    same(third, {"gold": 9, "name": "C", "position": (0.0, 0.0)})
    for clone in (pickle.loads(pickle.dumps(third)), copy.deepcopy(third), third.copy()):
        same(clone, third)
    assert third | {"gold": 1} == {"gold": 1, "name": "C", "position": (0.0, 0.0)}


def test_a_wrong_number_of_values_is_an_error_not_a_short_dict() -> None:
    for keys in (("a", "b"), ("a", "class")):  # shared, then plain
        with pytest.raises((TypeError, ValueError)):
            dict_builder(keys)(1)


def test_keywords_are_checked_by_the_keyword_module() -> None:
    assert all(_shared_keys_builder((word,)) is None for word in keyword.kwlist)
