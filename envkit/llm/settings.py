"""``LLMSettings``: who an LLM agent is and how to reach its model.

The API key is never part of the settings, only the name of the environment variable that holds
it, so settings can be logged, stored in a report and shared without leaking a secret.
"""

from __future__ import annotations

from pydantic import Field

from envkit.dto import FrozenDTO

__all__ = ["LLMSettings"]


class LLMSettings(FrozenDTO):
    """An LLM agent's identity, sampling parameters and endpoint.

    Example:
        >>> settings = LLMSettings(name="Alpha", model_name="gpt-4o-mini")
        >>> settings.base_url, settings.api_key_env, settings.tool_calling
        ('https://api.openai.com/v1', 'OPENAI_API_KEY', False)
    """

    name: str = Field(min_length=1, max_length=50, description="Display name")
    personality: str = Field(
        default="balanced",
        description="Playing style added to the system prompt, e.g. 'aggressive'",
    )
    model_name: str = Field(min_length=1, description="Model identifier sent to the endpoint")
    system_prompt: str = Field(
        default=(
            "You are an agent in a turn-based game. Read the observation and choose your action."
        ),
        description="The agent's instructions (plain text)",
    )
    temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="Sampling temperature")
    max_tokens: int = Field(default=2048, gt=0, description="Most tokens in one reply")
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="Longest wait for one reply (seconds)"
    )
    base_url: str = Field(
        default="https://api.openai.com/v1",
        min_length=1,
        description="OpenAI-compatible API root; requests go to <base_url>/chat/completions",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        min_length=1,
        description="The environment variable holding the API key (the key itself is never stored)",
    )
    tool_calling: bool = Field(
        default=False,
        description="Ask for the action as a tool call instead of JSON in the reply text",
    )
    endpoint_retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries of one request after HTTP 429, a 5xx or a lost connection, with "
        "exponential backoff (Retry-After honoured); other errors and timeouts are not retried",
    )
    max_self_corrections: int = Field(
        default=2,
        ge=0,
        description="Invalid replies fed back to the model per decision before giving up",
    )
