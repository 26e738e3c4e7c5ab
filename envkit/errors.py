"""The errors every package raises for a configuration or a player spec it cannot use.

``ConfigError`` is the one base: ``multiagent.WorldConfigError`` for a world definition,
``training.config.TrainingConfigError`` for a training config or override. Catch it to handle
either; its message names the field path. ``PlayerSpecError`` is the base of chess's and the
worlds' player-spec errors (``envkit.player_spec``).
"""

from __future__ import annotations

__all__ = ["ConfigError", "PlayerSpecError"]


class ConfigError(ValueError):
    """A configuration (a YAML file, a dict, an override) that cannot be used; the message names
    the field path it is about."""


class PlayerSpecError(ValueError):
    """A player spec (``KIND[:ARG][?K=V&...]``) that names no player, or names one with a bad
    argument or option; chess and the worlds raise subclasses of it, so one ``except`` serves
    both."""
