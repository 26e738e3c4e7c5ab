"""The shorthand grammar: every form, whitespace, Malli data inside it, and errors with columns."""

from __future__ import annotations

from typing import Any

import pytest

from envkit.schema import Schema, ShorthandError, parse

INT, STRING = Schema("int"), Schema("string")


@pytest.mark.parametrize(
    ("shorthand", "data"),
    [
        (":string", ":string"),
        (":int", ":int"),
        (":double", ":double"),
        (":float", ":double"),
        (":boolean", ":boolean"),
        (":bool", ":boolean"),
        (":keyword", ":keyword"),
        (":any", ":any"),
        (":nil", ":nil"),
        (":map", [":map-of", ":keyword", ":any"]),
        ("[:int]", [":vector", ":int"]),
        ("[:string]", [":vector", ":string"]),
        ("[{id :int}]", [":vector", [":map", ["id", ":int"]]]),
        ("[:map]", [":vector", [":map-of", ":keyword", ":any"]]),
        ("[[:int]]", [":vector", [":vector", ":int"]]),
        (":string?", [":maybe", ":string"]),
        ("[:int?]", [":vector", [":maybe", ":int"]]),
        ("[:int]?", [":maybe", [":vector", ":int"]]),
        (":int??", [":maybe", [":maybe", ":int"]]),
        ("[:map?]", [":vector", [":maybe", [":map-of", ":keyword", ":any"]]]),
        ("[:map {}]", [":map"]),
        ('[:enum "a" "b"]', [":enum", "a", "b"]),
        ("[:enum :low :high]", [":enum", "low", "high"]),
        ("[:enum 1 2.5 true false nil null]", [":enum", 1, 2.5, True, False, None, None]),
        ("[:and :int [:> 0]]", [":and", ":int", [":>", 0]]),
        ("[:and :double [:>= 0.0] [:<= 1.0]]", [":and", ":double", [":>=", 0.0], [":<=", 1.0]]),
        ("[:or :int :string :nil]", [":or", ":int", ":string", ":nil"]),
        ("[:maybe :string]", [":maybe", ":string"]),
        ("[:tuple :string :int]", [":tuple", ":string", ":int"]),
        ("[:map-of :string :int]", [":map-of", ":string", ":int"]),
        ("[:set :keyword]", [":set", ":keyword"]),
        ("[:sequential :string]", [":sequential", ":string"]),
        ("[:< -1.5e3]", [":<", -1500.0]),
        ('[:re "^[A-Z]\\\\d+$"]', [":re", "^[A-Z]\\d+$"]),
        ("[:vector {id :int}]", [":vector", [":map", ["id", ":int"]]]),
        ('[:enum "a", "b"]', [":enum", "a", "b"]),
    ],
)
def test_types(shorthand: str, data: Any) -> None:
    assert parse(shorthand) == parse(data)


def test_the_brief_signature() -> None:
    schema = parse("(query :string, limit :int) -> {count :int, items [{id :int}]}")
    assert schema == parse(
        [
            ":=>",
            [":cat", ["query", ":string"], ["limit", ":int"]],
            [":map", ["count", ":int"], ["items", [":vector", [":map", ["id", ":int"]]]]],
        ]
    )


def test_question_mark_fields_are_optional_and_nullable() -> None:
    fn = parse("(id :int, note :string?) -> {name :string, email :string?}")
    assert [(p.key, p.optional, p.schema) for p in fn.params.entries] == [
        ("id", False, INT),
        ("note", True, Schema("maybe", (STRING,))),
    ]
    email = fn.returns.entries[1]
    assert (email.key, email.optional, email.schema) == ("email", True, Schema("maybe", (STRING,)))
    required_nullable = parse("() -> {email [:maybe :string]}").returns.entries[0]
    assert not required_nullable.optional


def test_return_only_is_a_function_with_no_params() -> None:
    assert parse("{summary :string}") == parse("() -> {summary :string}")
    assert parse("{summary :string}").kind == "=>"
    assert parse("{a :int}?") == parse([":maybe", [":map", ["a", ":int"]]])  # not return-only
    assert parse("[{a :int}]").kind == "vector"


@pytest.mark.parametrize(
    "variant",
    [
        "(query :string, limit :int) -> {count :int}",
        "(query:string,limit:int)->{count:int}",
        "  ( query :string ,\n\tlimit :int )\n->  { count  :int }  ",
        "(query :string limit :int) -> {count :int}",
        "(:query :string, :limit :int) -> {:count :int}",
        '("query" :string, "limit" :int) -> {"count" :int}',
        "(query :string, limit :int) -> [:map [count :int]]",
        "(query :string, limit :int) -> [:map [:count :int]]",
        "[:=> [:cat [query :string] [limit :int]] {count :int}]",
    ],
)
def test_whitespace_commas_and_key_spellings(variant: str) -> None:
    assert parse(variant) == parse("(query :string, limit :int) -> {count :int}")


def test_spec_style_maps_without_commas() -> None:
    assert parse("() -> {:id :int :name :string}") == parse("() -> {id :int, name :string}")


def test_nested_maps_and_vectors() -> None:
    schema = parse("() -> {user {name :string, tags [:string], posts [{id :int, meta :map}]}}")
    assert schema.returns == parse(
        [
            ":map",
            [
                "user",
                [
                    ":map",
                    ["name", ":string"],
                    ["tags", [":vector", ":string"]],
                    ["posts", [":vector", [":map", ["id", ":int"], ["meta", ":map"]]]],
                ],
            ],
        ]
    )


def test_malli_map_entries_with_properties() -> None:
    shorthand = (
        '[:map [id :int] [email {:optional true} :string] [n {:default 0} :int] ["a b" :nil]]'
    )
    assert parse(shorthand) == parse(
        [
            ":map",
            ["id", ":int"],
            ["email", {"optional": True}, ":string"],
            ["n", {"default": 0}, ":int"],
            ["a b", ":nil"],
        ]
    )
    defaults = parse('[:map [x {:default [1 "a" {"k" nil}]} :any]]')
    assert defaults.entries[0].default == '[1, "a", {"k": null}]'
    question = parse("[:map [note :string?] [user {name :string}]]")
    assert question.entries[0].optional and question.entries[1].schema.kind == "map"


def test_cat_forms_named_and_unnamed() -> None:
    assert parse("[:=> [:cat :string :int] :boolean]") == parse(
        [":=>", [":cat", ":string", ":int"], ":boolean"]
    )
    named = parse("[:cat [q :string] [limit {:default 10} :int] [x :int?]]")
    assert [(e.key, e.optional, e.default) for e in named.entries] == [
        ("q", False, None),
        ("limit", False, "10"),
        ("x", True, None),
    ]
    assert parse("[:cat {}]") == parse([":cat", [":map"]])  # an unnamed parameter


@pytest.mark.parametrize(
    ("shorthand", "data"),
    [
        ("[:map [a {}?]]", [":map", ["a", {"optional": True}, [":maybe", [":map"]]]]),
        (
            "[:map [a {a :int}?]]",
            [":map", ["a", {"optional": True}, [":maybe", [":map", ["a", ":int"]]]]],
        ),
        ("[:map [a {}??]]", [":map", ["a", {"optional": True}, [":maybe", [":maybe", [":map"]]]]]),
        ("[:cat [limit {}?]]", [":cat", ["limit", {"optional": True}, [":maybe", [":map"]]]]),
        ("[:map [a {optional :int}]]", [":map", ["a", [":map", ["optional", ":int"]]]]),
        ("[:map [a {:optional :int}]]", [":map", ["a", [":map", ["optional", ":int"]]]]),
        (
            "[:map [a {:default nil} {b :int}?]]",
            [
                ":map",
                ["a", {"default": None, "optional": True}, [":maybe", [":map", ["b", ":int"]]]],
            ],
        ),
    ],
)
def test_braces_after_an_entry_key_are_properties_only_before_a_type(
    shorthand: str, data: Any
) -> None:
    """Before "?" or "]" the braces are the entry's map type (its properties would need a type)."""
    assert parse(shorthand) == parse(data)


def _error(signature: str) -> ShorthandError:
    with pytest.raises(ShorthandError) as caught:
        parse(signature)
    return caught.value


@pytest.mark.parametrize(
    ("signature", "column", "message"),
    [
        ("(query :string, limit, :int) -> :int", 22, "expected a type after 'limit', got ','"),
        ("(query :string, limit) -> :int", 22, "expected a type after 'limit', got ')'"),
        ("(query :string", 15, "expected ',' or ')', got end of input"),
        ("(query :string) :int", 17, "expected '->' after the parameter list, got ':int'"),
        ("(query :string) ->", 19, "expected a return type after '->', got end of input"),
        ("(query :string,) -> :int", 16, "expected a parameter name after ',', got ')'"),
        ("(, a :int) -> :int", 2, "expected a parameter name or ')', got ','"),
        ("(1 :int) -> :int", 2, "expected a parameter name or ')', got '1'"),
        ("(q %string) -> :int", 4, "expected a type after 'q', got '%'"),
        ("{count :int", 12, "expected ',' or '}', got end of input"),
        ("{count}", 7, "expected a type after 'count', got '}'"),
        ("{a :int,, b :int}", 9, "expected a field name after ',', got ','"),
        ("{a :int} -> :int", 10, "expected end of input after the signature, got '->'"),
        ("{a :int}}", 9, "expected end of input after the signature, got '}'"),
        (
            "{count :integer}",
            8,
            "expected a type after 'count', got ':integer'; did you mean ':int'?",
        ),
        ("[:int :string]", 7, "expected ']' after the vector's item type, got ':string'"),
        ("[:int", 6, "expected ']' after the vector's item type, got end of input"),
        ("", 1, "expected a type or a parameter list '(', got end of input"),
        ("-> :int", 1, "expected a type or a parameter list '(', got '->'"),
        ("() -> :vector", 7, "expected a return type after '->', got ':vector' (write [:vector"),
        ("[:map [id]]", 10, "expected a type after 'id', got ']'"),
        ("[:map id :int]", 7, "expected a map entry '[key type]' or ']', got 'id'"),
        ('[:enum "a" foo]', 12, "expected a literal in [:enum ...] or ']' (a string, number,"),
        ('{a "unterminated}', 4, "expected a type after 'a', got '\"unterminated}'"),
        ('{"a\\q" :int}', 2, "invalid string '\"a\\\\q\"'"),
        ("[:enum]", 1, "[:enum ...] needs at least one value"),
        ('[:re "("]', 1, '[:re "("] is not a valid regex'),
        ('[:> "a"]', 1, "[:> n] takes one number"),
        ("[:vector :int :int]", 1, "[:vector ...] takes 1 schema(s), got 2"),
        ("{a :int, a :string}", 1, 'key "a" is given twice'),
        ("(a :int?, b :int) -> :int", 1, 'required parameter "b" cannot follow optional "a"'),
        ("[:map {:closed true} [a :int]]", 7, "properties on :map are not supported"),
        ("[:map [a {:closed true} :int]]", 8, 'property ":closed" is not supported'),
        ("[:map [a {optional true} :int]]", 11, "expected a property such as :optional or '}'"),
        ("[:ref ::node]", 2, "':ref' is not supported: schema references"),
        ("[:multi {:dispatch :type}]", 2, "':multi' is not supported"),
        ("() -> [:cat :int]", 4, "found [:cat ...] inside [:=> ...]"),
        ("[:vector [:=> [:cat] :int]]", 1, "found [:=> ...] inside [:vector ...]"),
        ("[:cat :int]?", 12, "found [:cat ...] inside [:maybe ...]"),
    ],
)
def test_errors_name_the_column_and_what_was_expected(
    signature: str, column: int, message: str
) -> None:
    error = _error(signature)
    assert error.column == column
    assert str(error).startswith(f"column {column}: ")
    assert message in str(error)


def test_error_attributes() -> None:
    error = _error("(query :string, limit, :int) -> :int")
    assert str(error) == "column 22: expected a type after 'limit', got ','"
    assert error.expected == "a type after 'limit'"
    assert isinstance(error, ValueError)
