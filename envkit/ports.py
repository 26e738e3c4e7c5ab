"""Ports: the one protocol between an env loop and whatever chooses the actions.

- ``PolicyBackend``: ``decide(observation) -> action``; scripted players, trained policies and
  LLM agents all implement it, so an evaluation loop never needs to know which it drives.
- ``ScriptedBackend``: replays a list of actions or calls a function (tests, baselines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["PolicyBackend", "ScriptedBackend"]


@runtime_checkable
class PolicyBackend(Protocol):
    """Chooses an action for an observation.

    Two methods are optional, so a plain object with ``decide`` is already a backend; callers
    call them when present: ``reset(seed=None)`` at the start of every episode and ``close()``
    when done (to release a connection or an engine).

    ``decide`` raises ``TimeoutError`` (or a subclass, such as ``envkit.llm.ChatTimeout``) when it
    ran out of time; an evaluation counts that as a timeout rather than a crash.

    Example:
        >>> class AlwaysE4:
        ...     def decide(self, observation):
        ...         return "e2e4"
        >>> isinstance(AlwaysE4(), PolicyBackend), isinstance(object(), PolicyBackend)
        (True, False)
    """

    def decide(self, observation: Any) -> Any:
        """The action for ``observation``."""
        ...


class ScriptedBackend:
    """Replays ``script`` in order (``reset`` starts it over), or calls ``script(observation)``.

    Example:
        >>> backend = ScriptedBackend(["e2e4", "g1f3"])
        >>> backend.decide("any"), backend.decide("any")
        ('e2e4', 'g1f3')
        >>> backend.reset(); backend.decide("any")
        'e2e4'
        >>> isinstance(backend, PolicyBackend)
        True
    """

    def __init__(self, script: Sequence[Any] | Callable[[Any], Any]) -> None:
        self.script = script
        self.position = 0

    def reset(self, seed: int | None = None) -> None:
        self.position = 0

    def decide(self, observation: Any) -> Any:
        if callable(self.script):
            return self.script(observation)
        if self.position >= len(self.script):
            raise IndexError(f"the script ran out after {len(self.script)} actions")
        self.position += 1
        return self.script[self.position - 1]
