"""The error every package raises for a configuration it cannot use.

``ConfigError`` is the one base: ``multiagent.WorldConfigError`` for a world definition,
``training.config.TrainingConfigError`` for a training config or override. Catch it to handle
either; its message names the field path.
"""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration (a YAML file, a dict, an override) that cannot be used; the message names
    the field path it is about."""
