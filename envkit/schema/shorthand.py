r"""``parse_shorthand``: the compact signature syntax -> ``Schema``.

Grammar (commas separate fields and parameters, and may be left out between them)::

    signature := "(" [field ("," field)*] ")" "->" type     a function
               | "{" ... "}"                               return-only: "() -> {...}"
               | type                                      any other type on its own
    field     := key type                                  "name :type?" -> optional, nullable
    key       := name | :keyword | "string"
    type      := atom "?"*                                 "T?" -> [:maybe T]
    atom      := :string :int :double/:float :boolean/:bool :keyword :any :nil
               | :map                                      [:map-of :keyword :any]
               | "{" [field ...] "}"                       [:map ...]
               | "[" type "]"                              [:vector T]
               | "[" :head argument* "]"                   Malli data: [:enum "a" "b"], [:> 0],
                                                           [:and :int [:> 0]], [:map [k {..} T]]

Inside ``[:map ...]`` and ``[:cat ...]`` forms an entry is ``[key T]`` or
``[key {:optional true :default 0} T]``; braces after the key are properties only when a type
follows them, so in ``[k {a :int}?]`` and ``[k {}]`` they are a map type. ``[:cat ...]``
parameters are named with bare names (``[query :string]``). Literals are JSON strings
(``[:re "^\\d+$"]`` doubles its backslashes), numbers, ``true``, ``false`` and ``nil``
(keywords are their names: ``[:enum :low]`` is ``"low"``).
``[:map]`` is a vector of open maps, as in ``{items [:map]}``; ``[:map {}]`` (empty properties) is
a map with no declared keys.

Errors are ``ShorthandError``s: ``column 17: expected a type after 'limit', got ','``. Columns
count characters from the start of the text, from 1 (a newline counts as one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from envkit.schema.nodes import (
    ALIASES,
    ANY_MAP,
    ARGUMENTS,
    PRIMITIVES,
    UNSUPPORTED,
    Entry,
    Schema,
    SchemaError,
    ShorthandError,
    make_entry,
    nearest,
    suggest,
)

__all__ = ["parse_shorthand"]

_TOKENS = re.compile(
    r"""(?P<space>\s+)
      | (?P<arrow>->)
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      | (?P<keyword>:[A-Za-z0-9_*+!<>=/.-]+)
      | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<punct>[()\[\]{},?])""",
    re.VERBOSE,
)
_LITERAL_NAMES = {"true": True, "false": False, "nil": None, "null": None}
T = TypeVar("T")


@dataclass(frozen=True)
class _Token:
    kind: str  # arrow, number, keyword, name, string, end, bad, or the punctuation itself
    text: str
    column: int

    def __str__(self) -> str:
        return "end of input" if self.kind == "end" else repr(self.text)


def parse_shorthand(text: str) -> Schema:
    """The ``Schema`` a shorthand signature describes.

    Example:
        >>> fn = parse_shorthand("(query :string, limit :int?) -> [{id :int}]")
        >>> [(p.key, p.optional) for p in fn.params.entries], fn.returns.kind
        ([('query', False), ('limit', True)], 'vector')
    """
    return _Parser(_tokenize(text)).signature()


def _tokenize(text: str) -> list[_Token]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKENS.match(text, position)
        if match is None:  # the parser reports it where it meets it, saying what it expected
            rest = text[position:] if text[position] == '"' else text[position]
            tokens.append(_Token("bad", rest, position + 1))
            break
        kind = match.lastgroup or ""
        if kind != "space":
            token_kind = match.group() if kind == "punct" else kind
            tokens.append(_Token(token_kind, match.group(), position + 1))
        position = match.end()
    tokens.append(_Token("end", "", len(text) + 1))
    return tokens


class _Parser:
    """Recursive descent over the tokens; ``self.last`` is the token consumed most recently."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.position = 0
        self.last = tokens[0]

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        self.last = self.peek()
        self.position = min(self.position + 1, len(self.tokens) - 1)
        return self.last

    def fail(self, expected: str, token: _Token | None = None) -> ShorthandError:
        token = token or self.peek()
        return ShorthandError(f"expected {expected}, got {token}", token.column, expected)

    def expect(self, kind: str, expected: str) -> _Token:
        if self.peek().kind != kind:
            raise self.fail(expected)
        return self.take()

    def build(self, at: _Token, expected: str, make: Callable[[], T]) -> T:
        """``make()``, with a ``SchemaError`` it raises reported at ``at``'s column."""
        try:
            return make()
        except ShorthandError:
            raise
        except SchemaError as error:
            raise ShorthandError(str(error), at.column, expected) from None

    # -- signatures, fields and types ------------------------------------------------------

    def signature(self) -> Schema:
        start = self.peek()
        if start.kind == "(":
            params = self.params()
            self.expect("arrow", "'->' after the parameter list")
            arrow = self.last
            returns = self.type("a return type after '->'")
            schema = self.build(arrow, "a return type", lambda: Schema("=>", (params, returns)))
        else:
            schema = self.type("a type or a parameter list '('")
            if start.kind == "{" and self.last.kind == "}":  # return-only: "{...}" is "() -> {...}"
                schema = Schema("=>", (Schema("cat"), schema))
        self.expect("end", "end of input after the signature")
        return schema

    def params(self) -> Schema:
        opening = self.take()
        entries = self.fields(")", "a parameter name")
        return self.build(opening, "valid parameters", lambda: Schema("cat", entries=entries))

    def fields(self, close: str, what: str) -> tuple[Entry, ...]:
        """``key type`` fields up to ``close``, with optional commas between them."""
        entries: list[Entry] = []
        while self.peek().kind != close:
            if entries and self.peek().kind == ",":
                self.take()
                entries.append(self.field(f"{what} after ','"))
            elif entries and self.peek().kind not in ("name", "keyword", "string"):
                raise self.fail(f"',' or '{close}'")
            else:
                entries.append(self.field(f"{what} or '{close}'" if not entries else what))
        self.take()
        return tuple(entries)

    def field(self, expected: str) -> Entry:
        token = self.peek()
        key = self.key(expected)
        schema = self.type(f"a type after {token}")
        return make_entry(key, schema, question=self.last.kind == "?")

    def key(self, expected: str) -> str:
        token = self.take()
        if token.kind == "name":
            return token.text
        if token.kind == "keyword":
            return token.text[1:]
        if token.kind == "string":
            return self.string(token)
        raise self.fail(expected, token)

    def type(self, expected: str) -> Schema:
        token = self.peek()
        if token.kind == "keyword":
            schema = self.keyword_type(self.take(), expected)
        elif token.kind == "{":
            opening = self.take()
            entries = self.fields("}", "a field name")
            schema = self.build(opening, "valid fields", lambda: Schema("map", entries=entries))
        elif token.kind == "[":
            schema = self.bracket()
        else:
            raise self.fail(expected)
        while self.peek().kind == "?":
            schema = self.build(
                self.take(), "a type before '?'", partial(Schema, "maybe", (schema,))
            )
        return schema

    def keyword_type(self, token: _Token, expected: str) -> Schema:
        name = ALIASES.get(token.text[1:], token.text[1:])
        if name in PRIMITIVES:
            return Schema(name)
        if name == "map":
            return ANY_MAP
        if name in UNSUPPORTED:
            problem = nearest(name)
        elif name in ARGUMENTS:
            problem = f"expected {expected}, got {token} (write [{token.text} ...])"
        else:
            problem = f"expected {expected}, got {token}{suggest(name)}"
        raise ShorthandError(problem, token.column, expected)

    def bracket(self) -> Schema:
        """``[T]`` (a vector) or a Malli form ``[:head argument*]``."""
        opening = self.take()
        head = self.peek()
        name = head.text[1:] if head.kind == "keyword" else ""
        vector_of_maps = name == "map" and self.peek(1).kind in ("]", "?")
        if name in ARGUMENTS and not vector_of_maps:
            self.take()
            return self.form(opening, name)
        item = self.type("a type after '['")
        self.expect("]", "']' after the vector's item type")
        return Schema("vector", (item,))

    # -- Malli forms -----------------------------------------------------------------------

    def form(self, opening: _Token, name: str) -> Schema:
        expected = f"a valid [:{name} ...]"
        reads = ARGUMENTS[name]
        if reads == "schemas":
            children = self.items(lambda: self.type(f"a schema in [:{name} ...] or ']'"))
            return self.build(opening, expected, lambda: Schema(name, children=tuple(children)))
        if reads == "literals":
            values = self.items(lambda: self.literal(f"a literal in [:{name} ...] or ']'"))
            return self.build(opening, expected, lambda: Schema(name, values=tuple(values)))
        if name == "map" and self.peek().kind == "{":  # a :cat's "{" is an unnamed map parameter
            brace = self.peek()
            properties = self.properties()
            if properties:
                raise ShorthandError(
                    f"properties on :{name} are not supported", brace.column, "no properties"
                )
        read = self.map_entry if name == "map" else self.param
        entries = self.items(read)
        return self.build(opening, expected, lambda: Schema(name, entries=tuple(entries)))

    def items(self, read: Callable[[], T]) -> list[T]:
        """Arguments up to ``]``, with optional commas between them."""
        found: list[T] = []
        while self.peek().kind != "]":
            if found and self.peek().kind == ",":
                self.take()
            found.append(read())
        self.take()
        return found

    def map_entry(self) -> Entry:
        self.expect("[", "a map entry '[key type]' or ']'")
        return self.entry(self.key("a key"))

    def param(self) -> Entry:
        """``[name T]`` (a named parameter) or a type (an unnamed one)."""
        if self.peek().kind == "[" and self.peek(1).kind in ("name", "string"):
            self.take()
            return self.entry(self.key("a parameter name"))
        return Entry(None, self.type("a parameter type, '[name type]' or ']'"))

    def entry(self, key: str) -> Entry:
        """The rest of ``[key {properties}? type]``, after the key."""
        token = self.last
        properties: dict[str, Any] = {}
        # Only "]" or "?" may follow the entry's type, and neither can start a type.
        if self.peek().kind == "{" and self.after_braces().kind not in ("]", "?"):
            properties = self.properties()
        schema = self.type(f"a type after {token}")
        question = self.last.kind == "?"
        self.expect("]", f"']' after the type of {token}")
        return self.build(
            token,
            "valid properties",
            lambda: make_entry(key, schema, properties, question=question),
        )

    def after_braces(self) -> _Token:
        """The token after the ``{...}`` that starts here (properties come before a type)."""
        depth, ahead = 0, 0
        while True:
            token = self.peek(ahead)
            depth += {"{": 1, "}": -1}.get(token.kind, 0)
            if (depth == 0 and token.kind == "}") or token.kind == "end":
                return self.peek(ahead + 1)
            ahead += 1

    def properties(self) -> dict[str, Any]:
        self.take()
        found: dict[str, Any] = {}
        while self.peek().kind != "}":
            if found and self.peek().kind == ",":
                self.take()
            name = self.expect("keyword", "a property such as :optional or '}'")
            found[name.text] = self.literal(f"a value for {name}")
        self.take()
        return found

    def literal(self, expected: str) -> Any:
        token = self.take()
        if token.kind == "string":
            return self.string(token)
        if token.kind == "number":
            if re.search("[.eE]", token.text):
                return float(token.text)
            try:
                return int(token.text)
            except ValueError:  # more digits than Python converts
                raise self.fail("a number Python can read", token) from None
        if token.kind == "keyword":
            return token.text[1:]
        if token.kind == "name" and token.text in _LITERAL_NAMES:
            return _LITERAL_NAMES[token.text]
        if token.kind == "[":
            return self.items(lambda: self.literal("a literal or ']'"))
        if token.kind == "{":
            found: dict[str, Any] = {}
            while self.peek().kind != "}":
                if found and self.peek().kind == ",":
                    self.take()
                key = self.key("a key or '}'")
                found[key] = self.literal(f"a value for {self.last}")
            self.take()
            return found
        raise self.fail(f"{expected} (a string, number, true, false or nil)", token)

    def string(self, token: _Token) -> str:
        try:
            return json.loads(token.text)
        except json.JSONDecodeError as error:
            message = f"invalid string {token}: {error.msg}"
            raise ShorthandError(message, token.column, "a JSON string") from None
