"""``validate``: data against a schema, every problem reported with its path.

Modes: ``enabled`` fails on errors and lets maps carry extra keys; ``warn_only`` checks the same
but is ``ok`` with errors (still listed); ``strict`` fails and also rejects extra map keys (closed
maps); ``disabled`` checks nothing and returns the data as it is.

Directions: ``input`` (tool calls) applies the coercions of ``envkit.schema.coercion``, each with a
warning (``limit: coerced string "10" to int``), passes ints as doubles (converted, silently) and
takes ``":count"`` for a map key ``count``. ``output`` (return values) never coerces: an int is
still a double, but unchanged.

For a function schema ``[:=> params returns]``, ``input`` validates the parameters (a dict by name
or a list by position) and ``output`` the return value. Defaults fill missing keys in both.
``[:or ...]`` takes the first alternative that passes, preferring one that needs no coercion;
``[:and ...]`` passes the value through each part in turn (so later parts see it coerced) and
reports every failing part.

Every issue carries the steps of its path (``loc``) and its kind (``envkit.schema.issues``): the
kind is given where the issue is found, never told from the message afterwards.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any, Literal, cast

from envkit.schema.coercion import to_boolean, to_double, to_int
from envkit.schema.issues import Issue, IssueKind, Mode, ValidationResult, clip, got, show
from envkit.schema.nodes import Entry, Schema
from envkit.schema.renderer import inline
from envkit.schema.signature import Signature, parse

__all__ = ["Direction", "validate"]

Direction = Literal["input", "output"]
Path = tuple[Any, ...]
_MODES = ("enabled", "warn_only", "strict", "disabled")
_COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


def validate(
    schema: Signature, data: Any, *, mode: Mode = "enabled", direction: Direction = "input"
) -> ValidationResult:
    """Check ``data`` against ``schema``, returning the coerced value and every error and warning.

    Example:
        >>> result = validate("(query :string, limit :int) -> :any", {"query": "x", "limit": "10"})
        >>> result.ok, result.value, [str(w) for w in result.warnings]
        (True, {'query': 'x', 'limit': 10}, ['limit: coerced string "10" to int'])
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if direction not in ("input", "output"):
        raise ValueError(f"direction must be 'input' or 'output', got {direction!r}")
    schema = parse(schema)
    if mode == "disabled":
        return ValidationResult(data, [], [], mode)
    if schema.kind == "=>":
        schema = schema.params if direction == "input" else schema.returns
    checker = _Checker(closed=mode == "strict", coerce=direction == "input")
    value = checker.check(schema, data, ())
    return ValidationResult(value, checker.errors, checker.warnings, mode)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_key(value: Any) -> Hashable:
    """Equality as JSON sees it: 1 == 1.0, but true is not 1 (for enums and sets)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if _is_number(value):
        return ("number", value)
    if isinstance(value, (list, tuple)):
        return ("vector", tuple(_json_key(item) for item in value))
    if isinstance(value, dict):
        return ("map", frozenset((_json_key(k), _json_key(v)) for k, v in value.items()))
    return ("object", id(value))


class _Checker:
    """One validation run: the settings and the issues found so far."""

    def __init__(self, *, closed: bool, coerce: bool) -> None:
        self.closed = closed
        self.coerce = coerce
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []

    def fork(self) -> _Checker:
        """A run with the same settings and no issues yet, to try an alternative."""
        return _Checker(closed=self.closed, coerce=self.coerce)

    def error(self, path: Path, message: str, kind: IssueKind) -> None:
        self.errors.append(Issue.at(path, message, kind))

    def mismatch(self, expected: str, value: Any, path: Path) -> Any:
        self.error(path, f"expected {expected}, got {got(value)}", "type")
        return value

    def coerced(self, value: str, result: Any, target: str, path: Path) -> Any:
        message = f"coerced string {show(value)} to {target}"
        self.warnings.append(Issue.at(path, message, "coerced"))
        return result

    def check(self, schema: Schema, value: Any, path: Path) -> Any:
        """``value`` as coerced, after recording what is wrong with it."""
        return _CHECKS[schema.kind](self, schema, value, path)

    # -- scalars ---------------------------------------------------------------------------

    def _any(self, schema: Schema, value: Any, path: Path) -> Any:
        return value

    def _nil(self, schema: Schema, value: Any, path: Path) -> Any:
        return value if value is None else self.mismatch("nil", value, path)

    def _string(self, schema: Schema, value: Any, path: Path) -> Any:
        return value if isinstance(value, str) else self.mismatch(schema.kind, value, path)

    def _int(self, schema: Schema, value: Any, path: Path) -> Any:
        if _is_int(value):
            return value
        if self.coerce and isinstance(value, str) and (number := to_int(value)) is not None:
            return self.coerced(value, number, "int", path)
        return self.mismatch("int", value, path)

    def _double(self, schema: Schema, value: Any, path: Path) -> Any:
        if isinstance(value, float):
            return value
        if _is_int(value):
            try:
                return float(value) if self.coerce else value
            except OverflowError:  # too large for a double: keep the exact int
                return value
        if self.coerce and isinstance(value, str) and (number := to_double(value)) is not None:
            return self.coerced(value, number, "double", path)
        return self.mismatch("double", value, path)

    def _boolean(self, schema: Schema, value: Any, path: Path) -> Any:
        if isinstance(value, bool):
            return value
        if self.coerce and isinstance(value, str) and (truth := to_boolean(value)) is not None:
            return self.coerced(value, truth, "boolean", path)
        return self.mismatch("boolean", value, path)

    # -- collections -----------------------------------------------------------------------

    def _sequence(self, schema: Schema, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)):
            return self.mismatch("set" if schema.kind == "set" else "vector", value, path)
        item = schema.children[0]
        items = [self.check(item, element, (*path, i)) for i, element in enumerate(value)]
        if schema.kind == "set":
            seen: set[Hashable] = set()
            for index, element in enumerate(items):
                key = _json_key(element)
                if key in seen:
                    message = f"duplicate item {show(element)} in a set"
                    self.error((*path, index), message, "duplicate")
                seen.add(key)
        return items

    def _tuple(self, schema: Schema, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)):
            return self.mismatch("tuple", value, path)
        size = len(schema.children)
        if len(value) != size:
            message = f"expected tuple of {_items(size)}, got {_items(len(value))}"
            self.error(path, message, "size")
        checked = zip(schema.children, value, strict=False)
        items = [self.check(item, element, (*path, i)) for i, (item, element) in enumerate(checked)]
        return items + list(value[size:])

    def _map(self, schema: Schema, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            return self.mismatch("map", value, path)
        return self.fields(schema.entries, value, path)

    def fields(self, entries: tuple[Entry, ...], value: dict[Any, Any], path: Path) -> Any:
        declared = {entry.key: entry for entry in entries}
        given_as: dict[str, Any] = {}  # declared key -> the key the data used for it
        result: dict[Any, Any] = {}
        for key, item in value.items():
            name = key
            if self.coerce and isinstance(key, str) and key.startswith(":") and key[1:] in declared:
                name = key[1:]
            entry = declared.get(name) if isinstance(name, str) else None
            if entry is None:
                if self.closed:
                    self.error((*path, key), "unexpected key", "unexpected")
                result[key] = item
            elif name in given_as:
                message = f"duplicate key (also given as {show(given_as[name])})"
                self.error((*path, key), message, "duplicate")
            else:
                given_as[name] = key
                result[name] = self.check(entry.schema, item, (*path, key))
        for entry in entries:
            if entry.key in given_as:
                continue
            if entry.default is not None:
                result[entry.key] = json.loads(entry.default)
            elif not entry.optional:
                self.error((*path, entry.key), "missing required key", "missing")
        return result

    def _map_of(self, schema: Schema, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            return self.mismatch("map", value, path)
        key_schema, value_schema = schema.children
        result: dict[Any, Any] = {}
        for key, item in value.items():
            trial = self.fork()
            new_key = trial.check(key_schema, key, (*path, key))
            self.errors += [_of_key(issue) for issue in trial.errors]
            self.warnings += [_of_key(issue) for issue in trial.warnings]
            if not isinstance(new_key, Hashable):  # a collection key schema: keep the key given
                new_key = key
            if new_key in result:
                message = f"duplicate key {show(new_key)} after coercion"
                self.error((*path, key), message, "duplicate")
            result[new_key] = self.check(value_schema, item, (*path, key))
        return result

    def _cat(self, schema: Schema, value: Any, path: Path) -> Any:
        """Parameters: a dict by name (named parameters) or a list by position."""
        entries = schema.entries
        named = not entries or entries[0].key is not None
        if isinstance(value, dict) and named:
            return self.fields(entries, value, path)
        if not isinstance(value, (list, tuple)):
            expected = "map or vector of parameters" if named else "vector of parameters"
            return self.mismatch(expected, value, path)
        result = []
        for index, entry in enumerate(entries):
            if index < len(value):
                result.append(self.check(entry.schema, value[index], (*path, index)))
            elif entry.default is not None:
                result.append(json.loads(entry.default))
            elif entry.optional:
                break  # no required one follows (see Schema); a later default has no position
            else:
                self.error((*path, index), "missing required item", "missing")
        for index in range(len(entries), len(value)):
            self.error((*path, index), "unexpected item", "unexpected")
            result.append(value[index])
        return result

    # -- composites and refinements --------------------------------------------------------

    def _enum(self, schema: Schema, value: Any, path: Path) -> Any:
        key = _json_key(value)
        if not any(key == _json_key(member) for member in schema.values):
            message = f"expected one of {show(list(schema.values))}, got {show(value)}"
            self.error(path, message, "enum")
        return value

    def _maybe(self, schema: Schema, value: Any, path: Path) -> Any:
        return None if value is None else self.check(schema.children[0], value, path)

    def _or(self, schema: Schema, value: Any, path: Path) -> Any:
        fallback: tuple[_Checker, Any] | None = None
        for alternative in schema.children:
            trial = self.fork()
            result = trial.check(alternative, value, path)
            if not trial.errors and not trial.warnings:
                return result
            if not trial.errors and fallback is None:
                fallback = trial, result
        if fallback is not None:
            self.warnings += fallback[0].warnings
            return fallback[1]
        alternatives = " | ".join(clip(inline(child)) for child in schema.children)
        self.error(path, f"expected {alternatives} (none matched), got {got(value)}", "type")
        return value

    def _and(self, schema: Schema, value: Any, path: Path) -> Any:
        for part in schema.children:
            value = self.check(part, value, path)
        return value

    def _bound(self, schema: Schema, value: Any, path: Path) -> Any:
        # A refinement holds exactly one number: the Schema constructor refuses anything else.
        limit = cast(float, schema.values[0])
        expected = f"a number {schema.kind} {show(limit)}"
        if not _is_number(value):
            return self.mismatch(expected, value, path)
        if not _COMPARE[schema.kind](value, limit):
            self.error(path, f"expected {expected}, got {show(value)}", "bound")
        return value

    def _re(self, schema: Schema, value: Any, path: Path) -> Any:
        (pattern,) = schema.values
        expected = f"a string matching {show(pattern)}"
        if not isinstance(value, str):
            return self.mismatch(expected, value, path)
        if re.search(str(pattern), value) is None:
            self.error(path, f"expected {expected}, got {show(value)}", "pattern")
        return value


def _of_key(issue: Issue) -> Issue:
    """A map-of key's issue: its place and kind as they were, its message marked as the key's."""
    return replace(issue, message=f"key: {issue.message}")


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


_CHECKS: dict[str, Callable[[_Checker, Schema, Any, Path], Any]] = {
    "any": _Checker._any,
    "nil": _Checker._nil,
    "string": _Checker._string,
    "keyword": _Checker._string,
    "int": _Checker._int,
    "double": _Checker._double,
    "boolean": _Checker._boolean,
    "vector": _Checker._sequence,
    "sequential": _Checker._sequence,
    "set": _Checker._sequence,
    "tuple": _Checker._tuple,
    "map": _Checker._map,
    "map-of": _Checker._map_of,
    "cat": _Checker._cat,
    "enum": _Checker._enum,
    "maybe": _Checker._maybe,
    "or": _Checker._or,
    "and": _Checker._and,
    ">": _Checker._bound,
    "<": _Checker._bound,
    ">=": _Checker._bound,
    "<=": _Checker._bound,
    "re": _Checker._re,
}
