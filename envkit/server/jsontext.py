"""JSON text of WebSocket and JSON-RPC messages: strict to read, fast both ways.

- ``loads``: refuses NaN and Infinity (not JSON) and reports depth and digit limits as
  ``ValueError``, like every refusal of bad input here.
- ``dumps``: compact JSON text of a reply.

Both run pydantic-core's Rust JSON (a dependency already) and fall back to the ``json`` module
where the two differ: input Rust refuses that ``json`` reads (a lone surrogate, nesting past
Rust's depth limit; also every error, so that its message is ``json``'s), and text UTF-8 cannot
encode (a lone surrogate, which ``json`` escapes). Per WebSocket step that saves most of what
``json`` takes to read a message and write its ~1 KB reply.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

__all__ = ["dumps", "loads"]


def loads(text: str | bytes) -> Any:
    """Strict JSON: ``ValueError`` for NaN, Infinity, too deep nesting and too many digits.

    Example:
        >>> loads('{"move": "e2e4"}')
        {'move': 'e2e4'}
        >>> loads('{"action": NaN}')
        Traceback (most recent call last):
        ...
        ValueError: NaN is not valid JSON
    """
    try:
        return pydantic_core.from_json(text, allow_inf_nan=False)
    except ValueError:
        pass
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
