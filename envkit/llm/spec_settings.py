"""``settings_from_spec``: an ``openai:MODEL?...`` player spec's options as ``LLMSettings``.

Chess (``chess_env.text.llm_player``) and the worlds (``multiagent.players``) name LLM players
with the same options, read here in one place. Each option wins over the caller's default, which
wins over the environment (``$OPENAI_BASE_URL``) and then ``LLMSettings``' own defaults. The key
is never an option: ``api_key_env`` names the environment variable read when a request is sent.
The caller checks which keys its kind takes (``PlayerSpec.reject_extras``) and reads the rest
(chess's prompt condition and move retries, a world's self-corrections).
"""

from __future__ import annotations

import os
from typing import Any

from envkit.llm.settings import LLMSettings
from envkit.player_spec import PlayerSpec

__all__ = ["BASE_URL_VARIABLE", "DEFAULT_BASE_URL", "SETTINGS_OPTIONS", "settings_from_spec"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"
SETTINGS_OPTIONS = (
    "base_url",
    "api_key_env",
    "timeout",
    "tool_calling",
    "temperature",
    "endpoint_retries",
)
"""The option keys ``settings_from_spec`` reads."""


def settings_from_spec(
    spec: PlayerSpec,
    *,
    system_prompt: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout_seconds: float | None = None,
    tool_calling: bool | None = None,
    **fields: Any,
) -> LLMSettings:
    """The ``LLMSettings`` of ``spec`` (``openai:MODEL?...``): the argument is the model; a bad
    option value is the spec's error naming the key. ``system_prompt`` (default: the settings'
    own) and ``fields``, further settings fields, come from the caller.

    Example:
        >>> from envkit.player_spec import parse_spec
        >>> spec = parse_spec("openai:m?timeout=5&tool_calling=yes", ["openai"])
        >>> settings = settings_from_spec(spec, system_prompt="Play.")
        >>> settings.model_name, settings.timeout_seconds, settings.tool_calling
        ('m', 5.0, True)
    """
    if not spec.argument:
        raise spec.error(f"expected {spec.kind}:MODEL, the model's name at the endpoint")
    options = spec.options
    endpoint_retries = spec.integer("endpoint_retries", 0, 10)
    if endpoint_retries is not None:
        fields["endpoint_retries"] = endpoint_retries
    if system_prompt is not None:
        fields["system_prompt"] = system_prompt
    return LLMSettings(
        name=spec.argument[:50],
        model_name=spec.argument,
        base_url=options.get("base_url")
        or base_url
        or os.environ.get(BASE_URL_VARIABLE)
        or DEFAULT_BASE_URL,
        api_key_env=options.get("api_key_env") or api_key_env or "OPENAI_API_KEY",
        timeout_seconds=spec.number("timeout", 0.0, 3600.0) or timeout_seconds or 30.0,
        tool_calling=_first_set(spec.flag("tool_calling"), tool_calling, False),
        temperature=_first_set(spec.number("temperature", -1e-9, 2.0), 0.7),
        **fields,
    )


def _first_set(*values: Any) -> Any:
    return next(value for value in values if value is not None)
