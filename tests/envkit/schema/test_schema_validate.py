"""validate(): every type and refinement, modes, directions, the coercion table and the messages."""

from __future__ import annotations

from typing import Any

import pytest

from envkit.schema import Issue, ValidationResult, validate


def errors(result: ValidationResult) -> list[str]:
    return [str(issue) for issue in result.errors]


def warnings(result: ValidationResult) -> list[str]:
    return [str(issue) for issue in result.warnings]


def check(schema: Any, data: Any, **options: Any) -> list[str]:
    """The error lines for ``data`` (strict about every extra key, no coercion unless asked)."""
    options.setdefault("direction", "output")
    return errors(validate(schema, data, **options))


# -- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "good", "bad", "message"),
    [
        (":string", "hi", 5, "expected string, got int 5"),
        (":int", -3, 2.5, "expected int, got double 2.5"),
        (":int", 10**30, "5", 'expected int, got string "5"'),
        (":double", 2.5, "x", 'expected double, got string "x"'),
        (":double", 7, None, "expected double, got nil"),
        (":boolean", False, 0, "expected boolean, got int 0"),
        (":keyword", "pending", 1, "expected keyword, got int 1"),
        (":nil", None, "null", 'expected nil, got string "null"'),
        ("[:int]", [1, 2], {"a": 1}, 'expected vector, got map {"a": 1}'),
        ("[:sequential :int]", (1, 2), "12", 'expected vector, got string "12"'),
        ("[:set :int]", [1, 2], 3, "expected set, got int 3"),
        ("[:tuple :string :int]", ["a", 1], "a", 'expected tuple, got string "a"'),
        ("[:map-of :string :int]", {"a": 1}, [1], "expected map, got vector [1]"),
        ("[:map [a :int]]", {"a": 1}, [], "expected map, got vector []"),
        ('[:enum "a" "b"]', "a", "c", 'expected one of ["a", "b"], got "c"'),
        ("[:maybe :int]", None, "x", 'expected int, got string "x"'),
        ("[:> 0]", 1, 0, "expected a number > 0, got 0"),
        ("[:< 0]", -0.5, 0, "expected a number < 0, got 0"),
        ("[:>= 1.5]", 1.5, 1, "expected a number >= 1.5, got 1"),
        ("[:<= 10]", 10, 10.5, "expected a number <= 10, got 10.5"),
        ("[:> 0]", 1, "5", 'expected a number > 0, got string "5"'),
        ("[:> 0]", 1, True, "expected a number > 0, got boolean true"),
        ('[:re "^[A-Z]"]', "Abc", "abc", 'expected a string matching "^[A-Z]", got "abc"'),
        ('[:re "^[A-Z]"]', "Abc", 5, 'expected a string matching "^[A-Z]", got int 5'),
        ('[:re "b"]', "abc", "xyz", 'expected a string matching "b", got "xyz"'),  # search
    ],
)
def test_each_type_accepts_and_rejects(schema: str, good: Any, bad: Any, message: str) -> None:
    assert check(schema, good) == []
    assert check(schema, bad) == [f"(root): {message}"]


def test_any_accepts_everything() -> None:
    for value in (None, 1, "x", [1, {"a": None}], {"k": [1]}):
        assert validate(":any", value, mode="strict").value == value


def test_refinements_inside_and() -> None:
    schema = "[:and :int [:> 0] [:< 100]]"
    assert check(schema, 50) == []
    assert check(schema, 100) == ["(root): expected a number < 100, got 100"]
    assert check(schema, 2.5) == ["(root): expected int, got double 2.5"]


def test_and_reports_every_failing_part() -> None:
    assert check("[:and :int [:> 0]]", "abc") == [
        '(root): expected int, got string "abc"',
        '(root): expected a number > 0, got string "abc"',
    ]


def test_and_passes_the_coerced_value_on() -> None:
    result = validate("[:and :int [:> 0]]", "5", direction="input")
    assert (result.ok, result.value, warnings(result)) == (
        True,
        5,
        ['(root): coerced string "5" to int'],
    )


def test_or_reports_that_none_matched_with_the_alternatives() -> None:
    assert check("[:or :int {id :int}]", True) == [
        "(root): expected :int | {id :int} (none matched), got boolean true"
    ]


def test_or_prefers_an_alternative_that_needs_no_coercion() -> None:
    result = validate("[:or :int :string]", "42", direction="input")
    assert (result.value, result.warnings) == ("42", [])
    result = validate("[:or :boolean :int]", "42", direction="input")
    assert (result.value, warnings(result)) == (42, ['(root): coerced string "42" to int'])


def test_sets_reject_duplicates_as_json_sees_them() -> None:
    assert check("[:set :any]", [1, 1.0, True, "1", [1], [1.0]]) == [
        "[1]: duplicate item 1.0 in a set",
        "[5]: duplicate item [1.0] in a set",
    ]


def test_tuples_check_their_length_and_each_position() -> None:
    assert check("[:tuple :string :int]", ["a", "b", 3]) == [
        "(root): expected tuple of 2 items, got 3 items",
        '[1]: expected int, got string "b"',
    ]
    assert check("[:tuple :int]", []) == ["(root): expected tuple of 1 item, got 0 items"]


def test_enum_membership_is_typed() -> None:
    assert check("[:enum 1 2]", 1.0) == []
    assert check("[:enum 1 2]", True) == ["(root): expected one of [1, 2], got true"]
    assert check("[:enum true]", 1) == ["(root): expected one of [true], got 1"]
    assert check("[:enum nil]", None) == []


def test_map_of_checks_keys_and_values() -> None:
    assert check('[:map-of [:enum "a" "b"] :int]', {"a": 1, "c": "x"}) == [
        'c: key: expected one of ["a", "b"], got "c"',
        'c: expected int, got string "x"',
    ]
    result = validate("[:map-of :int :double]", {"1": 2}, direction="input")
    assert result.value == {1: 2.0}
    assert warnings(result) == ['["1"]: key: coerced string "1" to int']
    collide = validate("[:map-of :int :any]", {"1": "a", "01": "b"}, direction="input")
    assert errors(collide) == ['["01"]: duplicate key 1 after coercion']


# -- maps: required, optional, defaults, extra keys ----------------------------------------------

USER = '[:map [id :int] [email {:optional true} :string] [role {:default "user"} :string]]'


def test_missing_required_keys_are_all_reported() -> None:
    expected = ["a: missing required key", "b: missing required key"]
    assert check("[:map [a :int] [b :string]]", {}) == expected
    assert check("{a :int, b :string}", {}) == expected  # a function's return value (output)


def test_optional_keys_may_be_missing_but_not_null_unless_nullable() -> None:
    assert check(USER, {"id": 1}) == []
    assert check(USER, {"id": 1, "email": None}) == ["email: expected string, got nil"]
    assert check("() -> {email :string?}", {"email": None}) == []
    assert check("() -> {email :string?}", {}) == []


def test_defaults_fill_missing_keys_without_an_issue() -> None:
    result = validate(USER, {"id": 1}, direction="output")
    assert (result.ok, result.value, result.warnings) == (True, {"id": 1, "role": "user"}, [])
    shared = validate("[:map [tags {:default []} [:string]]]", {})
    shared.value["tags"].append("x")
    assert validate("[:map [tags {:default []} [:string]]]", {}).value == {"tags": []}
    given = validate(USER, {"id": 1, "role": None}, direction="output")
    assert errors(given) == ["role: expected string, got nil"]  # a default is for a missing key


def test_extra_keys_pass_unless_strict() -> None:
    data = {"id": 1, "extra": 2, "more": [3]}
    for mode in ("enabled", "warn_only"):
        result = validate(USER, data, mode=mode)
        assert result.ok and result.errors == [] and result.value["extra"] == 2
    strict = validate(USER, data, mode="strict")
    assert not strict.ok
    assert errors(strict) == ["extra: unexpected key", "more: unexpected key"]


def test_strict_closes_nested_maps_too() -> None:
    data = {"user": {"name": "a", "x": 1}, "items": [{"id": 1, "y": 2}]}
    assert check("() -> {user {name :string}, items [{id :int}]}", data, mode="strict") == [
        "user.x: unexpected key",
        "items[0].y: unexpected key",
    ]


def test_map_keys_may_arrive_as_keyword_strings_in_the_input_direction() -> None:
    schema = "[:map [:count :int] [name :string]]"
    result = validate(schema, {":count": 1, "name": "a"}, mode="strict")
    assert (result.ok, result.value, result.warnings) == (True, {"count": 1, "name": "a"}, [])
    both = validate(schema, {"count": 1, ":count": 2, "name": "a"})
    assert errors(both) == ['[":count"]: duplicate key (also given as "count")']
    output = validate(schema, {":count": 1, "name": "a"}, mode="strict", direction="output")
    assert errors(output) == ['[":count"]: unexpected key', "count: missing required key"]


# -- modes ---------------------------------------------------------------------------------------


def test_modes() -> None:
    bad = {"id": "x", "extra": 1}
    enabled = validate(USER, bad, mode="enabled")
    assert not enabled.ok and errors(enabled) == ['id: expected int, got string "x"']
    warn = validate(USER, bad, mode="warn_only")
    assert warn.ok and errors(warn) == errors(enabled)
    strict = validate(USER, bad, mode="strict")
    assert not strict.ok and len(strict.errors) == 2
    disabled = validate(USER, bad, mode="disabled")
    assert disabled.ok and disabled.value is bad and not disabled.errors and not disabled.warnings
    assert validate(USER, {"id": "7"}, mode="disabled").value == {"id": "7"}  # no coercion either


def test_bad_mode_or_direction() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        validate(":int", 1, mode="lenient")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="direction must be 'input' or 'output'"):
        validate(":int", 1, direction="both")  # type: ignore[arg-type]


# -- directions and the coercion table -----------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "given", "value", "warning"),
    [
        (":int", "42", 42, 'coerced string "42" to int'),
        (":int", "-3", -3, 'coerced string "-3" to int'),
        (":double", "3.14", 3.14, 'coerced string "3.14" to double'),
        (":double", "42", 42.0, 'coerced string "42" to double'),
        (":double", "-1e-3", -0.001, 'coerced string "-1e-3" to double'),
        (":boolean", "true", True, 'coerced string "true" to boolean'),
        (":boolean", "false", False, 'coerced string "false" to boolean'),
        (":boolean", "TRUE", True, 'coerced string "TRUE" to boolean'),
        (":boolean", "False", False, 'coerced string "False" to boolean'),
    ],
)
def test_allowed_input_coercions_warn(schema: str, given: str, value: Any, warning: str) -> None:
    result = validate(schema, given, direction="input")
    assert result.ok and result.value == value and type(result.value) is type(value)
    assert warnings(result) == [f"(root): {warning}"]
    output = validate(schema, given, direction="output")
    assert not output.ok and output.value == given and output.warnings == []


def test_int_to_double_is_silent_and_only_converted_on_input() -> None:
    result = validate(":double", 42, direction="input")
    assert (result.value, type(result.value), result.warnings) == (42.0, float, [])
    output = validate(":double", 42, direction="output")
    assert output.ok and type(output.value) is int


@pytest.mark.parametrize(
    ("schema", "given", "message"),
    [
        (":int", "42.0", 'expected int, got string "42.0"'),
        (":int", " 42", 'expected int, got string " 42"'),
        (":int", "4_2", 'expected int, got string "4_2"'),
        (":int", "+4", 'expected int, got string "+4"'),
        (":int", 42.0, "expected int, got double 42.0"),
        (":int", True, "expected int, got boolean true"),
        (":double", True, "expected double, got boolean true"),
        (":double", "3.14abc", 'expected double, got string "3.14abc"'),
        (":double", "nan", 'expected double, got string "nan"'),
        (":double", "1e999", 'expected double, got string "1e999"'),
        (":double", "", 'expected double, got string ""'),
        (":boolean", "yes", 'expected boolean, got string "yes"'),
        (":boolean", "1", 'expected boolean, got string "1"'),
        (":boolean", 1, "expected boolean, got int 1"),
        (":boolean", "true ", 'expected boolean, got string "true "'),
        (":string", 42, "expected string, got int 42"),
        (":nil", "", 'expected nil, got string ""'),
        ("[:enum 1 2]", "1", 'expected one of [1, 2], got "1"'),
    ],
)
def test_forbidden_coercions_are_errors(schema: str, given: Any, message: str) -> None:
    result = validate(schema, given, direction="input")
    assert errors(result) == [f"(root): {message}"] and result.warnings == []


def test_output_direction_never_coerces_anywhere() -> None:
    schema = "() -> {n :int, x :double, b :boolean, tags [:int]}"
    data = {"n": "1", "x": "2.5", "b": "true", "tags": ["3"]}
    result = validate(schema, data, direction="output")
    assert result.value == data and result.warnings == []
    assert errors(result) == [
        'n: expected int, got string "1"',
        'x: expected double, got string "2.5"',
        'b: expected boolean, got string "true"',
        'tags[0]: expected int, got string "3"',
    ]


# -- functions -----------------------------------------------------------------------------------

SEARCH = "(query :string, limit :int, page :int?) -> [{id :int, title :string}]"


def test_function_input_by_name() -> None:
    result = validate(SEARCH, {"query": "q", "limit": "10"}, direction="input")
    assert result.ok and result.value == {"query": "q", "limit": 10}
    assert warnings(result) == ['limit: coerced string "10" to int']
    assert errors(validate(SEARCH, {"limit": 1}, direction="input")) == [
        "query: missing required key"
    ]
    assert errors(validate(SEARCH, {"query": "q", "limit": 1, "x": 0}, mode="strict")) == [
        "x: unexpected key"
    ]


def test_function_input_by_position() -> None:
    result = validate(SEARCH, ["q", "5"], direction="input")
    assert (result.ok, result.value) == (True, ["q", 5])
    assert warnings(result) == ['[1]: coerced string "5" to int']
    assert errors(validate(SEARCH, ["q"])) == ["[1]: missing required item"]
    assert errors(validate(SEARCH, ["q", 1, None, "extra"])) == ["[3]: unexpected item"]
    assert errors(validate(SEARCH, "q")) == [
        '(root): expected map or vector of parameters, got string "q"'
    ]
    unnamed = "[:=> [:cat :string [:> 0]] :any]"
    assert validate(unnamed, ["a", 1]).ok
    assert errors(validate(unnamed, {"a": 1})) == [
        '(root): expected vector of parameters, got map {"a": 1}'
    ]


def test_positional_defaults_fill_in() -> None:
    schema = "[:=> [:cat [a :int] [b {:default 2} :int]] :any]"
    assert validate(schema, [1]).value == [1, 2]
    assert validate(schema, {"a": 1}).value == {"a": 1, "b": 2}


def test_function_output_validates_the_return_value() -> None:
    good = [{"id": 1, "title": "t"}]
    assert validate(SEARCH, good, direction="output").ok
    bad = [{"id": 1, "title": "t"}, {"id": "2"}]
    assert errors(validate(SEARCH, bad, direction="output")) == [
        '[1].id: expected int, got string "2"',
        "[1].title: missing required key",
    ]


def test_a_zero_parameter_function() -> None:
    assert validate("{summary :string}", {}, direction="input").ok
    assert validate("{summary :string}", [], direction="input").ok
    assert errors(validate("{summary :string}", ["x"], direction="input")) == [
        "[0]: unexpected item"
    ]
    assert errors(validate("{summary :string}", {}, direction="output")) == [
        "summary: missing required key"
    ]


# -- paths and messages --------------------------------------------------------------------------


def test_the_message_formats() -> None:
    schema = [
        ":map",
        ["results", [":vector", [":map", ["customer", [":map", ["id", ":int"]]]]]],
        ["status", [":enum", "pending", "active"]],
        ["count", ":int"],
        ["limit", ":int"],
    ]
    data = {"results": [{"customer": {"id": "abc"}}], "status": "unknown", "limit": "10", "x": 1}
    result = validate(schema, data, mode="strict", direction="input")
    assert errors(result) == [
        'results[0].customer.id: expected int, got string "abc"',
        'status: expected one of ["pending", "active"], got "unknown"',
        "x: unexpected key",
        "count: missing required key",
    ]
    assert warnings(result) == ['limit: coerced string "10" to int']
    loc = ("results", 0, "customer", "id")
    message = 'expected int, got string "abc"'
    assert result.errors[0] == Issue("results[0].customer.id", message, loc, "type")


def test_nested_paths() -> None:
    schema = "[:map [a [:vector [:map [b [:map [c :int]]]]]]]"
    data = {"a": [{"b": {"c": 1}}, {"b": {"c": 2}}, {"b": {"c": "three"}}]}
    assert check(schema, data) == ['a[2].b.c: expected int, got string "three"']


def test_keys_that_are_not_plain_names_are_quoted() -> None:
    schema = [
        ":map",
        ["first name", ":string"],
        ["a.b", ":int"],
        ["(root)", ":int"],
        ["ok-1", ":int"],
    ]
    data = {"first name": 1, "a.b": "x", "(root)": None, "ok-1": "y"}
    assert check(schema, data) == [
        '["first name"]: expected string, got int 1',
        '["a.b"]: expected int, got string "x"',
        '["(root)"]: expected int, got nil',
        'ok-1: expected int, got string "y"',
    ]


def test_long_values_are_truncated_to_60_characters() -> None:
    long = "x" * 100
    (message,) = check(":int", long)
    shown = message.removeprefix("(root): expected int, got string ")
    assert len(shown) == 60 and shown == '"' + "x" * 58 + "…"
    (message,) = check(":string", list(range(50)))
    assert message.endswith("…") and len(message.split("got vector ")[1]) == 60
    assert check(":int", "y" * 58) == ['(root): expected int, got string "' + "y" * 58 + '"']


def test_every_error_is_reported_not_just_the_first() -> None:
    data = [{"id": "a"}, {"id": "b"}, {"title": 3}]
    assert len(check("[{id :int, title :string}]", data)) == 6


def test_issue_str() -> None:
    assert str(Issue("a[0]", "missing required key")) == "a[0]: missing required key"
