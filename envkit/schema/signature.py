"""``parse``: any way of writing a schema -> ``Schema``.

- ``parse(signature)``: a shorthand string (``"(query :string) -> {count :int}"``), Malli-lite
  data (``[":=>", [":cat", ["query", ":string"]], [":map", ["count", ":int"]]]``) or a ``Schema``
  (returned as it is).
- ``Signature``: the type of what ``parse`` accepts; ``validate``, ``render`` and
  ``to_json_schema`` accept it too.
"""

from __future__ import annotations

from typing import Any

from envkit.schema.data import from_data
from envkit.schema.issues import show
from envkit.schema.nodes import Schema, SchemaError
from envkit.schema.shorthand import parse_shorthand

__all__ = ["Signature", "parse"]

Signature = Schema | str | list[Any] | tuple[Any, ...]


def parse(signature: Signature) -> Schema:
    """The ``Schema`` for a shorthand string, Malli-lite data or an already parsed ``Schema``.

    Example:
        >>> data = [":=>", [":cat", ["query", ":string"]], [":map", [":count", ":int"]]]
        >>> parse("(query :string) -> {count :int}") == parse(data)
        True
    """
    if isinstance(signature, Schema):
        return signature
    if isinstance(signature, str):
        return parse_shorthand(signature)
    if isinstance(signature, (list, tuple)):
        return from_data(signature)
    raise SchemaError(
        f"expected a shorthand string, Malli-lite data or a Schema, got {show(signature)}"
    )
