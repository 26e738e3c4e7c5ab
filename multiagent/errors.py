"""Exceptions of the worlds package (every one names the field path it is about), the warning for
a world that loads but is probably not what its author meant, and the wording they share for a
value outside a fixed set."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from envkit.errors import ConfigError

__all__ = [
    "CircularSchemaError",
    "StateValidationError",
    "WorldConfigError",
    "WorldConfigWarning",
    "not_one_of",
]


class WorldConfigError(ConfigError):
    """A world definition (YAML or dict) that cannot load; the message names every bad path.

    An ``envkit.errors.ConfigError`` (the base of every package's configuration errors), so a
    ``ValueError``."""


class CircularSchemaError(WorldConfigError):
    """Object schemas that contain themselves (reachable through YAML anchors and aliases)."""


class WorldConfigWarning(UserWarning):
    """A world that loads and runs but probably not as meant (one without dynamics stands still).

    A category of its own so a caller can silence exactly it, e.g. for a world that is static on
    purpose: ``warnings.filterwarnings("ignore", category=WorldConfigWarning)``."""


class StateValidationError(ValueError):
    """A state that breaks its definitions: ``errors`` lists ``(path, message)`` pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("\n".join(f"{path}: {message}" for path, message in errors))


def not_one_of(value: Any, allowed: Sequence[str]) -> str:
    """The bad value and every allowed one, so a typo can be fixed from the message alone.

    Example:
        >>> not_one_of("Insider", ["unaware", "external", "insider"])
        "'Insider' is not one of unaware, external, insider; did you mean 'insider'?"
    """
    message = f"{value!r} is not one of {', '.join(allowed)}"
    if not isinstance(value, str):
        return message
    # Stricter than difflib's default, which offers 'uniform' for 'normal'.
    by_lower = {choice.lower(): choice for choice in allowed}
    close = difflib.get_close_matches(value.lower(), list(by_lower), n=1, cutoff=0.76)
    return message + (f"; did you mean {by_lower[close[0]]!r}?" if close else "")
