"""Malli-lite: typed tool signatures for LLM agents, validated by a small hand-written validator.

Hand-written because the coercion rules are narrow on purpose: pydantic's lax mode accepts far
more ("42.0" -> 42, "yes" -> True) and never reports a coercion as a warning, msgspec stops at
the first error and jsonschema does not coerce.

- ``parse(signature) -> Schema``: shorthand (``"(query :string, limit :int) -> {count :int}"``),
  Malli-lite data (``[":map", ["count", ":int"]]``) or a ``Schema``.
- ``validate(schema, data, *, mode, direction) -> ValidationResult``: the coerced ``value``, every
  ``error`` and ``warning`` as an ``Issue`` (``path: message``, with its ``loc`` and ``kind``),
  and ``ok``.
- ``render(schema, *, name=None) -> str``: the shorthand shown in prompts.
- ``to_json_schema(schema, *, flavor)`` and ``tool_definition(schema, name, description, *,
  flavor)``: JSON Schema Draft 2020-12, for OpenAI (strict) and Anthropic tools.
- ``Schema`` (one immutable node type), ``Entry``, ``SchemaError``, ``ShorthandError``.

Example:
    >>> fn = parse("(query :string, limit :int) -> [{id :int, title :string}]")
    >>> render(fn, name="search")
    'search(query :string, limit :int) -> [{id :int, title :string}]'
    >>> [str(issue) for issue in validate(fn, {"query": "q", "limit": "ten"}).errors]
    ['limit: expected int, got string "ten"']
"""

from __future__ import annotations

from envkit.schema.issues import Issue, IssueKind, Mode, ValidationResult
from envkit.schema.json_schema import Flavor, ToolFlavor, to_json_schema, tool_definition
from envkit.schema.nodes import Entry, Schema, SchemaError, ShorthandError
from envkit.schema.renderer import render
from envkit.schema.signature import Signature, parse
from envkit.schema.validator import Direction, validate

__all__ = [
    "Direction",
    "Entry",
    "Flavor",
    "Issue",
    "IssueKind",
    "Mode",
    "Schema",
    "SchemaError",
    "ShorthandError",
    "Signature",
    "ToolFlavor",
    "ValidationResult",
    "parse",
    "render",
    "to_json_schema",
    "tool_definition",
    "validate",
]
