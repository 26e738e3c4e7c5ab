"""Spaces from definitions: the type mapping, exact round trips, zero elements, and properties.

The properties run over random valid definitions: defaults and zero elements encode inside the
space, and ``space.sample()`` decodes to a value that ``validate_value`` accepts.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent.spaces import (
    CHARSET,
    from_space_value,
    space_for,
    to_space_value,
    zero_value,
)
from multiagent.state import validate_value
from multiagent.variables import MAX_STR_LENGTH, VariableDefinition

V = VariableDefinition.model_validate
POINT = {"type": "tuple", "item_types": ["float", "float"]}
RESOURCES = {"type": "dict", "key_type": "str", "value_type": "float"}

# (definition as YAML loads it, a valid value). Floats are exact in float32, so round trips are ==.
EXAMPLES: dict[str, tuple[dict[str, Any], Any]] = {
    "inventory": (RESOURCES, {"food": 2.5, "wood": 10.0}),
    "stats": (
        {
            "type": "dict",
            "schema": {
                "health": {"type": "float", "min": 0, "max": 100},
                "mana": {"type": "float", "min": 0, "max": 100},
                "stamina": {"type": "int", "min": 0, "max": 10},
            },
        },
        {"health": 75.5, "mana": 20.25, "stamina": 7},
    ),
    "towns": (
        {
            "type": "dict",
            "key_type": "str",
            "value_type": {
                "type": "object",
                "schema": {"population": {"type": "int", "min": 0}, "resources": RESOURCES},
            },
        },
        {
            "Riverton": {"population": 1200, "resources": {"grain": 40.5, "fish": 3.0}},
            "Hilltop": {"population": 0, "resources": {}},
        },
    ),
    "location": (POINT, (1.5, -2.25)),
    "action_history": (
        {"type": "list", "item_type": "str", "max_length": 10},
        ["move north", "trade", "rest"],
    ),
    "position_history": ({"type": "list", "item_type": POINT}, [(0.0, 0.0), (1.5, 2.0)]),
    "agent_name": ({"type": "str", "pattern": "[A-Z][a-z]+_[0-9]+"}, "Trader_1"),
    "capital": (
        {
            "type": "object",
            "schema": {
                "name": "str",
                "position": POINT,
                "population": {"type": "int", "min": 0},
                "resources": RESOURCES,
            },
        },
        {"name": "Portsmouth", "position": (3.0, 4.5), "population": 5000, "resources": {}},
    ),
    "rgb": (
        {"type": "tuple", "item_types": [{"type": "int", "min": 0, "max": 255}] * 3},
        (255, 128, 0),
    ),
    "mixed_tuple": (
        {"type": "tuple", "item_types": ["int", "str", POINT]},
        (-3, "north", (0.5, 1.0)),
    ),
    "declared_keys": (
        {"type": "dict", "key_type": "str", "value_type": "int", "keys": ["gold", "iron", "wood"]},
        {"wood": 4, "gold": 1},
    ),
    "int_keys": ({"type": "dict", "key_type": "int", "value_type": "bool"}, {3: True, -7: False}),
    "weather": ({"type": "categorical", "values": ["sun", "rain", "snow"]}, "snow"),
    "small_int": ({"type": "int", "min": -3, "max": 3}, -3),
    "flag": ("bool", True),
}


# -- the mapping --------------------------------------------------------------------------------


def test_float_is_a_float32_box_with_infinite_missing_bounds() -> None:
    space = space_for(V({"type": "float", "min": -1.5}))
    assert isinstance(space, spaces.Box)
    assert (space.shape, space.dtype) == ((1,), np.float32)
    assert space.low[0] == -1.5 and space.high[0] == np.inf
    assert space_for(V("float")).low[0] == -np.inf


def test_int_with_a_small_range_is_discrete_holding_the_offset_from_min() -> None:
    defn = V({"type": "int", "min": -3, "max": 3})
    space = space_for(defn)
    assert isinstance(space, spaces.Discrete) and (space.n, space.start) == (7, 0)
    assert [to_space_value(defn, v) for v in (-3, 0, 3)] == [0, 3, 6]
    assert type(to_space_value(defn, 1)) is int
    assert from_space_value(defn, np.int64(6)) == 3
    assert isinstance(space_for(V({"type": "int", "min": 0, "max": 63})), spaces.Discrete)


@pytest.mark.parametrize(
    ("bounds", "low", "high"),
    [
        ({"min": 0, "max": 64}, 0, 64),  # 65 values: one past the Discrete limit
        ({"min": 10}, 10, 2**63 - 2),
        ({}, -(2**63), 2**63 - 2),
    ],
)
def test_int_with_a_wide_or_open_range_is_an_int64_box(
    bounds: dict[str, int], low: int, high: int
) -> None:
    defn = V({"type": "int", **bounds})
    space = space_for(defn)
    assert isinstance(space, spaces.Box) and (space.shape, space.dtype) == ((1,), np.int64)
    assert (int(space.low[0]), int(space.high[0])) == (low, high)
    encoded = to_space_value(defn, 20)
    assert encoded.dtype == np.int64 and encoded.tolist() == [20]


def test_open_int_box_samples_stay_inside_the_box() -> None:
    """Gymnasium samples below high + 1: at int64's max that would wrap around (or raise)."""
    for defn in (V({"type": "int", "min": 0}), V("int")):
        space = space_for(defn)
        space.seed(0)
        assert len({int(space.sample()[0]) for _ in range(20)}) == 20


def test_bool_is_multibinary_with_int8_elements() -> None:
    defn = V("bool")
    assert isinstance(space_for(defn), spaces.MultiBinary) and space_for(defn).n == 1
    encoded = to_space_value(defn, True)
    assert encoded.dtype == np.int8 and encoded.tolist() == [1]
    assert from_space_value(defn, np.array([0], dtype=np.int8)) is False


def test_categorical_is_discrete_over_the_values() -> None:
    defn = V({"type": "categorical", "values": ["sun", "rain", "snow"]})
    assert space_for(defn) == spaces.Discrete(3)
    assert to_space_value(defn, "rain") == 1 and from_space_value(defn, 2) == "snow"


def test_str_is_printable_text_up_to_max_length() -> None:
    space = space_for(V({"type": "str", "max_length": 12}))
    assert isinstance(space, spaces.Text)
    assert (space.min_length, space.max_length) == (0, 12)
    assert space.character_set == frozenset(string.printable) == frozenset(CHARSET)
    assert space_for(V("str")).max_length == MAX_STR_LENGTH


def test_containers_map_to_sequence_tuple_and_ordered_dict() -> None:
    listed = space_for(V({"type": "list", "item_type": "bool"}))
    assert isinstance(listed, spaces.Sequence) and not listed.stack
    assert isinstance(listed.feature_space, spaces.MultiBinary)
    assert space_for(V(POINT)) == spaces.Tuple((space_for(V("float")), space_for(V("float"))))
    obj = space_for(V({"type": "object", "schema": {"zeta": "int", "alpha": "bool"}}))
    assert isinstance(obj, spaces.Dict) and list(obj.spaces) == ["zeta", "alpha"]


def test_dynamic_dicts_are_sequences_of_key_value_tuples() -> None:
    by_name = space_for(V(RESOURCES))
    assert isinstance(by_name, spaces.Sequence) and not by_name.stack
    key, value = by_name.feature_space.spaces
    assert isinstance(key, spaces.Text) and value == space_for(V("float"))
    by_number = space_for(V({"type": "dict", "key_type": "int", "value_type": "bool"}))
    key, _ = by_number.feature_space.spaces
    assert isinstance(key, spaces.Box) and (key.shape, key.dtype) == ((1,), np.int64)


def test_declared_keys_give_a_presence_slot_per_key() -> None:
    defn = V({"type": "dict", "key_type": "str", "value_type": "float", "keys": ["b", "a"]})
    space = space_for(defn)
    assert isinstance(space, spaces.Dict) and list(space.spaces) == ["b", "a"]
    assert list(space["a"].spaces) == ["present", "value"]
    assert space["a"]["present"] == spaces.MultiBinary(1)
    assert space["a"]["value"] is not space["b"]["value"]  # each key samples on its own
    encoded = to_space_value(defn, {"a": 2.5})
    assert encoded["a"]["present"].tolist() == [1] and encoded["a"]["value"].tolist() == [2.5]
    assert encoded["b"]["present"].tolist() == [0] and encoded["b"]["value"].tolist() == [0.0]


def test_an_undeclared_key_does_not_encode() -> None:
    defn = V({"type": "dict", "key_type": "str", "value_type": "float", "keys": ["a"]})
    with pytest.raises(ValueError, match=r"\['z'\] are not among the declared keys"):
        to_space_value(defn, {"a": 1.0, "z": 2.0})


def test_every_call_builds_a_fresh_space() -> None:
    """Spaces hold the RNG an env seeds: sharing one between callers would share its stream."""
    defn = V(RESOURCES)
    assert space_for(defn) is not space_for(defn)


# -- round trips of the examples ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_round_trips_exactly_and_lies_in_its_space(name: str) -> None:
    raw, value = EXAMPLES[name]
    defn = V(raw)
    encoded = to_space_value(defn, value)
    assert space_for(defn).contains(encoded)
    decoded = from_space_value(defn, encoded)
    assert decoded == value
    assert validate_value(defn, decoded, name) == value


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_zero_value_lies_in_the_space_and_decodes_to_a_valid_value(name: str) -> None:
    defn = V(EXAMPLES[name][0])
    space = space_for(defn)
    zero = zero_value(space)
    assert space.contains(zero)
    if name != "agent_name":  # "" does not match the name pattern
        validate_value(defn, from_space_value(defn, zero), name)


def test_element_dtypes_are_exact() -> None:
    defn = V(EXAMPLES["capital"][0])
    encoded = to_space_value(defn, EXAMPLES["capital"][1])
    assert type(encoded) is dict and type(encoded["position"]) is tuple
    assert encoded["position"][0].dtype == np.float32 and encoded["position"][0].shape == (1,)
    assert encoded["population"].dtype == np.int64
    assert encoded["resources"] == ()
    towns = to_space_value(V(EXAMPLES["towns"][0]), EXAMPLES["towns"][1])
    assert type(towns) is tuple and towns[0][0] == "Riverton" and type(towns[0][1]) is dict


def test_zero_value_of_boxes_and_discretes() -> None:
    positive = spaces.Box(2.0, 5.0, (2,), np.float32)
    assert zero_value(positive).tolist() == [2.0, 2.0] and zero_value(positive).dtype == np.float32
    assert zero_value(spaces.Box(-9, -4, (1,), np.int64)).tolist() == [-4]
    assert zero_value(spaces.Discrete(3, start=5)) == 5
    assert zero_value(spaces.Sequence(spaces.Discrete(2))) == ()
    with pytest.raises(TypeError, match="no zero value"):
        zero_value(spaces.MultiDiscrete([2, 3]))


# -- documented lossy cases ---------------------------------------------------------------------


def test_a_missing_str_encodes_as_empty_text() -> None:
    defn = V({"type": "object", "schema": {"name": "str", "age": "int"}})
    encoded = to_space_value(defn, defn.derived_default())
    assert encoded["name"] == "" and space_for(defn).contains(encoded)
    assert from_space_value(defn, encoded) == {"name": "", "age": 0}


def test_characters_outside_the_charset_become_question_marks() -> None:
    defn = V(RESOURCES)
    encoded = to_space_value(defn, {"café ☕": 1.0})
    assert encoded[0][0] == "caf? ?" and space_for(defn).contains(encoded)
    assert to_space_value(V("str"), "naïve\ttab") == "na?ve\ttab"


def test_floats_round_to_float32_and_decode_inside_the_bounds() -> None:
    defn = V({"type": "float", "min": 0.7, "max": 1.1})
    assert from_space_value(defn, to_space_value(defn, 0.9)) == pytest.approx(0.9, rel=1e-7)
    # float32(0.7) < 0.7 and float32(1.1) > 1.1: decoding clips, so the bounds still hold.
    space = space_for(defn)
    assert float(space.low[0]) < 0.7 and float(space.high[0]) > 1.1
    assert from_space_value(defn, space.low) == 0.7
    assert from_space_value(defn, space.high) == 1.1
    huge = to_space_value(V("float"), 1e300)
    assert np.isfinite(huge).all() and space_for(V("float")).contains(huge)


def test_decoding_keeps_the_first_max_length_items() -> None:
    defn = V({"type": "list", "item_type": "bool", "max_length": 2})
    sample = tuple(np.array([i % 2], dtype=np.int8) for i in range(5))
    assert from_space_value(defn, sample) == [False, True]


# -- properties over random definitions ---------------------------------------------------------

_NAMES = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)


@st.composite
def _bounded(draw: st.DrawFn, kind: str, bound: st.SearchStrategy[float]) -> VariableDefinition:
    low, high = draw(st.none() | bound), draw(st.none() | bound)
    if low is not None and high is not None and low > high:
        low, high = high, low
    return VariableDefinition(type=kind, min=low, max=high)  # type: ignore[arg-type]


@st.composite
def _strs(draw: st.DrawFn) -> VariableDefinition:
    """No pattern: a space cannot express one, so samples would not match it."""
    max_length = draw(st.none() | st.integers(1, 20))
    default = draw(st.none() | st.text(max_size=max_length or 20))
    return VariableDefinition(type="str", max_length=max_length, default=default)


SCALARS = st.one_of(
    _bounded("float", st.floats(-1e6, 1e6, allow_nan=False)),
    _bounded("float", st.floats(-1e40, 1e40, allow_nan=False)),  # past float32's range
    _bounded("int", st.integers(-100, 100)),
    _bounded("int", st.integers(-(10**12), 10**12)),
    st.just(VariableDefinition(type="bool")),
    st.lists(_NAMES, min_size=1, max_size=4, unique=True).map(
        lambda values: VariableDefinition(type="categorical", values=values)
    ),
    _strs(),
)


def _containers(
    child: st.SearchStrategy[VariableDefinition],
) -> st.SearchStrategy[VariableDefinition]:
    fields = st.dictionaries(_NAMES, child, max_size=3)
    return st.one_of(
        st.builds(
            VariableDefinition,
            type=st.just("list"),
            item_type=child,
            max_length=st.none() | st.integers(1, 4),
        ),
        st.builds(
            VariableDefinition,
            type=st.just("tuple"),
            item_types=st.lists(child, min_size=1, max_size=3),
        ),
        st.builds(VariableDefinition, type=st.just("object"), schema=fields.filter(bool)),
        st.builds(VariableDefinition, type=st.just("dict"), schema=fields),
        st.builds(
            VariableDefinition,
            type=st.just("dict"),
            key_type=st.sampled_from(["str", "int"]),
            value_type=child,
        ),
        st.builds(
            VariableDefinition,
            type=st.just("dict"),
            key_type=st.just("str"),
            value_type=child,
            keys=st.lists(_NAMES, min_size=1, max_size=3, unique=True),
        ),
    )


def _definitions(depth: int) -> st.SearchStrategy[VariableDefinition]:
    if depth == 0:
        return SCALARS
    return st.one_of(SCALARS, _containers(_definitions(depth - 1)))


DEFINITIONS = _definitions(3)


@settings(max_examples=100, deadline=None)
@given(DEFINITIONS)
def test_property_default_encodes_inside_the_space(defn: VariableDefinition) -> None:
    encoded = to_space_value(defn, defn.derived_default())
    assert space_for(defn).contains(encoded)
    validate_value(defn, from_space_value(defn, encoded), "default")


@settings(max_examples=100, deadline=None)
@given(DEFINITIONS, st.integers(0, 2**32 - 1))
def test_property_samples_decode_to_valid_values(defn: VariableDefinition, seed: int) -> None:
    space = space_for(defn)
    space.seed(seed)
    value = validate_value(defn, from_space_value(defn, space.sample()), "sample")
    assert space.contains(to_space_value(defn, value))


@settings(max_examples=100, deadline=None)
@given(DEFINITIONS)
def test_property_zero_value_lies_in_the_space_and_decodes(defn: VariableDefinition) -> None:
    space = space_for(defn)
    zero = zero_value(space)
    assert space.contains(zero)
    validate_value(defn, from_space_value(defn, zero), "zero")
