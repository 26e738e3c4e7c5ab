"""``StateValidator``'s fast paths against its reference, the TypedDict validator that forbids
unknown keys inside pydantic-core.

For Python data the fast path ignores unknown keys and counts them instead; for JSON a model reads
the top-level state. Either may only ever answer what the reference answers: the same values
(same types, same order) or the same errors. A property test throws near-valid states at both,
as Python data and as JSON: every type, unknown and missing keys at every level, keys that are not
strings, junk values, states that are not dicts.
"""

from __future__ import annotations

import json as json_module
import math
from collections.abc import Iterator, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from multiagent.errors import StateValidationError
from multiagent.state import StateValidator, format_errors
from multiagent.variables import VariableDefinition

AGENT_VARS = {
    name: VariableDefinition.model_validate(spec)
    for name, spec in {
        "gold": {"type": "int", "min": 0, "max": 100},
        "wealth": {"type": "float", "min": -5, "max": 1000},
        "alive": {"type": "bool"},
        "mood": {"type": "categorical", "values": ["calm", "angry"]},
        "code": {"type": "str", "pattern": "[A-Z]{2}[0-9]", "default": "AA0"},
        "note": {"type": "str", "max_length": 4},
        "place": {"type": "tuple", "item_types": ["float", {"type": "int", "min": 0}]},
        "stock": {"type": "dict", "key_type": "str", "value_type": "float"},
        "sides": {"type": "dict", "key_type": "str", "keys": ["l", "r"], "value_type": "int"},
        "by_id": {"type": "dict", "key_type": "int", "value_type": "str"},
        "trail": {"type": "list", "item_type": {"type": "tuple", "item_types": ["float"] * 2}},
        "log": {"type": "list", "item_type": "str", "max_length": 3},
        "stats": {
            "type": "object",
            "schema": {"hp": {"type": "float", "min": 0, "max": 10}, "nick": "str"},
        },
    }.items()
}
GLOBAL_VARS = {
    "season": VariableDefinition(type="categorical", values=["dry", "wet"]),
    "price": VariableDefinition(type="float", min=0),
    "memo": VariableDefinition(type="str"),
}
VALIDATOR = StateValidator(AGENT_VARS, GLOBAL_VARS)


def reference_agents(validator: StateValidator, agents: Any, *, json: bool = False) -> Any:
    """The reference: every state through the TypedDict validator that forbids unknown keys."""
    reference = validator._agents.reference
    try:
        return reference.validate_json(agents) if json else reference.validate_python(agents)
    except ValidationError as error:
        errors = format_errors(error, "agents", validator.agent_vars, keyed=True)
        raise StateValidationError(errors) from None


def reference_global(validator: StateValidator, state: Any, *, json: bool = False) -> Any:
    reference = validator._global.reference
    try:
        return reference.validate_json(state) if json else reference.validate_python(state)
    except ValidationError as error:
        errors = format_errors(error, "global_state", validator.global_vars, keyed=False)
        raise StateValidationError(errors) from None


def outcome(function: Any, data: Any) -> tuple[str, Any]:
    """``("ok", repr of the result)`` or ``("error", the (path, message) pairs)``."""
    try:
        return "ok", repr(function(data))
    except StateValidationError as error:
        return "error", error.errors


def assert_same(fast: Any, reference: Any, data: Any) -> None:
    """Same answer from Python data and, when the data can be JSON, from its JSON bytes."""
    assert outcome(fast, data) == outcome(reference, data)
    try:
        raw = json_module.dumps(data).encode()
    except (TypeError, ValueError):
        return
    json_fast = lambda raw: fast(raw, json=True)  # noqa: E731
    json_reference = lambda raw: reference(raw, json=True)  # noqa: E731
    assert outcome(json_fast, raw) == outcome(json_reference, raw)


# -- near-valid states ------------------------------------------------------------------------

_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(),  # nan and infinities too
    st.text(max_size=5),
    st.binary(max_size=3),
    st.lists(st.integers(-3, 300), max_size=3),
    st.tuples(st.floats(-1, 1), st.integers(-1, 3)),
    st.dictionaries(st.text(max_size=2), st.integers(-1, 3), max_size=2),
)
_KEYS = st.one_of(st.text(max_size=6), st.integers(-2, 2), st.just(("t",)))


def valid_values(defn: VariableDefinition) -> st.SearchStrategy[Any]:
    """Values ``defn`` accepts, some of them only after pydantic's lax coercion."""
    kind = defn.type
    if kind == "float":
        return st.floats(defn.min, defn.max) | st.integers(0, 10).map(str)
    if kind == "int":
        low, high = (None if bound is None else int(bound) for bound in (defn.min, defn.max))
        return st.integers(low, high) | st.integers(low or 0, high or 9).map(str)
    if kind == "bool":
        return st.booleans() | st.sampled_from(["true", "no", 1, 0])
    if kind == "categorical":
        return st.sampled_from(defn.values or [])
    if kind == "str":
        if defn.pattern is not None:
            return st.from_regex(defn.pattern, fullmatch=True)
        nullable = st.none() if defn.default is None else st.nothing()
        return st.text(max_size=defn.max_length or 6) | nullable
    if defn.schema_ is not None:
        return st.fixed_dictionaries({k: valid_values(c) for k, c in defn.schema_.items()})
    if kind == "dict":
        keys: st.SearchStrategy[Any] = st.text(max_size=3)
        if defn.keys is not None:
            keys = st.sampled_from(defn.keys)
        elif defn.key_type == "int":
            keys = st.integers(-3, 3) | st.integers(-3, 3).map(str)
        return st.dictionaries(keys, valid_values(defn.value_type), max_size=4)  # type: ignore[arg-type]
    if kind == "list":
        items = valid_values(defn.item_type)  # type: ignore[arg-type]
        return st.lists(items, max_size=defn.max_length or 4)
    items = [valid_values(child) for child in defn.item_types or []]
    return st.tuples(*items) | st.tuples(*items).map(list)


_EDGES = st.sampled_from(
    [-1, 101, "101", 2.5, "Calm", "a1", "AB12", "toolong", ["a", "b", "c", "d"], (1.0,),
     {"y": 1}, {"hp": 11.0, "nick": None}, {"hp": 1.0}, {"hp": 1.0, "nick": None, "mp": 2}]
)  # fmt: skip


@st.composite
def state_dicts(
    draw: st.DrawFn, definitions: dict[str, VariableDefinition], name: str | None
) -> Any:
    """A valid state, or one with a few mistakes: a junk or edge value, a variable missing, an
    unknown key (a string or not), an object with a field too many; in any key order."""
    state: dict[Any, Any] = {} if name is None else {"name": name}
    state |= {var: draw(valid_values(defn)) for var, defn in definitions.items()}
    for _ in range(draw(st.sampled_from([0] * 6 + [1, 1, 2]))):
        var = draw(st.sampled_from(list(state)))
        mistake = draw(st.sampled_from(["junk", "edge", "drop", "unknown", "name"]))
        if mistake == "junk":
            state[var] = draw(_JUNK)
        elif mistake == "edge":
            state[var] = draw(_EDGES)
        elif mistake == "drop":
            del state[var]
        elif mistake == "unknown":
            state[draw(_KEYS)] = draw(_JUNK)
        elif name is not None:
            state["name"] = draw(st.sampled_from([7, None, ""]))
    if draw(st.booleans()):
        state = dict(reversed(list(state.items())))
    return draw(st.sampled_from([state] * 12 + [MappingProxyType(state), [state]]))


@st.composite
def agents_data(draw: st.DrawFn) -> Any:
    names = draw(st.lists(st.sampled_from(["A", "B", "C", "D"]), max_size=4, unique=True))
    agents = {name: draw(state_dicts(AGENT_VARS, name)) for name in names}
    if not draw(st.integers(0, 9)):
        agents[draw(st.sampled_from([5, b"A"]))] = draw(state_dicts(AGENT_VARS, "A"))
    return draw(st.sampled_from([agents, agents, agents, MappingProxyType(agents), list(agents)]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agents_data())
def test_agents_fast_path_answers_as_the_reference(agents: Any) -> None:
    assert_same(VALIDATOR.agents, partial(reference_agents, VALIDATOR), agents)


@settings(max_examples=200, deadline=None)
@given(state_dicts(GLOBAL_VARS, None))
def test_global_fast_path_answers_as_the_reference(state: Any) -> None:
    assert_same(VALIDATOR.global_state, partial(reference_global, VALIDATOR), state)


# -- the cases the count must catch, one by one -----------------------------------------------


def full_state(name: str = "T") -> dict[str, Any]:
    return {
        "name": name,
        "gold": 3,
        "wealth": 1.5,
        "alive": True,
        "mood": "calm",
        "code": "AB1",
        "note": None,
        "place": (0.5, 2),
        "stock": {"x": 1.0},
        "sides": {"l": 1},
        "by_id": {1: "a"},
        "trail": [(1.0, 2.0)],
        "log": ["a"],
        "stats": {"hp": 1.0, "nick": None},
    }


def test_a_full_state_takes_the_fast_path_and_comes_back_unchanged() -> None:
    state = full_state()
    validated = VALIDATOR.agents({"T": state})
    assert validated == {"T": state}
    assert repr(validated) == repr(reference_agents(VALIDATOR, {"T": state}))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({"silver": 1}, ("agents[T].silver", "Extra inputs are not permitted"),
                     id="unknown-variable"),
        pytest.param({3: 1}, ("agents[T].3", "Keys should be strings"), id="key-not-a-string"),
    ],
)  # fmt: skip
def test_an_unknown_key_beside_valid_variables_is_named(
    change: dict[Any, Any], expected: tuple[str, str]
) -> None:
    assert _errors({"T": {**full_state(), **change}}) == [expected]


def test_an_unknown_key_and_a_bad_value_are_both_named() -> None:
    errors = _errors({"T": {**full_state(), "gold": -1, "silver": 2}})
    assert [path for path, _ in errors] == ["agents[T].gold", "agents[T].silver"]


def test_a_missing_optional_field_keeps_the_count_right() -> None:
    """``note`` (default null) may be left out: output and input are then both one key shorter."""
    state = full_state()
    del state["note"]
    assert VALIDATOR.agents({"T": state}) == {"T": state}
    with_extra = {**state, "silver": 1}  # as long as a full state: still caught
    assert _errors({"T": with_extra}) == [("agents[T].silver", "Extra inputs are not permitted")]


class _Mapping(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("wrap", [dict, MappingProxyType, _Mapping], ids=lambda w: w.__name__)
def test_mappings_that_are_not_dicts_are_judged_alike(wrap: Any) -> None:
    for state in (full_state(), {**full_state(), "silver": 1}):
        agents = {"T": wrap(state)}
        assert_same(VALIDATOR.agents, partial(reference_agents, VALIDATOR), agents)
        assert_same(VALIDATOR.agents, partial(reference_agents, VALIDATOR), wrap({"T": state}))


def test_the_global_state_count_catches_an_unknown_key() -> None:
    world = {"season": "dry", "price": 1.0, "memo": None}
    assert VALIDATOR.global_state(world) == world
    with pytest.raises(StateValidationError) as caught:
        VALIDATOR.global_state({**world, "tax": math.pi})
    assert caught.value.errors == [("global_state.tax", "Extra inputs are not permitted")]


def _errors(agents: Any) -> list[tuple[str, str]]:
    with pytest.raises(StateValidationError) as caught:
        VALIDATOR.agents(agents)
    return caught.value.errors


def test_json_leaves_out_the_optional_variables_the_input_left_out() -> None:
    state = full_state()
    del state["note"]
    raw = json_module.dumps({"T": state}).encode()
    validated = VALIDATOR.agents(raw, json=True)
    assert "note" not in validated["T"]
    assert repr(validated) == repr(reference_agents(VALIDATOR, raw, json=True))


def _document(odd: str) -> bytes:
    """A JSON document of one agent ``T``: the ``odd`` fields, then full_state()'s other ones."""
    rest = {k: v for k, v in full_state().items() if f'"{k}"' not in odd}
    return f'{{"T": {{{odd}, {json_module.dumps(rest)[1:-1]}}}}}'.encode()


@pytest.mark.parametrize(
    "raw",
    [
        _document('"gold": 1, "gold": 2'),  # a repeated key: the last one counts
        _document('"gold": 1, "gold": 200'),
        _document('"wealth": NaN'),
        _document('"wealth": Infinity'),
        _document('"stats": {"hp": 1, "nick": null, "mp": 1}'),
        _document('"silver": 1'),
        _document('"name": "T", "name": 7'),
        b'{"T": {"name": "T"}, "T": {"name": "T", "gold": 200}}',
        b'{"T": [1, 2]}',
        b"[]",
        b"{",
    ],
)
def test_odd_json_is_judged_as_the_reference_judges_it(raw: bytes) -> None:
    assert outcome(lambda r: VALIDATOR.agents(r, json=True), raw) == outcome(
        partial(reference_agents, VALIDATOR, json=True), raw
    )


@pytest.mark.parametrize("name", ["model_config", "json", "_hidden", "class", "copy"])
def test_names_a_model_cannot_hold_keep_the_reference_for_json(name: str) -> None:
    validator = StateValidator({name: VariableDefinition(type="int", min=0)}, {})
    assert validator._agents.json_model is None
    raw = json_module.dumps({"T": {"name": "T", name: 3}}).encode()
    assert validator.agents(raw, json=True) == {"T": {"name": "T", name: 3}}
    with pytest.raises(StateValidationError):
        validator.agents(json_module.dumps({"T": {"name": "T", name: -3}}).encode(), json=True)
