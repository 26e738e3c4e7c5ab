"""Random schemas and data: validate never crashes, every issue names a real place (its ``loc``
is its path's steps), render round trips, and the plain JSON Schema agrees with strict output
validation."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from envkit.schema import Schema, parse, render, to_json_schema, validate
from envkit.schema.issues import ISSUE_KINDS, format_path

# Hypothesis prints the repr of these deep recursive strategies as it draws from them: noise only.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["a", "b", "id", ":c", "first name", "0", ""]
NAMES = ["q", "limit", "first name", "n"]
TEXTS = ["", "a", "ab", "A1", "42", "-3", "3.14", "42.0", "true", "False", "yes", ":a", "b"]

# -- data ----------------------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-5, 5),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, st.sampled_from(TEXTS), st.text(max_size=4))
data_keys = st.one_of(st.sampled_from([k.lstrip(":") for k in KEYS] + KEYS), st.text(max_size=3))
json_data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(data_keys, inner, max_size=4),
    max_leaves=12,
)

# -- schemas (as Malli-lite data) ----------------------------------------------------------------

bounds = st.tuples(
    st.sampled_from([":>", ":<", ":>=", ":<="]), st.integers(-3, 3) | st.floats(-3, 3)
)
predicates = st.one_of(
    st.sampled_from([":string", ":int", ":double", ":boolean", ":keyword", ":any", ":nil"]),
    st.lists(scalars, min_size=1, max_size=3).map(lambda values: [":enum", *values]),
    bounds.map(list),
    st.sampled_from([[":re", "^a"], [":re", "\\d"], [":re", "b$"]]),
)
leaves = predicates | st.just(":map")


def _skippable(entry: tuple[str, dict[str, Any], Any]) -> bool:
    return bool(entry[1].get("optional") or "default" in entry[1])


def entries(
    children: st.SearchStrategy[Any], names: list[str], defaults: bool
) -> st.SearchStrategy[list[Any]]:
    """Entries ``[key, properties?, schema]``, required ones first (a :cat needs that order)."""
    properties: dict[str, st.SearchStrategy[Any]] = {"optional": st.booleans()}
    if defaults:
        properties["default"] = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["a", []]))
    entry = st.tuples(
        st.sampled_from(names), st.fixed_dictionaries({}, optional=properties), children
    )
    unique = st.lists(entry, max_size=4, unique_by=lambda e: e[0].lstrip(":"))
    ordered = unique.map(lambda es: sorted(es, key=_skippable))
    return ordered.map(lambda es: [[k, p, s] if p else [k, s] for k, p, s in es])


def schema_data(defaults: bool = True) -> st.SearchStrategy[Any]:
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keys = st.sampled_from([":string", ":keyword", ":int", [":enum", "a", "b"], [":re", "^a"]])
        return st.one_of(
            st.tuples(st.sampled_from([":vector", ":sequential", ":set", ":maybe"]), children).map(
                list
            ),
            entries(children, KEYS, defaults).map(lambda es: [":map", *es]),
            st.tuples(keys, children).map(lambda kv: [":map-of", *kv]),
            st.lists(children, min_size=1, max_size=3).map(lambda cs: [":tuple", *cs]),
            st.lists(children, min_size=1, max_size=3).map(lambda cs: [":or", *cs]),
            # later parts of an [:and ...] see the value as earlier parts coerced it, so they are
            # predicates here, which add no paths of their own
            st.tuples(children, st.lists(predicates, max_size=2)).map(
                lambda t: [":and", t[0], *t[1]]
            ),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def signatures() -> st.SearchStrategy[Any]:
    """Any schema, or a function / root :cat of them (named or unnamed parameters)."""
    body = schema_data()
    named = entries(body, NAMES, defaults=True)
    unnamed = st.lists(body, max_size=3)
    params = (named | unnamed).map(lambda ps: [":cat", *ps])
    return st.one_of(
        body,
        body,
        st.tuples(params, body).map(lambda pr: [":=>", *pr]),
        params,
    )


def near(schema: Schema) -> st.SearchStrategy[Any]:
    """Data shaped like ``schema``, often valid, sometimes not."""
    return st.one_of(_shaped(schema), _shaped(schema), json_data)


def _fields(entries_: tuple[Any, ...]) -> st.SearchStrategy[dict[str, Any]]:
    required = {e.key: near(e.schema) for e in entries_ if not e.optional and e.default is None}
    optional = {e.key: near(e.schema) for e in entries_ if e.key not in required}
    optional["zz"] = json_data  # an extra key
    return st.fixed_dictionaries(required, optional=optional)


def _shaped(schema: Schema) -> st.SearchStrategy[Any]:
    kind, children = schema.kind, schema.children
    simple: dict[str, st.SearchStrategy[Any]] = {
        "string": st.text(max_size=4),
        "keyword": st.sampled_from(TEXTS),
        "int": st.integers(-5, 5) | st.sampled_from(["7", "-3"]),
        "double": numbers | st.sampled_from(["1.5", "2"]),
        "boolean": st.booleans() | st.sampled_from(["true", "FALSE"]),
        "nil": st.none(),
        "any": json_data,
        "re": st.sampled_from(["a", "ab", "b", "1", "xa"]),
    }
    if kind in simple:
        return simple[kind]
    if kind in (">", "<", ">=", "<="):
        return numbers
    if kind == "enum":
        return st.sampled_from(schema.values)
    if kind in ("vector", "sequential", "set"):
        return st.lists(near(children[0]), max_size=3)
    if kind == "maybe":
        return st.none() | near(children[0])
    if kind == "tuple":
        return st.tuples(*(near(child) for child in children)).map(list)
    if kind == "map-of":
        return st.dictionaries(
            st.sampled_from(["a", "b", "1", "xa"]), near(children[1]), max_size=3
        )
    if kind in ("or", "and"):
        return st.one_of(*(near(child) for child in children))
    if kind == "cat" and schema.entries and schema.entries[0].key is None:
        return st.tuples(*(near(e.schema) for e in schema.entries)).map(list)
    if kind == "=>":
        return near(children[0]) | near(children[1])
    return _fields(schema.entries)  # map, named cat


# -- paths ---------------------------------------------------------------------------------------

_STEP = re.compile(r'(\.?)([A-Za-z_][A-Za-z0-9_-]*)|\[([0-9]+)\]|\[("(?:[^"\\]|\\.)*")\]')


def path_steps(path: str) -> list[Any]:
    """A path back into its steps (keys and indices); it must read back whole."""
    if path == "(root)":
        return []
    steps: list[Any] = []
    position = 0
    while position < len(path):
        match = _STEP.match(path, position)
        assert match is not None, f"unreadable path {path!r} at {position}"
        dot, name, index, quoted = match.groups()
        if name is not None:
            assert bool(dot) == bool(steps), f"misplaced dot in {path!r}"
            steps.append(name)
        else:
            steps.append(int(index) if index is not None else json.loads(quoted))
        position = match.end()
    return steps


def declared_keys(schema: Schema) -> set[str]:
    keys = {entry.key for entry in schema.entries if entry.key is not None}
    for child in [*schema.children, *(entry.schema for entry in schema.entries)]:
        keys |= declared_keys(child)
    return keys


def assert_names_a_place(loc: tuple[Any, ...], message: str, data: Any, declared: set[str]) -> None:
    """Each step is a key or index of the data, or else (a key the data does not have: missing,
    defaulted, or given as ":key") one the schema declares."""
    path = format_path(loc)
    node, in_data = data, True
    for step in loc:
        keyed = isinstance(node, dict) and isinstance(step, str) and step in node
        indexed = isinstance(node, list) and isinstance(step, int) and step < len(node)
        if in_data and (keyed or indexed):
            node = node[step]
        else:
            in_data = False
            assert step in declared or (
                isinstance(step, int) and message == "missing required item"
            ), f"{path}: {message} names {step!r}, in neither the data nor the schema"


# -- properties ----------------------------------------------------------------------------------


@SETTINGS
@given(
    signature=signatures(),
    mode=st.sampled_from(["enabled", "warn_only", "strict", "disabled"]),
    direction=st.sampled_from(["input", "output"]),
    draw=st.data(),
)
def test_validate_never_crashes_and_every_issue_names_a_real_place(
    signature: Any, mode: Any, direction: Any, draw: st.DataObject
) -> None:
    schema = parse(signature)
    data = draw.draw(near(schema), label="data")
    result = validate(schema, data, mode=mode, direction=direction)
    assert result.ok == (mode in ("warn_only", "disabled") or not result.errors)
    if mode == "disabled":
        assert result.value is data and not result.errors and not result.warnings
    if direction == "output":
        assert result.warnings == []
    declared = declared_keys(schema)
    for issue in [*result.errors, *result.warnings]:
        assert str(issue) == f"{issue.path}: {issue.message}"
        assert format_path(issue.loc) == issue.path
        assert path_steps(issue.path) == list(issue.loc)
        assert_names_a_place(issue.loc, issue.message, data, declared)
    assert {issue.kind for issue in result.warnings} <= {"coerced"}
    assert {issue.kind for issue in result.errors} <= set(ISSUE_KINDS) - {"coerced", "invalid"}


# An optional nullable map entry renders as "[k {...}?]": braces the parser must not read as the
# entry's properties. The first two examples are this property's shrunk finds ("expected a type
# after 'limit', got '?'"), the third is the smallest case of CI's "got 'a'" message.
NULLABLE_MAP = [":maybe", [":map"]]


@SETTINGS
@given(signature=signatures())
@example(
    signature=[
        ":=>",
        [":cat", ["q", {"default": None}, ":string"], ["limit", {"optional": True}, NULLABLE_MAP]],
        ":map",
    ]
)
@example(
    signature=[
        ":=>",
        [":cat", ["q", {"optional": True}, ":string"], ["limit", {"optional": True}, NULLABLE_MAP]],
        ":map",
    ]
)
@example(signature=[":map", ["a", {"optional": True}, [":maybe", [":map", ["a", ":int"]]]]])
def test_render_round_trips(signature: Any) -> None:
    schema = parse(signature)
    text = render(schema)
    assert parse(text) == schema, text
    assert render(schema, name="tool").startswith("tool")


@SETTINGS
@given(signature=schema_data(defaults=False), draw=st.data())
def test_plain_json_schema_accepts_what_strict_output_validation_accepts(
    signature: Any, draw: st.DataObject
) -> None:
    schema = parse(signature)
    data = draw.draw(near(schema), label="data")
    generated = to_json_schema(schema)
    Draft202012Validator.check_schema(generated)
    ours = validate(schema, data, mode="strict", direction="output")
    assert ours.ok == Draft202012Validator(generated).is_valid(data), [str(e) for e in ours.errors]
