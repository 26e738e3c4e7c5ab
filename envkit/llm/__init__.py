"""LLM agents for any env: a chat model behind the ``envkit.ports.PolicyBackend`` protocol.

- ``LLMSettings``: name, personality, model, prompts, sampling, endpoint, the API key's env var.
- ``ChatClient`` (``ChatError`` with its ``reason``, ``ChatTimeout``): an OpenAI-compatible
  chat-completions client.
- ``EndpointGate``: at most K requests in flight per endpoint, shared by the clients of many
  threads (an evaluation's seats).
- ``ReplayCache`` (``ReplayMiss``, ``ReplayCacheError``): every request's answer on disk, so a
  rerun or an offline re-scoring needs no endpoint.
- ``envkit.llm.stub``: a local OpenAI-compatible endpoint with a fixed or computed reply, for
  offline demos and benchmarks (``python -m envkit.llm.stub --reply '{"move": "stay"}'``).
- ``LLMAgent``: builds the prompt, reads text or tool-call replies, validates them against an
  ``envkit.schema`` signature and feeds errors back; ``ReasoningStep`` records each decision.

Importing this package does not import httpx; the first request does.
"""

from __future__ import annotations

from envkit.llm.agent import LLMAgent, ReasoningStep, extract_json
from envkit.llm.client import ChatClient, ChatError, ChatTimeout
from envkit.llm.gate import EndpointGate
from envkit.llm.replay import ReplayCache, ReplayCacheError, ReplayMiss
from envkit.llm.settings import LLMSettings

__all__ = [
    "ChatClient",
    "ChatError",
    "ChatTimeout",
    "EndpointGate",
    "LLMAgent",
    "LLMSettings",
    "ReasoningStep",
    "ReplayCache",
    "ReplayCacheError",
    "ReplayMiss",
    "extract_json",
]
