"""Tool methods made at run time, in the form TRL reads them, and one class per tool.

TRL makes each public method of an environment class a tool, reading its signature, its type
hints and the ``Args:`` lines of its docstring (``transformers.utils.get_json_schema``). A world's
or a server's tool is known only at run time, so ``tool_method`` writes those three for a
function of keyword arguments, and ``tool_env_class`` puts it on a subclass made once per key:
TRL scores a pooled instance with ``get_reward`` only when its type is exactly the probed
instance's, so every instance for one tool must share one class.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolParameter", "tool_env_class", "tool_method"]

_NONE = inspect.Parameter.empty


@dataclass(frozen=True)
class ToolParameter:
    """One keyword parameter: its type hint, its ``Args:`` text, and whether it may be left out
    (then it defaults to None and its hint admits None)."""

    name: str
    hint: Any
    description: str
    optional: bool = False


def tool_method(
    name: str,
    summary: str,
    parameters: Sequence[ToolParameter],
    returns: str,
    call: Callable[[Any, dict[str, Any]], str],
) -> Callable[..., str]:
    """A method ``name(self, *, <parameters>) -> str`` calling ``call(self, given)``, where
    ``given`` holds the arguments passed and not None.

    Example:
        >>> from transformers.utils import get_json_schema
        >>> move = tool_method("move", "Play a move.", [ToolParameter("move", str, "UCI")],
        ...                    "The board.", lambda env, given: given["move"])
        >>> get_json_schema(move)["function"]["parameters"]["required"], move(None, move="e2e4")
        (['move'], 'e2e4')
    """
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for parameter in parameters:
        hint = parameter.hint | None if parameter.optional else parameter.hint
        annotations[parameter.name] = hint
        signature.append(inspect.Parameter(
            parameter.name, inspect.Parameter.KEYWORD_ONLY,
            default=None if parameter.optional else _NONE, annotation=hint,
        ))  # fmt: skip

    def method(self: Any, **arguments: Any) -> str:
        return call(self, {key: value for key, value in arguments.items() if value is not None})

    method.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    lines = [f"    {p.name}: {p.description}" for p in parameters]
    method.__doc__ = f"{summary}\n\nArgs:\n" + "\n".join(lines) + f"\n\nReturns:\n    {returns}"
    method.__name__ = method.__qualname__ = name
    return method


_CLASSES: dict[tuple[type, str], type] = {}


def tool_env_class(
    base: type, key: str, class_name: str, make_tool: Callable[[], Callable[..., str]]
) -> type:
    """The subclass of ``base`` with the tool ``make_tool()`` makes, made once per ``key``."""
    cls = _CLASSES.get((base, key))
    if cls is None:
        tool = make_tool()
        cls = _CLASSES[(base, key)] = type(class_name, (base,), {tool.__name__: tool})
    return cls
