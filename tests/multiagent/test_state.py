"""Generated state models and ``StateValidator``: defaults, coercion, limits and error paths.

The validator is the env's guard against a dynamics bug: every constraint must hold inside
containers too, and every error must name the exact place (``agents[T].color[1]``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from multiagent.errors import StateValidationError
from multiagent.state import (
    StateValidator,
    create_agent_state_model,
    create_global_state_model,
    definitions_hash,
    validate_value,
)
from multiagent.variables import VariableDefinition


def define(**fields: Any) -> VariableDefinition:
    return VariableDefinition.model_validate(fields)


def definitions(**fields: dict[str, Any]) -> dict[str, VariableDefinition]:
    return {name: VariableDefinition.model_validate(spec) for name, spec in fields.items()}


def state_errors(validator: StateValidator, agents: Any, **kw: Any) -> list[tuple[str, str]]:
    """The ``(path, message)`` list of the ``StateValidationError`` that ``agents`` must raise."""
    with pytest.raises(StateValidationError) as caught:
        validator.agents(agents, **kw)
    return caught.value.errors


def global_errors(validator: StateValidator, state: Any, **kw: Any) -> list[tuple[str, str]]:
    with pytest.raises(StateValidationError) as caught:
        validator.global_state(state, **kw)
    return caught.value.errors


# -- generated pydantic models ------------------------------------------------------------------

AGENT_VARS = definitions(
    gold={"type": "int", "min": 0, "max": 100, "default": 5},
    wealth={"type": "float", "min": 0},
    alive={"type": "bool"},
    mood={"type": "categorical", "values": ["calm", "angry"]},
    location={"type": "tuple", "item_types": ["float", "float"]},
    color={
        "type": "tuple",
        "item_types": [{"type": "int", "min": 0, "max": 255}] * 3,
        "default": [255, 255, 255],
    },
    inventory={"type": "dict", "key_type": "str", "value_type": "float"},
    history={"type": "list", "item_type": "str"},
    note={"type": "str"},
    stats={
        "type": "object",
        "schema": {"hp": {"type": "float", "min": 0, "max": 10, "default": 7}, "nick": "str"},
    },
)


def test_agent_model_fills_every_default() -> None:
    Model = create_agent_state_model(AGENT_VARS)
    state = Model(name="Trader_1")
    assert state.name == "Trader_1"
    assert state.gold == 5
    assert state.wealth == 0.0
    assert state.alive is False
    assert state.mood == "calm"
    assert state.location == (0.0, 0.0)
    assert state.color == (255, 255, 255)
    assert state.inventory == {}
    assert state.history == []
    assert state.note is None
    assert state.stats.model_dump() == {"hp": 7.0, "nick": None}


def test_agent_model_requires_a_name() -> None:
    Model = create_agent_state_model(AGENT_VARS)
    with pytest.raises(ValidationError, match="name"):
        Model()
    with pytest.raises(ValidationError, match="at least 1 character"):
        Model(name="")


def test_agent_model_rejects_unknown_variables() -> None:
    Model = create_agent_state_model(AGENT_VARS)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Model(name="T", silver=1)


def test_global_model_has_no_name_and_fills_defaults() -> None:
    Model = create_global_state_model(definitions(turn_count={"type": "int", "default": 3}))
    assert Model().model_dump() == {"turn_count": 3}
    assert "name" not in Model.model_fields


def test_lax_coercion() -> None:
    """Pydantic's lax mode: "3" is 3 for an int, a list is a tuple, an int is a float."""
    Model = create_agent_state_model(AGENT_VARS)
    state = Model(name="T", gold="3", location=[1, 2], wealth=4, color=[1, 2, 3])
    assert state.gold == 3 and type(state.gold) is int
    assert state.location == (1.0, 2.0) and type(state.location) is tuple
    assert type(state.wealth) is float
    assert state.color == (1, 2, 3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("gold", "101", "less than or equal to 100", id="coerced-past-max"),
        pytest.param("gold", -1, "greater than or equal to 0", id="below-min"),
        pytest.param("gold", 2.5, "fractional part", id="fraction-to-int"),
        pytest.param("gold", "three", "valid integer", id="unparseable"),
        pytest.param("wealth", "-0.5", "greater than or equal to 0", id="float-str-past-min"),
        pytest.param("color", [1, 2, 300], "less than or equal to 255", id="tuple-element"),
        pytest.param("location", [1.0], "Field required", id="tuple-too-short"),
        pytest.param("mood", "sad", "'calm' or 'angry'", id="categorical"),
        pytest.param("stats", {"hp": 11}, "less than or equal to 10", id="object-field"),
    ],
)
def test_coercion_never_passes_a_bound(field: str, value: Any, message: str) -> None:
    Model = create_agent_state_model(AGENT_VARS)
    with pytest.raises(ValidationError, match=message):
        Model(name="T", **{field: value})


def test_object_fields_are_required_unless_their_default_is_null() -> None:
    Model = create_agent_state_model(AGENT_VARS)
    assert Model(name="T", stats={"hp": 1}).stats.nick is None
    with pytest.raises(ValidationError, match=r"stats\.hp\n  Field required"):
        Model(name="T", stats={"nick": "x"})


def test_two_objects_keep_their_own_field_defaults() -> None:
    """Regression for the late-binding closure bug: each object's field uses its own default."""
    variables = definitions(
        first={
            "type": "object",
            "schema": {
                "level": {"type": "int", "default": 1},
                "tags": {"type": "list", "item_type": "str", "default": ["a"]},
            },
        },
        second={
            "type": "object",
            "schema": {
                "level": {"type": "int", "default": 2},
                "tags": {"type": "list", "item_type": "str", "default": ["b"]},
            },
        },
    )
    Model = create_agent_state_model(variables)
    state = Model(name="T")
    assert state.first.model_dump() == {"level": 1, "tags": ["a"]}
    assert state.second.model_dump() == {"level": 2, "tags": ["b"]}


def test_variables_with_the_same_default_shape_keep_their_own_values() -> None:
    """The same late-binding risk at the top level: each variable gets its own default."""
    Model = create_agent_state_model(
        definitions(
            a={"type": "int", "default": 1},
            b={"type": "int", "default": 2},
            c={"type": "dict", "key_type": "str", "value_type": "int", "default": {"x": 3}},
        )
    )
    assert Model(name="T").model_dump(exclude={"name"}) == {"a": 1, "b": 2, "c": {"x": 3}}


def test_mutating_an_instance_does_not_touch_the_defaults() -> None:
    """Defaults are copied per instance: one agent's inventory is not every agent's."""
    variables = definitions(
        inventory={"type": "dict", "key_type": "str", "value_type": "int", "default": {"x": 1}},
        history={"type": "list", "item_type": "int", "default": [1]},
        stats={
            "type": "object",
            "schema": {
                "tags": {"type": "list", "item_type": "str", "default": ["a"]},
            },
            "default": {"tags": ["a"]},
        },
    )
    Model = create_agent_state_model(variables)
    first = Model(name="A")
    first.inventory["y"] = 2
    first.history.append(2)
    first.stats.tags.append("b")
    fresh = Model(name="B")
    assert fresh.inventory == {"x": 1}
    assert fresh.history == [1]
    assert fresh.stats.tags == ["a"]
    assert variables["inventory"].default == {"x": 1}
    assert variables["stats"].default == {"tags": ["a"]}


def test_model_cache_returns_the_same_class_for_equal_definitions() -> None:
    """Generated models are cached by a stable hash: rebuilding them per step would be slow."""
    first = create_agent_state_model(AGENT_VARS)
    rebuilt = {
        name: VariableDefinition.model_validate(defn.model_dump(by_alias=True))
        for name, defn in AGENT_VARS.items()
    }
    assert create_agent_state_model(rebuilt) is first
    assert issubclass(first, BaseModel)


def test_model_cache_tells_different_definitions_apart() -> None:
    five = create_agent_state_model(definitions(gold={"type": "int", "default": 5}))
    six = create_agent_state_model(definitions(gold={"type": "int", "default": 6}))
    assert five is not six
    assert five(name="T").gold == 5 and six(name="T").gold == 6
    agent = create_agent_state_model(definitions(gold={"type": "int"}))
    global_ = create_global_state_model(definitions(gold={"type": "int"}))
    assert agent is not global_


def test_definitions_hash_is_stable_and_sensitive() -> None:
    same = definitions(x={"type": "float", "max": 1})
    assert definitions_hash(same) == definitions_hash(definitions(x={"type": "float", "max": 1}))
    assert definitions_hash(same) != definitions_hash(definitions(x={"type": "float", "max": 2}))


# -- StateValidator: run-time size limits -------------------------------------------------------

SIZED = definitions(
    history={"type": "list", "item_type": "int"},
    inventory={"type": "dict", "key_type": "str", "value_type": "int"},
    recent={"type": "list", "item_type": "int", "max_length": 10},
    text={"type": "str"},
    short={"type": "str", "max_length": 5},
)


def sized_state(**changes: Any) -> dict[str, dict[str, Any]]:
    """One agent, Trader_1, with every sized variable at its limit, then ``changes``."""
    state = {
        "name": "Trader_1",
        "history": list(range(1000)),
        "inventory": {f"k{i}": i for i in range(1000)},
        "recent": list(range(10)),
        "text": "x" * 10_000,
        "short": "abcde",
    }
    return {"Trader_1": {**state, **changes}}


def test_sizes_at_the_limit_are_accepted() -> None:
    validated = StateValidator(SIZED, {}).agents(sized_state())
    assert len(validated["Trader_1"]["history"]) == 1000
    assert len(validated["Trader_1"]["inventory"]) == 1000
    assert len(validated["Trader_1"]["text"]) == 10_000


def test_list_past_1000_items_is_rejected_with_the_exact_message() -> None:
    errors = state_errors(StateValidator(SIZED, {}), sized_state(history=list(range(1001))))
    assert errors == [
        (
            "agents[Trader_1].history",
            "List exceeds maximum size of 1000 items (got 1001 items) at field "
            "'agents[Trader_1].history'",
        )
    ]


def test_list_past_its_max_length_is_rejected() -> None:
    errors = state_errors(StateValidator(SIZED, {}), sized_state(recent=list(range(11))))
    assert errors == [
        (
            "agents[Trader_1].recent",
            "List exceeds maximum size of 10 items (got 11 items) at field "
            "'agents[Trader_1].recent'",
        )
    ]


def test_dict_past_1000_items_is_rejected() -> None:
    errors = state_errors(
        StateValidator(SIZED, {}), sized_state(inventory={f"k{i}": i for i in range(1001)})
    )
    [(path, message)] = errors
    assert path == "agents[Trader_1].inventory"
    assert message.startswith("Dictionary exceeds maximum size of 1000 items")
    assert message.endswith("at field 'agents[Trader_1].inventory'")


def test_dict_size_message_has_the_actual_count() -> None:
    errors = state_errors(
        StateValidator(SIZED, {}), sized_state(inventory={f"k{i}": i for i in range(1001)})
    )
    assert errors == [
        (
            "agents[Trader_1].inventory",
            "Dictionary exceeds maximum size of 1000 items (got 1001 items) at field "
            "'agents[Trader_1].inventory'",
        )
    ]


def test_str_past_10000_characters_is_rejected() -> None:
    errors = state_errors(StateValidator(SIZED, {}), sized_state(text="x" * 10_001))
    assert errors == [
        (
            "agents[Trader_1].text",
            "String exceeds maximum length of 10000 characters (got 10001 characters) at field "
            "'agents[Trader_1].text'",
        )
    ]


def test_str_past_its_max_length_is_rejected() -> None:
    errors = state_errors(StateValidator(SIZED, {}), sized_state(short="abcdef"))
    assert errors == [
        (
            "agents[Trader_1].short",
            "String exceeds maximum length of 5 characters (got 6 characters) at field "
            "'agents[Trader_1].short'",
        )
    ]


def test_size_limits_hold_inside_containers() -> None:
    validator = StateValidator(
        definitions(
            grid={
                "type": "list",
                "item_type": {"type": "list", "item_type": "int", "max_length": 2},
            }
        ),
        {},
    )
    errors = state_errors(validator, {"T": {"name": "T", "grid": [[1], [1, 2, 3]]}})
    assert errors == [
        (
            "agents[T].grid[1]",
            "List exceeds maximum size of 2 items (got 3 items) at field 'agents[T].grid[1]'",
        )
    ]


# -- StateValidator: constraints inside containers ----------------------------------------------

NESTED = definitions(
    color={"type": "tuple", "item_types": [{"type": "int", "min": 0, "max": 100}] * 3},
    tags={"type": "list", "item_type": {"type": "categorical", "values": ["spawn", "move"]}},
    stats={"type": "object", "schema": {"hp": {"type": "float", "min": 0, "max": 10}}},
    inventory={"type": "dict", "key_type": "str", "value_type": {"type": "float", "min": 0}},
    towns={
        "type": "dict",
        "key_type": "str",
        "value_type": {"type": "dict", "schema": {"population": {"type": "int", "min": 0}}},
    },
    by_id={"type": "dict", "key_type": "int", "value_type": "str"},
)


def nested_state(**changes: Any) -> dict[str, dict[str, Any]]:
    state = {
        "name": "T",
        "color": (1, 2, 3),
        "tags": ["spawn"],
        "stats": {"hp": 5.0},
        "inventory": {"food": 1.0},
        "towns": {"Rome": {"population": 10}},
        "by_id": {1: "one"},
    }
    return {"T": {**state, **changes}}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"color": [1, 500, 3]},
            ("agents[T].color[1]", "Input should be less than or equal to 100"),
            id="tuple-element",
        ),
        pytest.param(
            {"tags": ["spawn", "move", "fly"]},
            ("agents[T].tags[2]", "'fly' is not one of spawn, move"),
            id="categorical-in-list",
        ),
        pytest.param(
            {"stats": {"hp": 11}},
            ("agents[T].stats.hp", "Input should be less than or equal to 10"),
            id="object-field",
        ),
        pytest.param(
            {"inventory": {"food": 1.0, "metal": -2.0}},
            ("agents[T].inventory[metal]", "Input should be greater than or equal to 0"),
            id="dict-value",
        ),
        pytest.param(
            {"towns": {"Rome": {"population": -1}}},
            ("agents[T].towns[Rome].population", "Input should be greater than or equal to 0"),
            id="schema-dict-in-dict",
        ),
        pytest.param(
            {"by_id": {"x": "one"}},
            (
                "agents[T].by_id[x] (key)",
                "Input should be a valid integer, unable to parse string as an integer",
            ),
            id="dict-key",
        ),
        pytest.param(
            {"stats": {"hp": 1.0, "mp": 2.0}},
            ("agents[T].stats.mp", "Extra inputs are not permitted"),
            id="object-extra-field",
        ),
    ],
)
def test_constraint_inside_a_container_names_the_element(
    changes: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert state_errors(StateValidator(NESTED, {}), nested_state(**changes)) == [expected]


def test_valid_nested_state_comes_back_as_plain_data() -> None:
    validated = StateValidator(NESTED, {}).agents(nested_state(color=[1, 2, 3], by_id={"7": "x"}))
    agent = validated["T"]
    assert agent["color"] == (1, 2, 3) and type(agent["color"]) is tuple
    assert agent["by_id"] == {7: "x"}
    assert type(agent["stats"]) is dict
    assert agent["towns"] == {"Rome": {"population": 10}}


# -- StateValidator: completeness, JSON, globals, strings, floats -------------------------------

SIMPLE = definitions(
    gold={"type": "int", "min": 0, "max": 100},
    wealth={"type": "float"},
    location={"type": "tuple", "item_types": ["float", "float"]},
)
GLOBALS = definitions(
    weather={"type": "categorical", "values": ["sun", "rain"]},
    prices={"type": "dict", "key_type": "str", "value_type": {"type": "float", "min": 0}},
)


def simple_state(**changes: Any) -> dict[str, Any]:
    return {"name": "T", "gold": 1, "wealth": 1.0, "location": [0.0, 0.0], **changes}


def test_missing_variable_is_reported() -> None:
    state = simple_state()
    del state["wealth"]
    assert state_errors(StateValidator(SIMPLE, {}), {"T": state}) == [
        ("agents[T].wealth", "missing (every variable must be present)")
    ]


def test_extra_variable_is_rejected() -> None:
    assert state_errors(StateValidator(SIMPLE, {}), {"T": simple_state(silver=3)}) == [
        ("agents[T].silver", "Extra inputs are not permitted")
    ]


def test_all_errors_are_reported_at_once() -> None:
    """Two bad fields (in two agents) give two entries, so one run shows every problem."""
    errors = state_errors(
        StateValidator(SIMPLE, {}),
        {"T": simple_state(gold=101, location=[0.0, "far"]), "U": simple_state(name="U", gold=-1)},
    )
    assert sorted(path for path, _ in errors) == [
        "agents[T].gold",
        "agents[T].location[1]",
        "agents[U].gold",
    ]


def test_json_input_gives_the_same_result() -> None:
    """validate_json is the fast path for checkpoints: same values, tuples restored."""
    validator = StateValidator(SIMPLE, GLOBALS)
    data = {"T": simple_state(gold="7", location=[1, 2])}
    from_python = validator.agents(data)
    from_json = validator.agents(json.dumps(data).encode(), json=True)
    expected = {"T": {"name": "T", "gold": 7, "wealth": 1.0, "location": (1.0, 2.0)}}
    assert from_json == expected
    assert from_python == expected
    assert type(from_json["T"]["location"]) is tuple
    world = {"weather": "sun", "prices": {"food": 2}}
    assert validator.global_state(json.dumps(world), json=True) == validator.global_state(world)


def test_json_input_errors_have_the_same_paths() -> None:
    validator = StateValidator(SIMPLE, {})
    data = {"T": simple_state(gold=101)}
    assert state_errors(validator, json.dumps(data).encode(), json=True) == state_errors(
        validator, data
    )


def test_global_state_paths_start_with_global_state() -> None:
    validator = StateValidator(SIMPLE, GLOBALS)
    errors = global_errors(validator, {"weather": "snow", "prices": {"food": -1}})
    assert errors == [
        ("global_state.weather", "'snow' is not one of sun, rain"),
        ("global_state.prices[food]", "Input should be greater than or equal to 0"),
    ]
    assert global_errors(validator, {"weather": "sun"}) == [
        ("global_state.prices", "missing (every variable must be present)")
    ]


@pytest.mark.parametrize(
    ("pattern", "value", "accepted"),
    [
        pytest.param("[a-z]+", "abc", True, id="match"),
        pytest.param("[a-z]+", "abc1", False, id="trailing-junk"),
        pytest.param("[a-z]+", "1abc", False, id="leading-junk"),
        pytest.param("[a-z]+", "", False, id="empty-forbidden"),
        pytest.param("[a-z]*", "", True, id="empty-allowed-by-pattern"),
        pytest.param("a|bc", "ac", False, id="alternation-is-anchored"),
        pytest.param("^[A-Z][a-z]{2,4}$", "Rome", True, id="explicit-anchors"),
    ],
)
def test_pattern_is_a_whole_string_match(pattern: str, value: str, accepted: bool) -> None:
    validator = StateValidator(definitions(code={"type": "str", "pattern": pattern}), {})
    state = {"T": {"name": "T", "code": value}}
    if accepted:
        assert validator.agents(state)["T"]["code"] == value
    else:
        [(path, message)] = state_errors(validator, state)
        assert path == "agents[T].code"
        assert "whole string" in message


def test_unrestricted_str_accepts_empty_and_null() -> None:
    validator = StateValidator(definitions(note={"type": "str"}), {})
    assert validator.agents({"T": {"name": "T", "note": ""}})["T"]["note"] == ""
    assert validator.agents({"T": {"name": "T", "note": None}})["T"]["note"] is None


def test_str_with_non_null_default_rejects_null() -> None:
    validator = StateValidator(definitions(title={"type": "str", "default": "Sir"}), {})
    state_errors(validator, {"T": {"name": "T", "title": None}})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_floats_are_rejected_everywhere(value: float) -> None:
    validator = StateValidator(
        definitions(
            wealth={"type": "float"},
            prices={"type": "list", "item_type": "float"},
            stats={"type": "object", "schema": {"hp": "float"}},
        ),
        definitions(temperature={"type": "float"}),
    )
    errors = state_errors(
        validator, {"T": {"name": "T", "wealth": value, "prices": [value], "stats": {"hp": value}}}
    )
    assert [path for path, _ in errors] == [
        "agents[T].wealth",
        "agents[T].prices[0]",
        "agents[T].stats.hp",
    ]
    assert all(message == "Input should be a finite number" for _, message in errors)
    assert global_errors(validator, {"temperature": value}) == [
        ("global_state.temperature", "Input should be a finite number")
    ]


def test_non_finite_json_float_is_rejected() -> None:
    validator = StateValidator({}, definitions(temperature={"type": "float"}))
    assert global_errors(validator, b'{"temperature": NaN}', json=True) == [
        ("global_state.temperature", "Input should be a finite number")
    ]


# -- validate_value: one value (defaults, actions) ----------------------------------------------


def test_validate_value_coerces_and_names_the_path() -> None:
    color = define(type="tuple", item_types=[{"type": "int", "min": 0, "max": 255}] * 3)
    assert validate_value(color, ["1", 2, 3], "actions.paint") == (1, 2, 3)
    with pytest.raises(StateValidationError) as caught:
        validate_value(color, [1, 500, -1], "actions.paint")
    assert caught.value.errors == [
        ("actions.paint[1]", "Input should be less than or equal to 255"),
        ("actions.paint[2]", "Input should be greater than or equal to 0"),
    ]


def test_validate_value_rejects_nan() -> None:
    with pytest.raises(StateValidationError, match="finite number"):
        validate_value(define(type="float"), math.nan, "actions.bid")


def test_validate_value_object_field_with_null_default_is_optional() -> None:
    stats = define(type="object", schema={"hp": {"type": "float", "default": 1}, "nick": "str"})
    assert validate_value(stats, {"hp": 2}, "actions.stats") == {"hp": 2.0, "nick": None}


def test_dict_declared_keys_are_enforced() -> None:
    """``keys`` lists the keys a dynamic dict may hold; any other key is named as the culprit."""
    inventory = define(type="dict", key_type="str", value_type="int", keys=["food", "metal"])
    assert validate_value(inventory, {"food": 1}, "x") == {"food": 1}
    with pytest.raises(StateValidationError) as caught:
        validate_value(inventory, {"food": 1, "gold": 1}, "x")
    assert caught.value.errors == [("x[gold] (key)", "Input should be 'food' or 'metal'")]
    validator = StateValidator({"inventory": inventory}, {})
    assert state_errors(validator, {"T": {"name": "T", "inventory": {"gold": 1}}}) == [
        ("agents[T].inventory[gold] (key)", "Input should be 'food' or 'metal'")
    ]
