"""What validation reports, and how values and paths are written in its messages.

- ``Issue``: one error or warning, ``path: message`` (``results[0].customer.id: expected int, got
  string "abc"``), with ``loc``, the path's steps (``("results", 0, "customer", "id")``), and
  ``kind``, a word a program can branch on (``Issue.at(loc, message, kind)`` makes one).
- ``IssueKind`` and ``ISSUE_KINDS``, the closed set of kinds: ``missing`` (a required key or
  item), ``unexpected`` (a key a closed map does not declare, an item past the last parameter),
  ``duplicate`` (a set item, a key given twice), ``enum`` (not a listed value), ``type`` (the
  wrong type, or no ``:or`` alternative matched), ``bound`` (a number past ``:>``, ``:<``, ``:>=``
  or ``:<=``), ``size`` (a tuple of the wrong length), ``pattern`` (a string ``:re`` does not
  find), ``coerced`` (a warning: a string read as the type asked for), and ``invalid``, the
  default for an issue made without one. A map-of key's issue keeps its kind.
- ``ValidationResult``: the coerced value, every error and warning, and ``ok`` (which honours the
  mode: ``warn_only`` and ``disabled`` are ok whatever the errors).
- ``Mode``: ``enabled`` | ``warn_only`` | ``strict`` | ``disabled``.
- ``format_path``: ``("results", 0, "id")`` -> ``results[0].id``. The root is ``(root)``; a key
  that is not a plain name (``[A-Za-z_][A-Za-z0-9_-]*``) is JSON-quoted in brackets
  (``meta["first name"]``), so a path reads back unambiguously (for JSON data: a non-string key,
  which only Python data has, is written as its JSON in brackets, an int like an index).
- ``show``, ``got`` and ``type_name``: values as messages show them, JSON-rendered and cut to
  ``LIMIT`` (60) characters, the last one "…".
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = [
    "ISSUE_KINDS",
    "LIMIT",
    "ROOT",
    "Issue",
    "IssueKind",
    "Mode",
    "ValidationResult",
    "clip",
    "format_path",
    "got",
    "show",
    "type_name",
]

Mode = Literal["enabled", "warn_only", "strict", "disabled"]
IssueKind = Literal[
    "missing",
    "unexpected",
    "duplicate",
    "enum",
    "type",
    "bound",
    "size",
    "pattern",
    "coerced",
    "invalid",
]
ISSUE_KINDS: tuple[IssueKind, ...] = get_args(IssueKind)
ROOT = "(root)"
LIMIT = 60
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem (or, as a warning, one coercion) at one place in the data.

    ``path`` is ``loc`` as messages write it; both are kept so that a program never has to read
    the text back (a key of Python data need not survive ``format_path``). A key in ``loc`` is as
    the data gave it: a str for JSON, any hashable for Python data.

    Example:
        >>> issue = Issue.at(("results", 0, "id"), "missing required key", "missing")
        >>> str(issue), issue.kind
        ('results[0].id: missing required key', 'missing')
    """

    path: str
    message: str
    loc: tuple[Hashable, ...] = ()
    kind: IssueKind = "invalid"

    @classmethod
    def at(cls, loc: tuple[Hashable, ...], message: str, kind: IssueKind) -> Issue:
        """The issue at ``loc``, its ``path`` written by ``format_path``."""
        return cls(format_path(loc), message, loc, kind)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ValidationResult:
    """The outcome of ``validate``: ``value`` is the data as coerced (containers rebuilt).

    Example:
        >>> from envkit.schema import validate
        >>> result = validate("(limit :int) -> :any", {"limit": "ten"}, mode="warn_only")
        >>> result.ok, [str(error) for error in result.errors]
        (True, ['limit: expected int, got string "ten"'])
    """

    value: Any
    errors: list[Issue]
    warnings: list[Issue]
    mode: Mode = "enabled"

    @property
    def ok(self) -> bool:
        """No errors, or a mode that lets them pass (``warn_only`` still lists them)."""
        return self.mode in ("warn_only", "disabled") or not self.errors


def format_path(steps: Sequence[Any]) -> str:
    """A path as messages write it: keys with dots, indices in brackets.

    Example:
        >>> format_path(("results", 0, "customer", "first name"))
        'results[0].customer["first name"]'
        >>> format_path(())
        '(root)'
    """
    text = ""
    for step in steps:
        if isinstance(step, str) and _NAME.fullmatch(step):
            text += f".{step}" if text else step
        elif isinstance(step, int) and not isinstance(step, bool):
            text += f"[{step}]"
        else:
            text += f"[{show(step, limit=None)}]"
    return text or ROOT


def clip(text: str, limit: int | None = LIMIT) -> str:
    """``text`` cut to ``limit`` characters, ending in "…" when cut."""
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def show(value: Any, *, limit: int | None = LIMIT) -> str:
    """``value`` as JSON (``repr`` for what JSON cannot hold), cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # non-string keys that JSON refuses, or a cycle
        text = repr(value)
    return clip(text, limit)


def type_name(value: Any) -> str:
    """The schema word for a value's type: int, double, string, boolean, nil, vector, map."""
    names = {bool: "boolean", int: "int", float: "double", str: "string", type(None): "nil"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, (list, tuple)):
        return "vector"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def got(value: Any) -> str:
    """The "got" part of a type mismatch: ``string "abc"``, ``int 5``, ``nil``."""
    return "nil" if value is None else f"{type_name(value)} {show(value)}"
