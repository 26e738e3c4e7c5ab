"""``envkit.server.jsontext``: the fast JSON reads and writes what ``json`` would, refusals too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envkit.server.jsontext import dumps, loads

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_what_it_writes_reads_back_as_json_would(value: Any) -> None:
    text = dumps(value)
    assert loads(text) == json.loads(text) == value


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',  # a lone surrogate: Rust refuses it, json reads it
        "[" * 500 + "]" * 500,  # deeper than Rust's limit, within json's
        '{"a": 1, "a": 2}',
        '{"a": 1e308, "b": -1.7976931348623157e308, "c": 1e-999, "d": ' + "1" * 400 + "}",
    ],
)
def test_it_reads_what_json_reads(text: str) -> None:
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": NaN}', "^x: NaN is not valid JSON$"),
        ('{"x": [1, {"y": -Infinity}]}', r"^x\.1\.y: -Infinity is not valid JSON$"),
        ('{"a": 1.5, "x": 1e999}', r"^x: 1e999 is too large for a number \(over 1\.8e308\)$"),
        ("-1" + "0" * 400 + ".0", r"^\(root\): -10+\.0 is too large"),
        ("[" * 500 + "NaN" + "]" * 500, r"^(0\.){499}0: NaN"),  # past Rust's depth limit
        ('{"x": ' + "9" * 5000 + "}", "4300 digits"),
        ("[" * 20_000, "nested too deeply"),
        ('{"x": ', "Expecting value"),
    ],
)
def test_refusals_are_value_errors_with_jsons_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loads(text)


def test_a_lone_surrogate_is_written_escaped() -> None:
    text = dumps({"id": "\ud800", "name": "é"})
    assert text.encode()  # UTF-8 can carry it: a WebSocket text frame can
    assert json.loads(text) == {"id": "\ud800", "name": "é"}
