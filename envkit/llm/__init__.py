"""LLM agents for any env: a chat model behind the ``envkit.ports.PolicyBackend`` protocol.

- ``LLMSettings``: name, personality, model, prompts, sampling, endpoint, the API key's env var.
- ``ChatClient`` (``ChatError``, ``ChatTimeout``): an OpenAI-compatible chat-completions client.
- ``LLMAgent``: builds the prompt, reads text or tool-call replies, validates them against an
  ``envkit.schema`` signature and feeds errors back; ``ReasoningStep`` records each decision.

Importing this package does not import httpx; the first request does.
"""

from __future__ import annotations

from envkit.llm.agent import LLMAgent, ReasoningStep, extract_json
from envkit.llm.client import ChatClient, ChatError, ChatTimeout
from envkit.llm.settings import LLMSettings

__all__ = [
    "ChatClient",
    "ChatError",
    "ChatTimeout",
    "LLMAgent",
    "LLMSettings",
    "ReasoningStep",
    "extract_json",
]
