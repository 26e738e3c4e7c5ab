"""``VariableDefinition``: the shape rules of each type, nesting depths and derived defaults.

A definition that breaks a rule must fail when it is built (so a config fails at load, naming the
field), never later in a running env.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from multiagent.state import validate_value
from multiagent.variables import (
    MAX_DICT_DEPTH,
    MAX_DICT_ITEMS,
    MAX_LIST_DEPTH,
    MAX_LIST_ITEMS,
    MAX_STR_LENGTH,
    MAX_TOTAL_DEPTH,
    VariableDefinition,
    depths,
)


def define(**fields: Any) -> VariableDefinition:
    """Build a definition the way a config does (from a mapping, aliases such as ``schema``)."""
    return VariableDefinition.model_validate(fields)


def test_limits_are_the_documented_ones() -> None:
    """The limits are part of the contract (docs and error messages quote them)."""
    assert (MAX_DICT_DEPTH, MAX_LIST_DEPTH, MAX_TOTAL_DEPTH) == (4, 3, 10)
    assert (MAX_DICT_ITEMS, MAX_LIST_ITEMS, MAX_STR_LENGTH) == (1000, 1000, 10_000)


# -- shape rules --------------------------------------------------------------------------------

SHAPE_ERRORS = [
    pytest.param(
        {"type": "dict", "key_type": "str", "value_type": "int", "schema": {"a": "int"}},
        r"dict needs exactly one of \(key_type \+ value_type\) or schema",
        id="dict-both-modes",
    ),
    pytest.param(
        {"type": "dict"},
        r"dict needs exactly one of \(key_type \+ value_type\) or schema",
        id="dict-neither-mode",
    ),
    pytest.param(
        {"type": "dict", "key_type": "str"},
        "a dynamic dict needs both key_type and value_type",
        id="dict-key-type-without-value-type",
    ),
    pytest.param(
        {"type": "dict", "value_type": "int"},
        "a dynamic dict needs both key_type and value_type",
        id="dict-value-type-without-key-type",
    ),
    pytest.param(
        {"type": "dict", "key_type": "int", "value_type": "int", "keys": ["a"]},
        "keys can only be declared for key_type 'str'",
        id="dict-keys-with-int-keys",
    ),
    pytest.param(
        {"type": "dict", "schema": {"a": "int"}, "keys": ["a"]},
        "keys can only be declared for key_type 'str'",
        id="dict-keys-with-schema",
    ),
    pytest.param({"type": "list"}, "list needs item_type", id="list-without-item-type"),
    pytest.param(
        {"type": "list", "item_type": "int", "max_length": 0},
        r"max_length of a list must be 1\.\.1000, got 0",
        id="list-max-length-0",
    ),
    pytest.param(
        {"type": "list", "item_type": "int", "max_length": 1001},
        r"max_length of a list must be 1\.\.1000, got 1001",
        id="list-max-length-1001",
    ),
    pytest.param(
        {"type": "tuple", "item_types": []},
        "tuple needs a non-empty item_types list",
        id="tuple-empty-item-types",
    ),
    pytest.param(
        {"type": "tuple"}, "tuple needs a non-empty item_types list", id="tuple-no-item-types"
    ),
    pytest.param(
        {"type": "str", "max_length": 0},
        "max_length of a str must be > 0, got 0",
        id="str-max-length-0",
    ),
    pytest.param(
        {"type": "str", "pattern": "[a-"},
        r"pattern '\[a-' is not a valid regex",
        id="str-bad-regex",
    ),
    pytest.param({"type": "object"}, "object needs a non-empty schema", id="object-no-schema"),
    pytest.param(
        {"type": "object", "schema": {}}, "object needs a non-empty schema", id="object-empty"
    ),
    pytest.param(
        {"type": "categorical", "values": []},
        "categorical needs a non-empty 'values' list",
        id="categorical-empty",
    ),
    pytest.param(
        {"type": "categorical"},
        "categorical needs a non-empty 'values' list",
        id="categorical-no-values",
    ),
    pytest.param(
        {"type": "categorical", "values": ["a", "b", "a"]},
        r"categorical values repeat: \['a', 'b', 'a'\]",
        id="categorical-duplicates",
    ),
    pytest.param(
        {"type": "int", "min": 0.5},
        "min of an int must be a whole number, got 0.5",
        id="int-min-fraction",
    ),
    pytest.param(
        {"type": "int", "max": 2.5},
        "max of an int must be a whole number, got 2.5",
        id="int-max-fraction",
    ),
    pytest.param(
        {"type": "float", "min": 2, "max": 1},
        r"min \(2\) is greater than max \(1\)",
        id="float-min-above-max",
    ),
    pytest.param(
        {"type": "int", "min": 5, "max": -5},
        r"min \(5\) is greater than max \(-5\)",
        id="int-min-above-max",
    ),
    pytest.param(
        {"type": "float", "values": ["a"]},
        "values does not apply to type 'float'",
        id="values-on-float",
    ),
    pytest.param(
        {"type": "dict", "key_type": "str", "value_type": "int", "max_length": 3},
        "max_length does not apply to type 'dict'",
        id="max-length-on-dict",
    ),
    pytest.param({"type": "bool", "min": 0}, "min does not apply to type 'bool'", id="min-on-bool"),
    pytest.param(
        {"type": "int", "pattern": "[0-9]+"},
        "pattern does not apply to type 'int'",
        id="pattern-on-int",
    ),
    pytest.param(
        {"type": "list", "item_types": ["int"]},
        "item_types does not apply to type 'list'",
        id="item-types-on-list",
    ),
    pytest.param(
        {"type": "object", "schema": {"a": "int"}, "key_type": "str"},
        "key_type does not apply to type 'object'",
        id="key-type-on-object",
    ),
    pytest.param(
        {"type": "float", "schema": {"a": "int"}},
        "schema does not apply to type 'float'",
        id="schema-on-float-named-by-alias",
    ),
    pytest.param(
        {"type": "dict", "key_type": "float", "value_type": "int"},
        "Input should be 'str' or 'int'",
        id="dict-float-keys",
    ),
    pytest.param({"type": "set"}, "Input should be 'float', 'int'", id="unknown-type"),
    pytest.param(
        {"type": "list", "item_type": "int", "maxlen": 3},
        "Extra inputs are not permitted",
        id="unknown-field",
    ),
]


@pytest.mark.parametrize(("fields", "message"), SHAPE_ERRORS)
def test_shape_rule_rejects_with_message(fields: dict[str, Any], message: str) -> None:
    """Each broken rule is refused at definition time with a message that says which rule."""
    with pytest.raises(ValidationError, match=message):
        define(**fields)


def test_shape_rule_inside_a_nested_definition_is_located() -> None:
    """A bad nested definition is reported at its own location, not at the outer variable."""
    with pytest.raises(ValidationError) as caught:
        define(type="dict", key_type="str", value_type={"type": "list"})
    (error,) = caught.value.errors()
    assert error["loc"] == ("value_type",)
    assert "list needs item_type" in error["msg"]


VALID_SHAPES = [
    pytest.param({"type": "dict", "key_type": "str", "value_type": "int"}, id="dynamic-dict"),
    pytest.param({"type": "dict", "key_type": "int", "value_type": "float"}, id="int-keys"),
    pytest.param(
        {"type": "dict", "key_type": "str", "value_type": "int", "keys": ["food", "metal"]},
        id="dict-declared-keys",
    ),
    pytest.param({"type": "dict", "schema": {"hp": "float"}}, id="fixed-schema-dict"),
    pytest.param({"type": "list", "item_type": "int", "max_length": 1}, id="list-max-length-1"),
    pytest.param(
        {"type": "list", "item_type": "int", "max_length": 1000}, id="list-max-length-1000"
    ),
    pytest.param({"type": "tuple", "item_types": ["float"]}, id="one-tuple"),
    pytest.param({"type": "str", "max_length": 1, "pattern": "[a-z]"}, id="str-constrained"),
    pytest.param({"type": "object", "schema": {"a": "int"}}, id="object"),
    pytest.param({"type": "categorical", "values": ["only"]}, id="categorical-one-value"),
    pytest.param({"type": "int", "min": 3.0, "max": 3}, id="int-whole-float-bounds-equal"),
    pytest.param({"type": "float", "min": -1.5, "max": 2.5}, id="float-bounds"),
]


@pytest.mark.parametrize("fields", VALID_SHAPES)
def test_valid_shapes_load(fields: dict[str, Any]) -> None:
    """The boundary cases of each rule are accepted (the rules are not stricter than stated)."""
    assert define(**fields).type == fields["type"]


def test_list_max_length_boundaries() -> None:
    """max_length must be 1..1000 inclusive: both ends load, both neighbours fail."""
    for good in (1, 1000):
        assert define(type="list", item_type="int", max_length=good).max_length == good
    for bad in (0, 1001):
        with pytest.raises(ValidationError, match=f"got {bad}"):
            define(type="list", item_type="int", max_length=bad)


# -- scalar-name expansion ----------------------------------------------------------------------


def test_scalar_name_expands_to_a_definition() -> None:
    """``value_type: float`` is the same as ``value_type: {type: float}`` everywhere it is used."""
    short = define(type="dict", key_type="str", value_type="float")
    long = define(type="dict", key_type="str", value_type={"type": "float"})
    assert short == long
    assert short.value_type == VariableDefinition(type="float")
    assert define(type="list", item_type="str").item_type == VariableDefinition(type="str")
    mixed = define(type="tuple", item_types=["int", {"type": "float", "min": 0}])
    assert mixed.item_types == [
        VariableDefinition(type="int"),
        VariableDefinition(type="float", min=0),
    ]
    assert define(type="object", schema={"a": "bool"}).schema_ == {
        "a": VariableDefinition(type="bool")
    }
    assert VariableDefinition.model_validate("float") == VariableDefinition(type="float")


def test_scalar_name_must_be_a_type() -> None:
    """A misspelt scalar name is rejected, not read as some default type."""
    with pytest.raises(ValidationError, match="Input should be 'float'"):
        define(type="list", item_type="flaot")


def test_definitions_are_frozen() -> None:
    """Definitions are cache keys for generated models: mutating one would corrupt the cache."""
    defn = define(type="int", min=0)
    with pytest.raises(ValidationError):
        defn.min = 5  # type: ignore[misc]


# -- depths -------------------------------------------------------------------------------------


def test_depths_of_a_scalar_are_zero() -> None:
    assert depths(define(type="float")) == (0, 0, 0)


def test_dict_in_dict_is_dict_depth_two() -> None:
    """``dict[str, dict[str, int]]`` is the spec's own example of dict depth 2."""
    nested = define(
        type="dict",
        key_type="str",
        value_type={"type": "dict", "key_type": "str", "value_type": "int"},
    )
    assert depths(nested) == (2, 0, 2)


def test_fixed_schema_dict_counts_as_dict() -> None:
    assert depths(define(type="dict", schema={"a": "int"})) == (1, 0, 1)


def test_list_of_dict_counts_each_kind_once() -> None:
    inner = {"type": "dict", "key_type": "str", "value_type": "int"}
    assert depths(define(type="list", item_type=inner)) == (1, 1, 2)


def test_tuple_and_object_count_toward_overall_only() -> None:
    """Tuples and objects have no own limit; they only add to the overall depth."""
    tuple_of_list = define(type="tuple", item_types=["int", {"type": "list", "item_type": "int"}])
    assert depths(tuple_of_list) == (0, 1, 2)
    object_of_tuple = define(type="object", schema={"a": {"type": "tuple", "item_types": ["int"]}})
    assert depths(object_of_tuple) == (0, 0, 2)


def test_depth_is_the_deepest_branch() -> None:
    """Siblings do not add up: the deepest path through the definition counts."""
    defn = define(
        type="object",
        schema={
            "shallow": {"type": "list", "item_type": "int"},
            "deep": {
                "type": "dict",
                "key_type": "str",
                "value_type": {"type": "dict", "key_type": "str", "value_type": "int"},
            },
        },
    )
    assert depths(defn) == (2, 1, 3)


# -- derived defaults ---------------------------------------------------------------------------

DERIVED_DEFAULTS = [
    pytest.param({"type": "float"}, 0.0, id="float"),
    pytest.param({"type": "float", "min": 3}, 3.0, id="float-min"),
    pytest.param({"type": "float", "max": -2}, -2.0, id="float-negative-max"),
    pytest.param({"type": "int"}, 0, id="int"),
    pytest.param({"type": "int", "min": -5, "max": -1}, -5, id="int-negative-range"),
    pytest.param({"type": "int", "min": 2.0}, 2, id="int-whole-float-min"),
    pytest.param({"type": "bool"}, False, id="bool"),
    pytest.param({"type": "categorical", "values": ["x", "y"]}, "x", id="categorical-first"),
    pytest.param({"type": "str"}, None, id="str-null"),
    pytest.param({"type": "str", "default": ""}, "", id="str-empty-declared"),
    pytest.param({"type": "dict", "key_type": "str", "value_type": "int"}, {}, id="dict"),
    pytest.param({"type": "list", "item_type": "int"}, [], id="list"),
    pytest.param(
        {"type": "tuple", "item_types": ["int", "str", {"type": "float", "min": 4}]},
        (0, None, 4.0),
        id="tuple-per-element",
    ),
    pytest.param(
        {
            "type": "object",
            "schema": {
                "a": {"type": "int", "min": 2},
                "b": "str",
                "c": {"type": "categorical", "values": ["q", "r"]},
            },
        },
        {"a": 2, "b": None, "c": "q"},
        id="object-per-field",
    ),
    pytest.param(
        {"type": "dict", "schema": {"hp": {"type": "float", "max": -1}}},
        {"hp": -1.0},
        id="fixed-schema-dict",
    ),
    pytest.param({"type": "int", "min": 0, "default": 7}, 7, id="declared-wins"),
]


@pytest.mark.parametrize(("fields", "expected"), DERIVED_DEFAULTS)
def test_derived_default(fields: dict[str, Any], expected: Any) -> None:
    """A variable without a default starts at its type's natural value, inside its bounds."""
    value = define(**fields).derived_default()
    assert value == expected
    assert type(value) is type(expected)


def test_derived_default_of_a_tuple_is_a_tuple_of_element_types() -> None:
    value = define(type="tuple", item_types=["int", "float"]).derived_default()
    assert value == (0, 0.0)
    assert [type(v) for v in value] == [int, float]


# -- property: every derived default of a valid scalar validates --------------------------------

_WHOLE = st.integers(-(2**53), 2**53).map(float)
_REAL = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def _bounded(draw: st.DrawFn, kind: str, bound: st.SearchStrategy[float]) -> dict[str, Any]:
    low, high = draw(st.none() | bound), draw(st.none() | bound)
    if low is not None and high is not None and low > high:
        low, high = high, low
    return {"type": kind, "min": low, "max": high}


_names = st.text(min_size=1, max_size=8)
scalar_definitions = st.one_of(
    _bounded("float", _REAL),
    _bounded("int", _WHOLE),
    st.just({"type": "bool"}),
    st.lists(_names, min_size=1, max_size=6, unique=True).map(
        lambda values: {"type": "categorical", "values": values}
    ),
    st.builds(
        lambda length: {"type": "str", "max_length": length},
        st.none() | st.integers(1, MAX_STR_LENGTH),
    ),
)


@settings(max_examples=300, deadline=None)
@given(scalar_definitions)
def test_derived_default_of_any_valid_scalar_validates(fields: dict[str, Any]) -> None:
    """The default a type derives must be a value its own validator accepts, unchanged."""
    defn = define(**fields)
    default = defn.derived_default()
    assert validate_value(defn, default, "x") == default
    if defn.min is not None:
        assert default >= defn.min
    if defn.max is not None:
        assert default <= defn.max
