"""``to_json_schema`` and ``tool_definition``: a schema as JSON Schema (Draft 2020-12).

A function's JSON Schema is its parameters as an object (a tool's "parameters"); any other schema
is converted as it is. Every object is closed (``additionalProperties: false``), so the ``plain``
flavor accepts exactly what ``validate(..., mode="strict", direction="output")`` accepts, except:

- JSON Schema's "integer" takes 1.0, ``:int`` does not (a Python float is a double).
- A root ``:cat`` takes a dict (named parameters) or a list in ``validate``, one of them here.
- ``:map`` keys given as ``":count"`` are only read as ``count`` in the input direction anyway.

Flavors:

- ``plain`` and ``anthropic``: optional and defaulted keys are not required (a default is written
  as ``default``); ``[:map-of K V]`` is an object with ``additionalProperties: V`` (and
  ``propertyNames: K`` unless K is any string); sets have ``uniqueItems``; tuples ``prefixItems``
  with ``items: false``; refinements are ``minimum`` / ``exclusiveMinimum`` / ... / ``pattern``.
- ``openai-strict`` (Structured Outputs): every property is required, an optional one as
  ``anyOf: [T, {"type": "null"}]`` (so the model sends null for "absent"); ``[:map-of K V]`` is an
  array of ``{"key": K, "value": V}`` objects, since strict mode forbids open maps; no
  ``uniqueItems`` or ``default``; ``[:and ...]`` must merge into one schema (a type and its
  refinements), as strict mode has no ``allOf``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from envkit.schema.nodes import PRIMITIVES, Schema, SchemaError
from envkit.schema.renderer import inline
from envkit.schema.signature import Signature, parse

__all__ = ["DRAFT_2020_12", "Flavor", "ToolFlavor", "to_json_schema", "tool_definition"]

Flavor = Literal["plain", "anthropic", "openai-strict"]
ToolFlavor = Literal["anthropic", "openai-strict"]
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_PRIMITIVES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "keyword": {"type": "string"},
    "int": {"type": "integer"},
    "double": {"type": "number"},
    "boolean": {"type": "boolean"},
    "nil": {"type": "null"},
    "any": {},
}
_BOUNDS = {">": "exclusiveMinimum", "<": "exclusiveMaximum", ">=": "minimum", "<=": "maximum"}
_NULL = {"type": "null"}


def to_json_schema(schema: Signature, *, flavor: Flavor = "plain") -> dict[str, Any]:
    """JSON Schema for ``schema`` (a function: its parameters), with ``$schema`` at the root.

    Example:
        >>> fn = "(query :string, limit :int?) -> :any"
        >>> to_json_schema(fn)["required"], to_json_schema(fn, flavor="openai-strict")["required"]
        (['query'], ['query', 'limit'])
    """
    if flavor not in ("plain", "anthropic", "openai-strict"):
        raise ValueError(f"flavor must be plain, anthropic or openai-strict; got {flavor!r}")
    schema = parse(schema)
    if schema.kind == "=>":
        schema = schema.params
        if schema.entries and schema.entries[0].key is None:
            raise SchemaError(
                "a function's parameters need names to be a JSON Schema object: "
                "[:cat [query :string] ...]"
            )
    return {"$schema": DRAFT_2020_12, **_convert(schema, flavor == "openai-strict")}


def tool_definition(
    schema: Signature, name: str, description: str, *, flavor: ToolFlavor = "openai-strict"
) -> dict[str, Any]:
    """The tool a chat API offers for a function schema (its parameters, without ``$schema``).

    OpenAI: ``{"type": "function", "function": {"name", "description", "parameters", "strict":
    true}}``; Anthropic: ``{"name", "description", "input_schema"}``.
    """
    if flavor not in ("anthropic", "openai-strict"):
        raise ValueError(
            f"a tool definition's flavor is anthropic or openai-strict, got {flavor!r}"
        )
    schema = parse(schema)
    if schema.kind != "=>":
        raise SchemaError(
            f"a tool needs a function schema [:=> [:cat ...] R], got {inline(schema)}"
        )
    parameters = to_json_schema(schema, flavor=flavor)
    del parameters["$schema"]
    if flavor == "anthropic":
        return {"name": name, "description": description, "input_schema": parameters}
    function = {"name": name, "description": description, "parameters": parameters, "strict": True}
    return {"type": "function", "function": function}


def _convert(schema: Schema, strict: bool) -> dict[str, Any]:
    kind, children = schema.kind, schema.children
    if kind in PRIMITIVES:
        return dict(_PRIMITIVES[kind])
    if kind in ("vector", "sequential", "set"):
        array = {"type": "array", "items": _convert(children[0], strict)}
        return {**array, "uniqueItems": True} if kind == "set" and not strict else array
    if kind == "tuple":
        items = [_convert(child, strict) for child in children]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    if kind in ("map", "cat") and (not schema.entries or schema.entries[0].key is not None):
        return _object(schema, strict)
    if kind == "cat":
        items = [_convert(entry.schema, strict) for entry in schema.entries]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    if kind == "map-of":
        return _map_of(schema, strict)
    if kind == "enum":
        return {"enum": list(schema.values)}
    if kind == "maybe":
        return {"anyOf": [_convert(children[0], strict), dict(_NULL)]}
    if kind == "or":
        return {"anyOf": [_convert(child, strict) for child in children]}
    if kind == "and":
        return _all_of(schema, strict)
    if kind == "re":
        return {"type": "string", "pattern": schema.values[0]}
    return {"type": "number", _BOUNDS[kind]: schema.values[0]}


def _object(schema: Schema, strict: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for entry in schema.entries:
        assert entry.key is not None  # unnamed parameters are an array (see _convert)
        prop = _convert(entry.schema, strict)
        if strict:
            if entry.optional and entry.schema.kind not in ("maybe", "nil", "any"):
                prop = {"anyOf": [prop, dict(_NULL)]}
            required.append(entry.key)
        else:
            if entry.default is not None:
                prop["default"] = json.loads(entry.default)
            if not entry.optional and entry.default is None:
                required.append(entry.key)
        properties[entry.key] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _map_of(schema: Schema, strict: bool) -> dict[str, Any]:
    keys, values = (_convert(child, strict) for child in schema.children)
    if strict:
        pair = {
            "type": "object",
            "properties": {"key": keys, "value": values},
            "required": ["key", "value"],
            "additionalProperties": False,
        }
        return {"type": "array", "items": pair}
    result: dict[str, Any] = {"type": "object", "additionalProperties": values}
    if keys not in ({}, {"type": "string"}):
        result["propertyNames"] = keys
    return result


def _all_of(schema: Schema, strict: bool) -> dict[str, Any]:
    """One schema when the parts' keywords do not clash (``{"type": "integer", "minimum": 0}``),
    else ``allOf``."""
    parts = [_convert(child, strict) for child in schema.children]
    merged: dict[str, Any] = {}
    for part in parts:
        for keyword, value in part.items():
            if keyword not in merged or merged[keyword] == value:
                merged[keyword] = value
            elif keyword == "type" and {merged[keyword], value} == {"integer", "number"}:
                merged[keyword] = "integer"
            elif strict:
                raise SchemaError(
                    f"openai-strict has no allOf, and the parts of {inline(schema)} do not merge "
                    f"into one schema (both set {keyword!r})"
                )
            else:
                return {"allOf": parts}
    return merged
