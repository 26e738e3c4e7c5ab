"""``from_data``: Malli-lite schema data (keyword strings and lists) -> ``Schema``.

Data is written the way Malli writes it, with keywords as strings that start with a colon:
``[":map", ["count", ":int"], ["email", {"optional": True}, [":maybe", ":string"]]]``.

- Map keys may be given as ``"count"`` or ``":count"`` (both mean the key ``count``); property
  maps take ``optional`` / ``default``, with or without the colon.
- ``:cat`` parameters are named with bare strings (``["query", ":string"]``), so that a name is
  never mistaken for a schema keyword.
- Enum values written as keywords (``":low"``) are the strings without the colon (``"low"``): JSON
  has no keywords.
- ``":map"`` alone is an open map of anything (``[:map-of :keyword :any]``), as in shorthand;
  ``[":map"]`` is a map with no declared keys. ``":float"`` and ``":bool"`` are accepted aliases.
- A parsed ``Schema`` may appear anywhere in the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envkit.schema.issues import show
from envkit.schema.nodes import (
    ALIASES,
    ANY_MAP,
    ARGUMENTS,
    PRIMITIVES,
    UNSUPPORTED,
    Entry,
    Scalar,
    Schema,
    SchemaError,
    make_entry,
    nearest,
)

__all__ = ["from_data"]


def from_data(data: Any) -> Schema:
    """The ``Schema`` for Malli-lite ``data``, or a ``SchemaError`` naming what is wrong.

    Example:
        >>> from_data([":vector", ":int"]) == Schema("vector", (Schema("int"),))
        True
    """
    return _build(data, ())


def _build(data: Any, stack: tuple[int, ...]) -> Schema:
    if isinstance(data, Schema):
        return data
    if isinstance(data, str):
        return _keyword(data)
    if isinstance(data, (list, tuple)):
        if id(data) in stack:
            raise SchemaError(
                "recursive schemas are not supported: this schema data contains itself"
            )
        return _form(data, (*stack, id(data)))
    raise SchemaError(
        f"expected a schema (a keyword like ':int' or a list like [':vector', ':int']), "
        f"got {show(data)}"
    )


def _name(keyword: Any, where: str) -> str:
    """A keyword's name (``":int"`` -> ``"int"``, aliases resolved); anything else is an error."""
    if not isinstance(keyword, str) or not keyword.startswith(":") or len(keyword) < 2:
        raise SchemaError(f"expected a keyword like ':int' {where}, got {show(keyword)}")
    name = keyword[1:]
    return ALIASES.get(name, name)


def _keyword(text: str) -> Schema:
    name = _name(text, "as a schema")
    if name in PRIMITIVES:
        return Schema(name)
    if name == "map":
        return ANY_MAP
    if name in ARGUMENTS:
        raise SchemaError(f"':{name}' needs its arguments in a list: [':{name}', ...]")
    raise SchemaError(nearest(name))


def _form(items: list[Any] | tuple[Any, ...], stack: tuple[int, ...]) -> Schema:
    if not items:
        raise SchemaError("an empty list is not a schema")
    name = _name(items[0], "at the start of a schema list")
    args = list(items[1:])
    if name in UNSUPPORTED or (name not in PRIMITIVES and name not in ARGUMENTS):
        raise SchemaError(nearest(name))
    if args and isinstance(args[0], Mapping):
        if args[0]:
            raise SchemaError(f"properties on :{name} are not supported: {show(args[0])}")
        args = args[1:]
    reads = ARGUMENTS.get(name)
    if reads is None and args:
        raise SchemaError(f":{name} takes no arguments, got {show(args)}")
    if reads == "schemas":
        return Schema(name, children=tuple(_build(arg, stack) for arg in args))
    if reads == "literals":
        return Schema(name, values=tuple(_literal(arg) for arg in args))
    if reads == "entries":
        read = _map_entry if name == "map" else _param
        return Schema(name, entries=tuple(read(arg, stack) for arg in args))
    return Schema(name)


def _literal(value: Any) -> Scalar:
    if isinstance(value, str) and value.startswith(":") and len(value) > 1:
        return value[1:]
    return value


def _map_entry(item: Any, stack: tuple[int, ...]) -> Entry:
    if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
        raise SchemaError(
            f"a :map entry is [key, schema] or [key, properties, schema], got {show(item)}"
        )
    key = item[0]
    if not isinstance(key, str):
        raise SchemaError(f"a :map key must be a string, got {show(key)}")
    key = key[1:] if key.startswith(":") and len(key) > 1 else key
    return _entry(key, item, stack)


def _param(item: Any, stack: tuple[int, ...]) -> Entry:
    named = (
        isinstance(item, (list, tuple))
        and len(item) in (2, 3)
        and isinstance(item[0], str)
        and not item[0].startswith(":")
    )
    return _entry(item[0], item, stack) if named else Entry(None, _build(item, stack))


def _entry(key: str, item: list[Any] | tuple[Any, ...], stack: tuple[int, ...]) -> Entry:
    properties = item[1] if len(item) == 3 else None
    if properties is not None and not isinstance(properties, Mapping):
        raise SchemaError(f"the properties of {show(key)} must be a map, got {show(properties)}")
    return make_entry(key, _build(item[-1], stack), properties)
