"""JSON text of requests and messages: strict to read, fast both ways.

- ``loads``: refuses what is not JSON, and numbers JSON cannot hold: NaN and Infinity (not
  JSON) and numbers too large for a float (``1e309``, which Python reads as infinity), with a
  ``NonFiniteNumberError`` naming where; reports depth and digit limits as ``ValueError``, like
  every refusal of bad input here.
- ``dumps``: compact JSON text of a reply.

Both run pydantic-core's Rust JSON (a dependency already) and fall back to the ``json`` module
where the two differ: input Rust refuses that ``json`` reads (a lone surrogate, nesting past
Rust's depth limit; also every error, so that its message is ``json``'s, and the numbers it
refuses, so that the error names where they are), and text UTF-8 cannot encode (a lone
surrogate, which ``json`` escapes). Per WebSocket step that saves most of what ``json`` takes to
read a message and write its ~1 KB reply.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core

__all__ = ["NonFiniteNumberError", "dumps", "loads"]

Location = tuple[str | int, ...]


class NonFiniteNumberError(ValueError):
    """A number JSON cannot hold; ``loc`` is where, ``number`` its text, ``problem`` what is
    wrong with it.

    Example:
        >>> error = NonFiniteNumberError("1e309", ("limits", 0))
        >>> str(error), error.loc
        ('limits.0: 1e309 is too large for a number (over 1.8e308)', ('limits', 0))
    """

    def __init__(self, number: str, loc: Location) -> None:
        self.number, self.loc = number, loc
        self.problem = f"{number} {_why(number)}"
        where = ".".join(map(str, loc)) or "(root)"
        super().__init__(f"{where}: {self.problem}")


def loads(text: str | bytes) -> Any:
    """Strict JSON: ``ValueError`` for NaN, Infinity, numbers over a float's range (a
    ``NonFiniteNumberError``), too deep nesting and too many digits.

    Example:
        >>> loads('{"move": "e2e4"}')
        {'move': 'e2e4'}
        >>> loads('{"action": NaN}')
        Traceback (most recent call last):
        ...
        envkit.server.jsontext.NonFiniteNumberError: action: NaN is not valid JSON
    """
    try:
        data = pydantic_core.from_json(text, allow_inf_nan=False)
    except ValueError:
        pass
    else:
        if _finite(data):
            return data
    try:  # again, with the refused numbers marked, to tell where they are
        data = json.loads(text, parse_constant=_Refused, parse_float=_float_or_refused)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    refused = _first_refused(data)
    if refused is not None:
        raise NonFiniteNumberError(*refused)
    return data


def dumps(data: Any) -> str:
    """Compact JSON text (non-ASCII as it is; a lone surrogate escaped).

    Example:
        >>> dumps({"type": "observation", "data": {"reward": 1.0, "done": True}})
        '{"type":"observation","data":{"reward":1.0,"done":true}}'
    """
    try:
        return pydantic_core.to_json(data).decode()
    except ValueError:
        return json.dumps(data, separators=(",", ":"))


class _Refused(str):
    """A number ``json`` read that JSON cannot hold, as its text (a str, so no float is made)."""


def _float_or_refused(text: str) -> float | _Refused:
    number = float(text)
    return number if math.isfinite(number) else _Refused(text)


def _finite(data: Any) -> bool:
    """Whether every float in ``data`` (parsed JSON) is finite; quick on a typical message."""
    kind = type(data)
    if kind is dict:
        data = data.values()
    elif kind is not list:
        return kind is not float or math.isfinite(data)
    for item in data:
        kind = type(item)
        if (kind is dict or kind is list or kind is float) and not _finite(item):
            return False
    return True


def _first_refused(data: Any) -> tuple[str, Location] | None:
    """The first refused number in ``data`` and where it is, in document order; a stack, not
    recursion: ``json`` reads nesting deeper than Python's recursion limit leaves room for."""
    stack: list[tuple[Location, Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, _Refused):
            return str(value), loc
        if isinstance(value, dict):
            items: list[tuple[str | int, Any]] = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        stack.extend(((*loc, key), item) for key, item in reversed(items))
    return None


def _why(number: str) -> str:
    if number.lstrip("-") in ("NaN", "Infinity"):
        return "is not valid JSON"
    return "is too large for a number (over 1.8e308)"
