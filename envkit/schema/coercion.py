"""The input coercions: the only strings ``validate(direction="input")`` turns into other types.

Each matches the whole string, so ``"3.14abc"`` is never 3.14 and ``" 42"`` is never 42:

- ``to_int``: ``-?[0-9]+`` (``"42"``, ``"-3"``); ``"42.0"`` is not an int.
- ``to_double``: ``-?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?`` and finite (``"3.14"``, ``"42"``,
  ``"1e-3"``).
- ``to_boolean``: ``"true"`` / ``"false"`` in any case (``"True"``: what Python's ``str`` writes);
  ``"yes"``, ``"1"`` and ``"t"`` are not booleans.

Each returns None when the string is not one of those (a boolean result is never None).
Ints pass as doubles without a coercion; booleans are never numbers.
"""

from __future__ import annotations

import math
import re

__all__ = ["to_boolean", "to_double", "to_int"]

_INT = re.compile(r"-?[0-9]+")
_DOUBLE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def to_int(text: str) -> int | None:
    """``text`` as an int, or None.

    Example:
        >>> to_int("-3"), to_int("42.0"), to_int("4 2")
        (-3, None, None)
    """
    if not _INT.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None


def to_double(text: str) -> float | None:
    """``text`` as a finite double, or None.

    Example:
        >>> to_double("3.14"), to_double("42"), to_double("3.14abc"), to_double("1e999")
        (3.14, 42.0, None, None)
    """
    if not _DOUBLE.fullmatch(text):
        return None
    number = float(text)
    return number if math.isfinite(number) else None


def to_boolean(text: str) -> bool | None:
    """``text`` as a boolean, or None.

    Example:
        >>> to_boolean("TRUE"), to_boolean("false"), to_boolean("yes")
        (True, False, None)
    """
    return {"true": True, "false": False}.get(text.lower())
