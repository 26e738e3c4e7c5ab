"""Exceptions of the worlds package: every one names the field path it is about."""

from __future__ import annotations

__all__ = ["CircularSchemaError", "ConfigError", "StateValidationError"]


class ConfigError(ValueError):
    """A world definition (YAML or dict) that cannot load; the message names every bad path."""


class CircularSchemaError(ConfigError):
    """Object schemas that contain themselves (reachable through YAML anchors and aliases)."""


class StateValidationError(ValueError):
    """A state that breaks its definitions: ``errors`` lists ``(path, message)`` pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("\n".join(f"{path}: {message}" for path, message in errors))
