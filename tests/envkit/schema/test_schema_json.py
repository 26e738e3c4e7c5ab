"""to_json_schema and tool_definition: flavors, meta-schema validity, agreement with validate()."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from envkit.schema import SchemaError, parse, render, to_json_schema, tool_definition, validate

DRAFT = "https://json-schema.org/draft/2020-12/schema"
FLAVORS = ("plain", "anthropic", "openai-strict")


def body(schema: Any, flavor: str = "plain") -> dict[str, Any]:
    """The JSON Schema without ``$schema``."""
    result = to_json_schema(schema, flavor=flavor)  # type: ignore[arg-type]
    assert result.pop("$schema") == DRAFT
    return result


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (":string", {"type": "string"}),
        (":keyword", {"type": "string"}),
        (":int", {"type": "integer"}),
        (":double", {"type": "number"}),
        (":boolean", {"type": "boolean"}),
        (":nil", {"type": "null"}),
        (":any", {}),
        ("[:int]", {"type": "array", "items": {"type": "integer"}}),
        ("[:sequential :int]", {"type": "array", "items": {"type": "integer"}}),
        ("[:set :int]", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        (
            "[:tuple :string :int]",
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
                "minItems": 2,
            },
        ),
        ('[:enum "a" 1 nil]', {"enum": ["a", 1, None]}),
        ("[:or :int :string]", {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (":int?", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        ("[:> 0]", {"type": "number", "exclusiveMinimum": 0}),
        ("[:< 0]", {"type": "number", "exclusiveMaximum": 0}),
        ("[:>= 0]", {"type": "number", "minimum": 0}),
        ("[:<= 0]", {"type": "number", "maximum": 0}),
        ('[:re "^a"]', {"type": "string", "pattern": "^a"}),
        ("[:and :int [:> 0] [:<= 9]]", {"type": "integer", "exclusiveMinimum": 0, "maximum": 9}),
        ('[:and :string [:re "^a"]]', {"type": "string", "pattern": "^a"}),
        (
            "[:and [:> 0] [:> 1]]",
            {
                "allOf": [
                    {"type": "number", "exclusiveMinimum": 0},
                    {"type": "number", "exclusiveMinimum": 1},
                ]
            },
        ),
        (":map", {"type": "object", "additionalProperties": {}}),
        (
            '[:map-of [:enum "a" "b"] :int]',
            {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "propertyNames": {"enum": ["a", "b"]},
            },
        ),
        (
            [
                ":map",
                ["id", ":int"],
                ["email", {"optional": True}, ":string"],
                ["n", {"default": 3}, ":int"],
            ],
            {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "email": {"type": "string"},
                    "n": {"type": "integer", "default": 3},
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_plain(schema: Any, expected: dict[str, Any]) -> None:
    assert body(schema) == expected
    assert body(schema, "anthropic") == expected


def test_a_function_is_its_parameters_as_an_object() -> None:
    assert body("(query :string, limit :int?) -> [{id :int}]") == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert body("{summary :string}") == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    with pytest.raises(SchemaError, match="parameters need names"):
        to_json_schema("[:=> [:cat :int] :any]")


def test_a_root_cat() -> None:
    assert body("[:cat :int :string]") == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
    }
    assert body("[:cat [a :int]]")["required"] == ["a"]


def test_openai_strict_requires_every_key_and_nulls_the_optional_ones() -> None:
    schema = [
        ":map",
        ["id", ":int"],
        ["email", {"optional": True}, ":string"],
        ["note", {"optional": True}, [":maybe", ":string"]],
        ["n", {"default": 3}, ":int"],
        ["tags", [":set", ":string"]],
        ["counts", [":map-of", ":keyword", ":int"]],
        ["inner", [":vector", [":map", ["x", ":int"]]]],
    ]
    assert body(schema, "openai-strict") == {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "email": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"key": {"type": "string"}, "value": {"type": "integer"}},
                    "required": ["key", "value"],
                    "additionalProperties": False,
                },
            },
            "inner": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "required": ["x"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["id", "email", "note", "n", "tags", "counts", "inner"],
        "additionalProperties": False,
    }


def test_an_optional_nullable_map_entry_in_every_flavor() -> None:
    """``[k {...}?]``: the braces are a nullable map type, not the entry's properties."""
    text = '[:map [meta {a :int}?] ["first name" {}?]]'
    assert render(text) == text
    meta = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    empty = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    properties = {
        "meta": {"anyOf": [meta, {"type": "null"}]},
        "first name": {"anyOf": [empty, {"type": "null"}]},
    }
    closed = {"type": "object", "properties": properties, "additionalProperties": False}
    assert body(text) == body(text, "anthropic") == {**closed, "required": []}
    assert body(text, "openai-strict") == {**closed, "required": ["meta", "first name"]}


def test_openai_strict_has_no_allof() -> None:
    assert body("[:and :int [:>= 1]]", "openai-strict") == {"type": "integer", "minimum": 1}
    with pytest.raises(SchemaError, match="openai-strict has no allOf"):
        to_json_schema("[:and [:> 0] [:> 1]]", flavor="openai-strict")


def test_bad_flavor() -> None:
    with pytest.raises(ValueError, match="flavor must be"):
        to_json_schema(":int", flavor="gemini")  # type: ignore[arg-type]


def test_tool_definitions() -> None:
    fn = "(query :string, limit :int?) -> [{id :int}]"
    openai = tool_definition(fn, "search", "Search items.")
    parameters = body(fn, "openai-strict")
    assert openai == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search items.",
            "parameters": parameters,
            "strict": True,
        },
    }
    anthropic = tool_definition(fn, "search", "Search items.", flavor="anthropic")
    assert anthropic == {
        "name": "search",
        "description": "Search items.",
        "input_schema": body(fn, "anthropic"),
    }
    with pytest.raises(SchemaError, match=r"a tool needs a function schema .*, got \{id :int\}"):
        tool_definition([":map", ["id", ":int"]], "x", "y")
    with pytest.raises(ValueError, match="anthropic or openai-strict"):
        tool_definition(fn, "x", "y", flavor="plain")  # type: ignore[arg-type]


# -- every generated schema is a valid Draft 2020-12 schema --------------------------------------

SCHEMAS: list[Any] = [
    ":string",
    ":int",
    ":double",
    ":boolean",
    ":keyword",
    ":any",
    ":nil",
    ":map",
    "[:int]",
    "[:set :string]",
    "[:sequential :double]",
    "[:tuple :string [:int] {a :int}]",
    '[:enum "pending" "active" 1 true nil]',
    "[:or :int :string {id :int}]",
    "[:and :int [:> 0] [:< 100]]",
    "[:and :double [:>= 0.0] [:<= 1.0]]",
    '[:and :string [:re "^[A-Z]"]]',
    "[:and {a :int} {b :int}]",
    "[:maybe {a :int}]",
    "[:map-of :string [:int]]",
    '[:map-of [:enum "a" "b"] :int]',
    "[:map-of :int :string]",
    "[:cat :int :string]",
    "[:cat [a :int] [b {:default 1} :int]]",
    "(query :string, limit :int?) -> [{id :int, title :string}]",
    "{summary :string}",
    [
        ":map",
        ["id", ":int"],
        ["email", {"optional": True}, ":string"],
        ["n", {"default": [1]}, [":vector", ":int"]],
    ],
    "() -> {user {name :string, tags [:set :keyword], meta :map, score [:map-of :string :double]}}",
]


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("schema", SCHEMAS, ids=str)
def test_every_flavor_is_a_valid_draft_2020_12_schema(schema: Any, flavor: str) -> None:
    try:
        generated = to_json_schema(schema, flavor=flavor)  # type: ignore[arg-type]
    except SchemaError as error:  # only openai-strict refuses, and only a clashing [:and ...]
        assert flavor == "openai-strict" and "no allOf" in str(error)
        return
    Draft202012Validator.check_schema(generated)
    assert generated["$schema"] == DRAFT


# -- jsonschema accepts exactly what validate(strict, output) accepts ------------------------------

AGREEMENT: list[tuple[Any, list[Any]]] = [
    (":string", ["a", "", 1, None, ["a"]]),
    (":int", [1, -5, 10**20, 1.5, "1", True, None]),
    (":double", [1.5, 2, -0.0, "1.5", False, None]),
    (":boolean", [True, False, 0, "true", None]),
    (":keyword", ["pending", 1]),
    (":nil", [None, 0, "", False]),
    (":any", [None, 1, "x", [1], {"a": 1}]),
    ("[:int]", [[], [1, 2], [1, "2"], [1.5], "12", {"0": 1}]),
    ("[:set :any]", [[1, 2], [1, 1], [1, 1.0], [1, True], [[1], [1.0]], [{"a": 1}, {"a": 1}], []]),
    ("[:tuple :string :int]", [["a", 1], ["a"], ["a", 1, 2], [1, "a"], []]),
    ('[:enum "a" 1 nil]', ["a", 1, 1.0, None, "b", True, "1"]),
    ("[:or :int {id :int}]", [1, {"id": 1}, {"id": 1, "x": 2}, {}, "1", None]),
    ("[:and :int [:> 0] [:<= 10]]", [1, 10, 0, 11, 5.5, "5", True]),
    ('[:and :string [:re "^[A-Z]"]]', ["Abc", "abc", "", 5]),
    ('[:re "b"]', ["abc", "xyz", 1]),
    ("[:> 0]", [1, 0.5, 0, -1, "1", True, None]),
    ("[:maybe [:>= 1.5]]", [None, 1.5, 1.4, "2"]),
    (":map", [{}, {"a": 1, "b": [None]}, [], "x"]),
    ("[:map-of :string :int]", [{}, {"a": 1}, {"a": "1"}, {"a": 1, "b": None}, [["a", 1]]]),
    ('[:map-of [:enum "a" "b"] :int]', [{"a": 1}, {"a": 1, "c": 2}, {}]),
    ("[:map-of :int :int]", [{}, {"1": 1}]),  # JSON keys are strings, never ints: both refuse
    (
        [
            ":map",
            ["id", ":int"],
            ["email", {"optional": True}, ":string"],
            ["n", {"default": 0}, ":int"],
        ],
        [
            {"id": 1},
            {"id": 1, "email": "e", "n": 2},
            {"id": 1, "email": None},
            {"id": 1, "extra": 1},
            {"email": "e"},
            {"id": "1"},
            {":id": 1},
            [],
        ],
    ),
    (
        "() -> {user {name :string, email :string?}, items [{id :int}]}",
        [
            {"user": {"name": "a"}, "items": []},
            {"user": {"name": "a", "email": None}, "items": [{"id": 1}]},
            {"user": {"name": "a", "email": 5}, "items": []},
            {"user": {"name": "a"}, "items": [{"id": 1, "x": 1}]},
            {"user": {}, "items": []},
            {"user": {"name": "a"}},
            {"user": {"name": "a"}, "items": [], "more": 1},
        ],
    ),
    ("[:and {a :int} {b :int}]", [{"a": 1, "b": 2}, {"a": 1}, {}]),
    (
        "[:map [meta {a :int}?]]",
        [{}, {"meta": None}, {"meta": {"a": 1}}, {"meta": {}}, {"meta": 1}],
    ),
    (
        "[:and [:map [a {:optional true} :int]] [:map [a {:optional true} :int]]]",
        [{}, {"a": 1}, {"a": "1"}],
    ),
]


def _sample_ids() -> list[Any]:
    return [
        pytest.param(schema, sample, id=f"{schema}|{sample!r}")
        for schema, samples in AGREEMENT
        for sample in samples
    ]


@pytest.mark.parametrize(("schema", "sample"), _sample_ids())
def test_plain_json_schema_agrees_with_strict_output_validation(schema: Any, sample: Any) -> None:
    parsed = parse(schema)
    target = parsed.returns if parsed.kind == "=>" else parsed
    ours = validate(target, sample, mode="strict", direction="output").ok
    theirs = Draft202012Validator(to_json_schema(target)).is_valid(sample)
    assert ours == theirs


# -- the differences, which are inherent ----------------------------------------------------------


def test_json_schema_integer_takes_integral_floats_and_int_does_not() -> None:
    assert Draft202012Validator(to_json_schema(":int")).is_valid(1.0)
    assert not validate(":int", 1.0, direction="output").ok


def test_openai_strict_requires_all_keys_and_takes_null_for_optional_ones() -> None:
    schema = [":map", ["id", ":int"], ["email", {"optional": True}, ":string"]]
    strict = Draft202012Validator(to_json_schema(schema, flavor="openai-strict"))
    assert not strict.is_valid({"id": 1})  # validate() accepts a missing optional key
    assert validate(schema, {"id": 1}, mode="strict", direction="output").ok
    assert strict.is_valid({"id": 1, "email": None})  # validate() needs [:maybe ...] for a null
    assert not validate(schema, {"id": 1, "email": None}, direction="output").ok
    nullable = "() -> {id :int, email :string?}"
    assert validate(nullable, {"id": 1, "email": None}, direction="output").ok


def test_openai_strict_map_of_is_an_array_of_pairs() -> None:
    strict = Draft202012Validator(to_json_schema("[:map-of :string :int]", flavor="openai-strict"))
    assert strict.is_valid([{"key": "a", "value": 1}])
    assert not strict.is_valid({"a": 1})  # the dict validate() takes


def test_a_root_cat_takes_a_dict_or_a_list_in_validate_but_one_shape_in_json_schema() -> None:
    named = "[:cat [a :int]]"
    assert validate(named, [1], direction="output").ok
    assert not Draft202012Validator(to_json_schema(named)).is_valid([1])
