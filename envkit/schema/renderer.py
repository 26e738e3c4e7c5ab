"""``render``: a schema as shorthand, the form LLM prompts show; ``inline``: as a part of one.

- A function: ``search(query :string, limit :int?) -> [{id :int, title :string}]`` with a name,
  ``(query :string, limit :int?) -> ...`` without.
- Shorthand where it can say it, Malli forms where it cannot (``[:enum "a" "b"]``, ``[:and :int
  [:> 0]]``, ``[:map-of :string :int]``, an entry with properties ``[:map [n {:default 0} :int]]``).
  ``:double`` and ``:boolean`` keep their Malli names.
- The result always parses back to an equal schema: ``parse(render(s)) == s``. That is why a map at
  the root is written ``[:map [k T] ...]`` (``{...}`` alone reads as a return-only function), and
  a function whose parameters shorthand cannot write (unnamed, with defaults, optional but not
  nullable) as ``[:=> [:cat ...] R]``.
"""

from __future__ import annotations

import json
from typing import Any

from envkit.schema.issues import format_path
from envkit.schema.nodes import ANY_MAP, PRIMITIVES, Entry, Schema
from envkit.schema.signature import Signature, parse

__all__ = ["inline", "render"]


def render(schema: Signature, *, name: str | None = None) -> str:
    """``schema`` as shorthand; ``name`` goes before a function's parameter list.

    Any other schema with a name is written ``name <type>``.

    Example:
        >>> render("(query :string, limit :int) -> [{id :int, title :string}]", name="search")
        'search(query :string, limit :int) -> [{id :int, title :string}]'
        >>> render([":map", ["status", [":enum", "pending", "active"]]])
        '[:map [status [:enum "pending" "active"]]]'
    """
    schema = parse(schema)
    if schema.kind == "=>":
        params, returns = schema.children
        if all(entry.key is not None and _plain(entry) for entry in params.entries):
            fields = ", ".join(_field(entry) for entry in params.entries)
            return f"{name or ''}({fields}) -> {inline(returns)}"
        text = f"[:=> {inline(params)} {inline(returns)}]"
    else:
        text = _map_form(schema) if schema.kind == "map" else inline(schema)
    return f"{name} {text}" if name else text


def inline(schema: Schema) -> str:
    """``schema`` as written inside another one (a map is ``{...}`` there), as messages show it."""
    kind, children = schema.kind, schema.children
    if kind in PRIMITIVES:
        return f":{kind}"
    if kind == "vector":
        return f"[{inline(children[0])}]"
    if kind == "maybe":
        return f"{inline(children[0])}?"
    if kind == "map-of" and schema == ANY_MAP:
        return ":map"
    if kind == "map":
        if all(_plain(entry) for entry in schema.entries):
            return "{" + ", ".join(_field(entry) for entry in schema.entries) + "}"
        return _map_form(schema)
    if kind == "cat":
        items = [inline(e.schema) if e.key is None else _entry_form(e) for e in schema.entries]
        return _form("cat", items)
    if schema.values:
        return _form(kind, [_literal(value) for value in schema.values])
    return _form(kind, [inline(child) for child in children])


def _form(kind: str, items: list[str]) -> str:
    return f"[:{kind}{''.join(' ' + item for item in items)}]"


def _map_form(schema: Schema) -> str:
    """``[:map [k T] ...]``; with no keys ``[:map {}]`` (``[:map]`` is a vector of maps)."""
    return _form("map", [_entry_form(entry) for entry in schema.entries] or ["{}"])


def _plain(entry: Entry) -> bool:
    """Whether shorthand can write the entry as ``key T`` (optional ones as ``key T?``)."""
    return entry.default is None and (not entry.optional or entry.schema.kind == "maybe")


def _field(entry: Entry) -> str:
    return f"{_key(entry.key)} {_entry_type(entry)}"


def _entry_type(entry: Entry) -> str:
    """The type of an entry; a trailing ``?`` there marks it optional, so a required
    ``[:maybe T]`` keeps its Malli form."""
    schema = entry.schema
    if schema.kind != "maybe":
        return inline(schema)
    inner = inline(schema.children[0])
    return f"{inner}?" if entry.optional else f"[:maybe {inner}]"


def _entry_form(entry: Entry) -> str:
    properties = []
    if entry.optional and entry.schema.kind != "maybe":
        properties.append(":optional true")
    if entry.default is not None:
        properties.append(f":default {_literal(json.loads(entry.default))}")
    braces = f" {{{' '.join(properties)}}}" if properties else ""
    return f"[{_key(entry.key)}{braces} {_entry_type(entry)}]"


def _key(key: str | None) -> str:
    """A plain name as it is, any other key as a JSON string (the same rule as paths)."""
    path = format_path((key,))
    return path if not path.startswith("[") else json.dumps(key, ensure_ascii=False)


def _literal(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + " ".join(_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{json.dumps(k, ensure_ascii=False)} {_literal(v)}" for k, v in value.items())
        return "{" + " ".join(pairs) + "}"
    return json.dumps(value, ensure_ascii=False)
