"""Issue.loc and Issue.kind: every place the validator reports a problem gives its kind and the
steps of its path, so that nobody has to read either back from the text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envkit.schema import Issue, validate
from envkit.schema.issues import ISSUE_KINDS, format_path

# One case per place validate reports an issue: schema, data, direction, then the one issue.
CASES = [
    (":int", "x", "output", (), "type", 'expected int, got string "x"'),
    ("[:set :int]", [1, 1], "output", (1,), "duplicate", "duplicate item 1 in a set"),
    ("[:tuple :int :int]", [1], "output", (), "size", "expected tuple of 2 items, got 1 item"),
    ("[:map [a :int]]", {"a": 1, "b": 2}, "output", ("b",), "unexpected", "unexpected key"),
    (
        "[:map [a :int]]",
        {"a": 1, ":a": 2},
        "input",
        (":a",),
        "duplicate",
        'duplicate key (also given as "a")',
    ),
    (
        "[:map [a [:map [b :int]]]]",
        {"a": {}},
        "output",
        ("a", "b"),
        "missing",
        "missing required key",
    ),
    (
        "[:map-of :int :any]",
        {"1": 0, "01": 0},
        "input",
        ("01",),
        "duplicate",
        "duplicate key 1 after coercion",
    ),
    (
        "[:map-of [:enum 1] :any]",
        {"k": 0},
        "output",
        ("k",),
        "enum",
        'key: expected one of [1], got "k"',
    ),
    ([":cat", ":int", ":int"], [1], "output", (1,), "missing", "missing required item"),
    ([":cat", ":int"], [1, 2], "output", (1,), "unexpected", "unexpected item"),
    ('[:enum "a"]', "b", "output", (), "enum", 'expected one of ["a"], got "b"'),
    (
        "[:or :int :nil]",
        "x",
        "output",
        (),
        "type",
        'expected :int | :nil (none matched), got string "x"',
    ),
    ("[:> 0]", 0, "output", (), "bound", "expected a number > 0, got 0"),
    ("[:> 0]", "1", "output", (), "type", 'expected a number > 0, got string "1"'),
    ('[:re "^a"]', "b", "output", (), "pattern", 'expected a string matching "^a", got "b"'),
    ('[:re "^a"]', 1, "output", (), "type", 'expected a string matching "^a", got int 1'),
]


@pytest.mark.parametrize(("schema", "data", "direction", "loc", "kind", "message"), CASES)
def test_each_issue_has_its_kind_and_loc(
    schema: Any, data: Any, direction: Any, loc: tuple[Any, ...], kind: str, message: str
) -> None:
    result = validate(schema, data, mode="strict", direction=direction)
    assert result.errors == [Issue(format_path(loc), message, loc, kind)]  # type: ignore[arg-type]


def test_coercions_are_warnings_of_kind_coerced_a_map_of_key_s_too() -> None:
    result = validate("[:map [n :int] [m [:map-of :int :any]]]", {"n": "1", "m": {"2": 0}})
    assert [(w.loc, w.kind, w.message) for w in result.warnings] == [
        (("n",), "coerced", 'coerced string "1" to int'),
        (("m", "2"), "coerced", 'key: coerced string "2" to int'),
    ]


def test_the_kinds_are_a_closed_set_and_validate_uses_each_but_the_default() -> None:
    produced = {case[4] for case in CASES} | {"coerced"}
    assert set(ISSUE_KINDS) == produced | {"invalid"}
    assert "invalid" not in produced  # only for an Issue made without a kind


def test_an_issue_made_the_old_way_still_works() -> None:
    issue = Issue("a[0]", "missing required key")
    assert (str(issue), issue.loc, issue.kind) == ("a[0]: missing required key", (), "invalid")
    assert Issue.at(("a", 0), "missing required key", "missing") == Issue(
        "a[0]", "missing required key", ("a", 0), "missing"
    )


def test_a_python_key_keeps_its_value_in_loc() -> None:
    (issue,) = validate("[:map-of :any :int]", {1.5: "x", None: 2}).errors
    assert (issue.loc, issue.path) == ((1.5,), "[1.5]")


# Steps of a path: any key (a surrogate too), or an index small enough to pad a tuple to.
steps = st.lists(st.text(max_size=6) | st.integers(min_value=0, max_value=4), max_size=5)


def nest(path: list[str | int]) -> tuple[Any, Any]:
    """A schema and data whose one issue is a type mismatch at ``path``."""
    schema: Any = ":int"
    data: Any = "x"
    for step in reversed(path):
        if isinstance(step, str):
            schema, data = [":map-of", ":string", schema], {step: data}
        else:
            schema, data = [":tuple", *[":any"] * step, schema], [None] * step + [data]
    return schema, data


@given(steps)
def test_loc_is_the_path_walked(path: list[str | int]) -> None:
    schema, data = nest(path)
    (issue,) = validate(schema, data).errors
    assert issue.loc == tuple(path) and issue.kind == "type"
    assert format_path(issue.loc) == issue.path
