"""Malli-lite data -> Schema: every construct, the checks on shape, and the unsupported ones."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from envkit.schema import Entry, Schema, SchemaError, ShorthandError, parse

INT, STRING, ANY_MAP = (
    Schema("int"),
    Schema("string"),
    Schema("map-of", (Schema("keyword"), Schema("any"))),
)


@pytest.mark.parametrize(
    "data",
    [":string", ":int", ":double", ":boolean", ":keyword", ":any", ":nil"],
)
def test_primitives(data: str) -> None:
    assert parse(data) == Schema(data[1:])
    assert parse([data]) == Schema(data[1:])  # Malli's [:int] is :int


def test_aliases_and_bare_map() -> None:
    assert parse(":float") == parse([":float"]) == Schema("double")
    assert parse(":bool") == Schema("boolean")
    assert parse(":map") == ANY_MAP
    assert parse([":map"]) == Schema("map")  # no declared keys


@pytest.mark.parametrize("kind", ["vector", "sequential", "set", "maybe"])
def test_one_child_forms(kind: str) -> None:
    assert parse([f":{kind}", ":int"]) == Schema(kind, (INT,))


def test_compound_forms() -> None:
    assert parse([":map-of", ":string", ":int"]) == Schema("map-of", (STRING, INT))
    assert parse([":tuple", ":string", ":int"]) == Schema("tuple", (STRING, INT))
    assert parse([":or", ":string", ":nil"]) == Schema("or", (STRING, Schema("nil")))
    assert parse([":and", ":int", [":>", 0]]) == Schema("and", (INT, Schema(">", values=(0,))))
    assert parse([":enum", "a", "b"]).values == ("a", "b")


@pytest.mark.parametrize("kind", [">", "<", ">=", "<="])
def test_refinements(kind: str) -> None:
    assert parse([f":{kind}", 1.5]).values == (1.5,)
    assert parse([":re", "^[A-Z]"]) == Schema("re", values=("^[A-Z]",))


def test_map_entries_keys_properties_and_defaults() -> None:
    schema = parse(
        [
            ":map",
            ["id", ":int"],
            [":name", ":string"],
            ["email", {"optional": True}, [":maybe", ":string"]],
            ["tags", {":optional": True}, [":vector", ":string"]],
            ["count", {":default": 0}, ":int"],
            ["opts", {"default": {"a": [1, 2]}}, ":map"],
        ]
    )
    assert [e.key for e in schema.entries] == ["id", "name", "email", "tags", "count", "opts"]
    assert [e.optional for e in schema.entries] == [False, False, True, True, False, False]
    assert schema.entries[4].default == "0"
    assert schema.entries[5].default == '{"a": [1, 2]}'


def test_enum_keywords_are_their_names() -> None:
    assert parse([":enum", ":low", ":high", 1, None, True]).values == ("low", "high", 1, None, True)


def test_functions_with_named_and_unnamed_params() -> None:
    named = parse(
        [":=>", [":cat", ["query", ":string"], ["limit", ":int"]], [":map", ["n", ":int"]]]
    )
    assert named.kind == "=>"
    assert [(e.key, e.schema) for e in named.params.entries] == [("query", STRING), ("limit", INT)]
    assert named.returns == Schema("map", entries=(Entry("n", INT),))
    unnamed = parse([":=>", [":cat", ":string", ":int"], ":boolean"])
    assert [e.key for e in unnamed.params.entries] == [None, None]
    zero = parse([":=>", [":cat"], ":int"])
    assert zero.params.entries == ()
    assert parse([":cat", ["q", ":string"]]).kind == "cat"


def test_a_parsed_schema_passes_through_and_may_sit_inside_data() -> None:
    inner = parse([":map", ["id", ":int"]])
    assert parse(inner) is inner
    assert parse([":vector", inner]) == parse("[{id :int}]")


def test_schemas_are_immutable_hashable_and_compare_by_type() -> None:
    schema = parse([":enum", 1, "a"])
    with pytest.raises(AttributeError):
        schema.kind = "int"  # type: ignore[misc]
    assert hash(schema) == hash(parse([":enum", 1, "a"]))
    assert parse([":enum", 1]) != parse([":enum", True]) != parse([":enum", 1.0])
    assert parse([":>", 0]) != parse([":>", 0.0])


def test_function_parts_of_a_non_function() -> None:
    with pytest.raises(SchemaError, match="not a function schema"):
        _ = INT.params


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([":ref", "::node"], r"':ref' is not supported: schema references"),
        ([":schema", {"registry": {}}, "::node"], r"':schema' is not supported"),
        ([":multi", {"dispatch": "type"}], r"':multi' is not supported: multi-schemas"),
        ([":catn", ["a", ":int"]], r"':catn' is not supported"),
        ([":vector", ":ref"], r"':ref' is not supported"),
        ([":vector", ":strng"], r"unknown schema ':strng'; did you mean ':string'\?"),
        ([":vectr", ":int"], r"unknown schema ':vectr'; did you mean ':vector'\?"),
        ([":mapof", ":string", ":int"], r"did you mean ':map-of'\?"),
        ([":vector", ":zzzzzz"], r"unknown schema ':zzzzzz'$"),
    ],
)
def test_unsupported_and_unknown_constructs_are_named(data: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse(data)


def test_recursive_schema_data_is_refused() -> None:
    node: list[Any] = [":map", ["value", ":any"]]
    node.append(["children", [":vector", node]])
    with pytest.raises(SchemaError, match="recursive schemas are not supported"):
        parse(node)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "an empty list is not a schema"),
        (42, "expected a shorthand string, Malli-lite data or a Schema, got 42"),
        ([42], "expected a keyword like ':int' at the start of a schema list, got 42"),
        (["int"], "expected a keyword like ':int'"),
        ([":vector", "int"], "expected a keyword like ':int' as a schema, got \"int\""),
        ([":vector", 5], r"expected a schema \(a keyword like ':int'"),
        ([":set", ":vector"], r"':vector' needs its arguments in a list"),
        ([":vector"], r"\[:vector ...\] takes 1 schema\(s\), got 0"),
        ([":vector", ":int", ":int"], r"takes 1 schema\(s\), got 2"),
        ([":map-of", ":string"], r"\[:map-of ...\] takes 2 schema"),
        ([":tuple"], r"\[:tuple ...\] needs at least one schema"),
        ([":or"], "needs at least one schema"),
        ([":enum"], "needs at least one value"),
        ([":enum", [1]], "takes strings, numbers, booleans or nil"),
        ([":enum", float("nan")], "finite numbers"),
        ([":>", "a"], r"\[:> n\] takes one number"),
        ([":>", True], r"\[:> n\] takes one number"),
        ([":<", 1, 2], r"\[:< n\] takes one number"),
        ([":re", 5], r"\[:re pattern\] takes one string"),
        ([":re", "("], "is not a valid regex"),
        ([":int", ":string"], ":int takes no arguments"),
        ([":map", {"closed": True}, ["a", ":int"]], "properties on :map are not supported"),
        ([":map", "a"], r"a :map entry is \[key, schema\]"),
        ([":map", [1, ":int"]], "a :map key must be a string"),
        ([":map", ["a", ":int"], [":a", ":string"]], 'key "a" is given twice'),
        ([":map", ["a", {"optional": "yes"}, ":int"]], "takes true or false"),
        ([":map", ["a", {"closed": True}, ":int"]], 'property "closed" is not supported'),
        ([":map", ["a", {"default": {1, 2}}, ":int"]], "a default must be JSON data"),
        ([":map", ["a", "props", ":int"]], 'the properties of "a" must be a map'),
        ([":=>", ":int", ":int"], r"takes a \[:cat ...\], got :int"),
        ([":vector", [":=>", [":cat"], ":int"]], r"found \[:=> ...\] inside \[:vector ...\]"),
        ([":=>", [":cat"], [":cat"]], r"found \[:cat ...\] inside \[:=> ...\]"),
        ([":map", ["a", [":cat"]]], r"found \[:cat ...\] inside \[:map ...\]"),
        ([":cat", ["a", ":int"], ":int"], "either all named or all unnamed"),
        ([":cat", ["a", ":int"], ["a", ":int"]], 'parameter "a" is given twice'),
        ([":cat", ["a", {"optional": True}, ":int"], ["b", ":int"]], 'required parameter "b"'),
        ([":cat", ["a", {"default": 1}, ":int"], ["b", ":int"]], 'cannot follow optional "a"'),
    ],
)
def test_malformed_data_is_a_schema_error(data: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as caught:
        parse(data)
    assert not isinstance(caught.value, ShorthandError)


def test_schema_nodes_check_their_own_shape() -> None:
    with pytest.raises(SchemaError, match="unknown schema ':integer'; did you mean ':int'"):
        Schema("integer")
    with pytest.raises(SchemaError, match=":int takes no schemas"):
        Schema("int", (INT,))
    with pytest.raises(SchemaError, match=":vector takes no entries"):
        Schema("vector", (INT,), (Entry("a", INT),))
    with pytest.raises(SchemaError, match=":int takes no literal values"):
        Schema("int", values=(1,))
    with pytest.raises(SchemaError, match="which is not a Schema"):
        Schema("vector", (":int",))  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="only named"):
        Schema("cat", entries=(Entry(None, INT, optional=True),))


def test_importing_the_package_stays_light() -> None:
    heavy = ("torch", "fastapi", "ray", "jsonschema", "pydantic", "hypothesis")
    code = f"import sys, envkit.schema; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
