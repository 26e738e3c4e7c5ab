"""render(): the prompt form, and parse(render(s)) == s."""

from __future__ import annotations

from typing import Any

import pytest

from envkit.schema import Schema, parse, render


@pytest.mark.parametrize(
    ("schema", "name", "text"),
    [
        (
            "(query :string, limit :int) -> [{id :int, title :string}]",
            "search",
            "search(query :string, limit :int) -> [{id :int, title :string}]",
        ),
        (
            "(query :string,limit :int)->[{id :int,title :string}]",
            None,
            "(query :string, limit :int) -> [{id :int, title :string}]",
        ),
        ("(id :int) -> {name :string, email :string?}", "get_user", None),
        ('(text :string) -> {category [:enum "spam" "ham"], confidence :double}', "classify", None),
        ("{summary :string}", None, "() -> {summary :string}"),
        (
            [":=>", [":cat", ["move", [":enum", "stay", "up"]]], ":any"],
            "act",
            'act(move [:enum "stay" "up"]) -> :any',
        ),
        (":float", None, ":double"),
        (":bool", None, ":boolean"),
        ("[:map]", None, "[:map]"),
        (":map", None, ":map"),
        ("[:int?]", None, "[:int?]"),
        ("[:and :int [:> 0] [:<= 1.5]]", None, "[:and :int [:> 0] [:<= 1.5]]"),
        ('[:re "^\\\\d+$"]', None, '[:re "^\\\\d+$"]'),
        ("[:enum :low 1 true nil 2.5]", None, '[:enum "low" 1 true nil 2.5]'),
        ([":map", ["id", ":int"]], None, "[:map [id :int]]"),  # a root map is not return-only
        ([":map"], None, "[:map {}]"),
        ("() -> {}", None, "() -> {}"),
        ("() -> {a [:maybe :int]}", None, "() -> {a [:maybe :int]}"),
        ("() -> {a [:maybe :int]?}", None, "() -> {a :int??}"),
        (
            [":map", ["email", {"optional": True}, ":string"], ["n", {"default": 0}, ":int"]],
            None,
            "[:map [email {:optional true} :string] [n {:default 0} :int]]",
        ),
        (
            [":=>", [":cat", ["q", ":string"], ["n", {"default": 5}, ":int"]], ":any"],
            "f",
            "f [:=> [:cat [q :string] [n {:default 5} :int]] :any]",
        ),
        (
            [":=>", [":cat", ":string", ":int"], ":boolean"],
            None,
            "[:=> [:cat :string :int] :boolean]",
        ),
        (
            [":map", ["first name", ":string"], ["ok", ":int"]],
            None,
            '[:map ["first name" :string] [ok :int]]',
        ),
        (":int", "x", "x :int"),
        (
            [":map", ["a", {"optional": True}, [":maybe", [":map", ["a", ":int"]]]]],
            None,
            "[:map [a {a :int}?]]",
        ),
    ],
)
def test_render(schema: Any, name: str | None, text: str | None) -> None:
    rendered = render(schema, name=name)
    expected = text if text is not None else f"{name}{schema}" if isinstance(schema, str) else None
    assert rendered == expected


CORPUS = [
    ":string",
    ":int",
    ":double",
    ":boolean",
    ":keyword",
    ":any",
    ":nil",
    ":map",
    "[:int]",
    "[[:string]]",
    "[:map]",
    "[:map?]",
    ":int?",
    ":int??",
    "[:set :keyword]",
    "[:sequential :int]",
    "[:tuple :string :int [:int]]",
    "[:map-of :string {a :int}]",
    '[:enum "a" "b" 1 2.5 true nil]',
    "[:or :int :string {id :int}]",
    "[:and :int [:> 0] [:< 10]]",
    "[:and :double [:>= -1.5e-07] [:<= 1e+16]]",
    '[:re "^[A-Z]\\\\w*$"]',
    "[:maybe [:maybe :int]]",
    "{summary :string}",
    "() -> :int",
    "(query :string, limit :int) -> {count :int, items [{id :int}]}",
    "(a :int?, b :string?) -> [:int]?",
    "(id :int) -> {name :string, email :string?, meta :map, tags [:string], n [:maybe :int]}",
    '("first name" :string, nil :int, true :int) -> {"a.b" :int, "" :int, ":x" :int}',
    '[:map [a {:optional true} :int] [b {:default {"k" [1 nil]}} :string] [c {:default 0} :int?]]',
    "[:=> [:cat [a :int] [b {:optional true} :int]] :any]",
    "[:=> [:cat :int [:vector :string]] {ok :boolean}]",
    "[:cat [a :int] [b :int?]]",
    "[:cat]",
    "[:map {}]",
    "() -> {user {name :string, address {city :string, zip :string?}}}",
    "[:map [a {}?]]",
    '[:map [a {a :int}?] ["first name" {"" :int}??] [b {:default nil} {}?]]',
    "[:=> [:cat [q {:default 1} :int] [limit {}?]] :any]",
]


@pytest.mark.parametrize("signature", CORPUS)
def test_round_trip(signature: str) -> None:
    schema = parse(signature)
    assert parse(render(schema)) == schema
    assert render(parse(render(schema))) == render(schema)


def test_round_trip_of_a_hand_built_schema() -> None:
    schema = Schema("vector", (Schema("enum", values=("x", 1.0, False)),))
    assert render(schema) == '[[:enum "x" 1.0 false]]'
    assert parse(render(schema)) == schema
