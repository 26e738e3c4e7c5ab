"""The schema tree: one immutable node type for every Malli-lite construct.

- ``Schema``: a node, ``kind`` (the keyword without its colon: ``"int"``, ``"map"``, ``"=>"``) plus
  its ``children``, ``entries`` or literal ``values``. The constructor checks arity and shape, so
  every ``Schema`` that exists is valid, whichever parser built it.
- ``Entry``: a ``:map`` key or a ``:cat`` parameter, with ``optional`` and its default.
- ``make_entry``: an ``Entry`` from Malli properties (``{:optional true}``, ``{:default 0}``).
- ``SchemaError`` (bad schema data, unsupported features) and ``ShorthandError`` (a shorthand parse
  error, with its 1-based ``column`` and what was ``expected`` there).
- The keyword tables both parsers share: ``PRIMITIVES``, ``ALIASES``, ``ARGUMENTS`` (how each
  compound form reads its arguments), ``UNSUPPORTED``, ``ANY_MAP``; ``nearest`` and ``suggest``
  (what is wrong with an unknown keyword, and the known one it was probably meant to be).

``:=>`` may only be the root, and ``:cat`` only the root or a function's parameters: Malli splices
nested ``:cat`` sequences, which this subset does not do.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envkit.schema.issues import show

__all__ = [
    "ALIASES",
    "ANY_MAP",
    "ARGUMENTS",
    "PRIMITIVES",
    "UNSUPPORTED",
    "Entry",
    "Scalar",
    "Schema",
    "SchemaError",
    "ShorthandError",
    "make_entry",
    "nearest",
    "suggest",
]

Scalar = str | int | float | bool | None

PRIMITIVES = frozenset({"string", "int", "double", "boolean", "keyword", "any", "nil"})
ALIASES = {"float": "double", "bool": "boolean"}
REFINEMENTS = frozenset({">", "<", ">=", "<="})
# How each compound form reads its arguments: schemas, literal values, or entries.
ARGUMENTS = {
    **dict.fromkeys(("vector", "sequential", "set", "maybe", "map-of"), "schemas"),
    **dict.fromkeys(("tuple", "or", "and", "=>"), "schemas"),
    **dict.fromkeys(("enum", "re", *REFINEMENTS), "literals"),
    **dict.fromkeys(("map", "cat"), "entries"),
}
_ARITY = {"vector": 1, "sequential": 1, "set": 1, "maybe": 1, "map-of": 2, "=>": 2}
UNSUPPORTED = {
    "ref": "schema references need a registry, and recursive schemas are out of scope",
    "schema": "registries and recursive schemas are out of scope",
    "multi": "multi-schemas are out of scope; use [:or ...]",
    "catn": "name :cat parameters instead: [:cat [query :string]]",
    "orn": "use [:or ...]",
    "fn": "custom validators are out of scope; use a refinement such as [:> 0] or [:re ...]",
    "not": "negation is out of scope",
    "merge": "write the merged [:map ...]",
    "union": "write the merged [:map ...]",
}
_KNOWN = sorted(PRIMITIVES | set(ALIASES) | set(ARGUMENTS))


class SchemaError(ValueError):
    """Schema data that is malformed, or uses a construct this subset does not support."""


class ShorthandError(SchemaError):
    """A shorthand signature that does not parse: where (1-based column) and what was expected."""

    def __init__(self, message: str, column: int, expected: str) -> None:
        super().__init__(f"column {column}: {message}")
        self.column = column
        self.expected = expected


def nearest(name: str) -> str:
    """Why keyword ``name`` is refused: unsupported (and why), or unknown (and the nearest one)."""
    if name in UNSUPPORTED:
        return f"':{name}' is not supported: {UNSUPPORTED[name]}"
    return f"unknown schema ':{name}'{suggest(name)}"


def suggest(name: str) -> str:
    """``"; did you mean ':int'?"`` for the known keyword nearest to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, _KNOWN, n=1)
    return f"; did you mean ':{close[0]}'?" if close else ""


@dataclass(frozen=True)
class Entry:
    """A ``:map`` key or a ``:cat`` parameter (``key`` None: an unnamed positional parameter).

    ``default`` is the default as JSON text, so an entry stays immutable and hashable; it is
    filled in for a missing key, which then needs no ``optional``.

    Example:
        >>> from envkit.schema import parse
        >>> params = parse("(query :string, limit :int?) -> :any").params
        >>> [(entry.key, entry.optional) for entry in params.entries]
        [('query', False), ('limit', True)]
        >>> [entry] = parse([":map", ["limit", {":default": 10}, ":int"]]).entries
        >>> entry.default
        '10'
    """

    key: str | None
    schema: Schema
    optional: bool = False
    default: str | None = None


def make_entry(
    key: str | None,
    schema: Schema,
    properties: Mapping[Any, Any] | None = None,
    *,
    question: bool = False,
) -> Entry:
    """An entry from Malli properties; ``question``: written ``name :type?`` (optional)."""
    optional, default = question, None
    for name, value in (properties or {}).items():
        bare = name[1:] if isinstance(name, str) and name.startswith(":") else name
        if bare == "optional" and isinstance(value, bool):
            optional = optional or value
        elif bare == "optional":
            raise SchemaError(f"{{:optional ...}} takes true or false, got {show(value)}")
        elif bare == "default":
            try:
                default = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                raise SchemaError(f"a default must be JSON data, got {show(value)}") from None
        else:
            raise SchemaError(f"property {show(name)} is not supported: only :optional, :default")
    return Entry(key, schema, optional, default)


@dataclass(frozen=True)
class Schema:
    """One schema node; see the module docstring. Equal schemas compare and hash equal.

    Example:
        >>> Schema("vector", (Schema("int"),)) == Schema("vector", (Schema("int"),))
        True
        >>> Schema("enum", values=(1,)) == Schema("enum", values=(True,))
        False
    """

    kind: str
    children: tuple[Schema, ...] = ()
    entries: tuple[Entry, ...] = ()
    values: tuple[Scalar, ...] = field(default=(), compare=False)
    # The values with their types, so that [:enum 1] and [:enum true] differ (1 == True in Python).
    _typed_values: tuple[tuple[str, Scalar], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        typed = tuple((type(value).__name__, value) for value in self.values)
        object.__setattr__(self, "_typed_values", typed)
        _check(self)

    @property
    def params(self) -> Schema:
        """A function's parameters (a ``:cat``)."""
        return self._function_part(0)

    @property
    def returns(self) -> Schema:
        """A function's return schema."""
        return self._function_part(1)

    def _function_part(self, index: int) -> Schema:
        if self.kind != "=>":
            raise SchemaError(f"a :{self.kind} schema is not a function schema [:=> ...]")
        return self.children[index]


def _check(node: Schema) -> None:
    """Raise ``SchemaError`` unless ``node`` is a well-formed node of its kind."""
    kind, form = node.kind, f"[:{node.kind} ...]"
    if kind not in PRIMITIVES and kind not in ARGUMENTS:
        raise SchemaError(nearest(kind))
    reads = ARGUMENTS.get(kind)
    if node.children and reads != "schemas":
        raise SchemaError(f":{kind} takes no schemas")
    if node.entries and reads != "entries":
        raise SchemaError(f":{kind} takes no entries")
    if node.values and reads != "literals":
        raise SchemaError(f":{kind} takes no literal values")
    arity = _ARITY.get(kind)
    if arity is not None and len(node.children) != arity:
        raise SchemaError(f"{form} takes {arity} schema(s), got {len(node.children)}")
    if kind in ("tuple", "or", "and") and not node.children:
        raise SchemaError(f"{form} needs at least one schema")
    for child in [*node.children, *(entry.schema for entry in node.entries)]:
        if not isinstance(child, Schema):
            raise SchemaError(f"{form} holds {show(child)}, which is not a Schema")
    nested = node.children[1:] if kind == "=>" else node.children
    for child in [*nested, *(entry.schema for entry in node.entries)]:
        if child.kind in ("=>", "cat"):
            raise SchemaError(
                f"a function schema [:=> ...] may only be the root, and [:cat ...] only the root "
                f"or a function's parameters; found [:{child.kind} ...] inside {form}"
            )
    if kind == "=>" and node.children[0].kind != "cat":
        raise SchemaError(f"[:=> params returns] takes a [:cat ...], got :{node.children[0].kind}")
    if reads == "literals":
        _check_literals(kind, node.values)
    elif kind == "map":
        _check_keys([entry.key for entry in node.entries], "key")
    elif kind == "cat":
        _check_params(node.entries)


def _check_literals(kind: str, values: tuple[Scalar, ...]) -> None:
    for value in values:
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise SchemaError(
                f"[:{kind} ...] takes strings, numbers, booleans or nil, got {show(value)}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise SchemaError(f"[:{kind} ...] takes finite numbers, got {value}")
    if kind == "enum" and not values:
        raise SchemaError("[:enum ...] needs at least one value")
    if kind == "re":
        if len(values) != 1 or not isinstance(values[0], str):
            raise SchemaError(f"[:re pattern] takes one string, got {show(list(values))}")
        try:
            re.compile(values[0])
        except re.error as error:
            raise SchemaError(f"[:re {show(values[0])}] is not a valid regex: {error}") from None
    if kind in REFINEMENTS and (
        len(values) != 1 or isinstance(values[0], (bool, str)) or values[0] is None
    ):
        raise SchemaError(f"[:{kind} n] takes one number, got {show(list(values))}")


def _check_keys(keys: list[str | None], what: str) -> None:
    seen: set[str] = set()
    for key in keys:
        if not isinstance(key, str):
            raise SchemaError(f"a {what} must be a string, got {show(key)}")
        if key in seen:
            raise SchemaError(f"{what} {show(key)} is given twice")
        seen.add(key)


def _check_params(entries: tuple[Entry, ...]) -> None:
    names = [entry.key for entry in entries]
    if any(name is None for name in names) and any(name is not None for name in names):
        raise SchemaError("[:cat ...] parameters are either all named or all unnamed")
    if names and names[0] is not None:
        _check_keys(names, "parameter")
    elif any(entry.optional or entry.default is not None for entry in entries):
        raise SchemaError("only named [:cat ...] parameters can be optional or have defaults")
    skippable = None  # the first parameter a positional call may leave out
    for entry in entries:
        if entry.optional or entry.default is not None:
            skippable = skippable or entry
        elif skippable is not None:
            raise SchemaError(
                f"required parameter {show(entry.key)} cannot follow optional "
                f"{show(skippable.key)}: positional calls would be ambiguous"
            )


ANY_MAP = Schema("map-of", (Schema("keyword"), Schema("any")))  # shorthand's bare :map
