"""``ChatClient``: one OpenAI-compatible ``/chat/completions`` request at a time, over httpx.

- ``ChatError``: the endpoint failed (HTTP status, unreadable JSON, no reply in it);
  ``status`` and a short ``body`` excerpt say how.
- ``ChatTimeout``: no reply within ``settings.timeout_seconds`` (also a ``TimeoutError``, which is
  how an evaluation recognises it without importing this module).

httpx is imported on the first request, so importing ``envkit.llm`` stays light.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from envkit.llm.settings import LLMSettings

if TYPE_CHECKING:
    import httpx

__all__ = ["BODY_EXCERPT_CHARS", "ChatClient", "ChatError", "ChatTimeout"]

BODY_EXCERPT_CHARS = 300  # enough to read a server's error message, short enough for a log line


class ChatError(Exception):
    """The chat endpoint failed; ``status`` is the HTTP status (None: no response or no reply)."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status, self.body = status, body


class ChatTimeout(ChatError, TimeoutError):  # noqa: N818 (the name the callers know)
    """No reply within the configured timeout."""


class ChatClient:
    """Sends chat requests to ``settings.base_url`` and returns the first choice's message.

    The ``Authorization: Bearer`` header is read from ``os.environ[settings.api_key_env]`` on each
    request (none when the variable is unset), and the key is masked in every error message.

    Example:
        >>> local = LLMSettings(name="Alpha", model_name="llama3.1", base_url="http://localhost:11434/v1/")
        >>> client = ChatClient(local)
        >>> client.url  # no connection until the first complete()
        'http://localhost:11434/v1/chat/completions'
        >>> client.close()
    """

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._http: httpx.Client | None = None

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The assistant message (``content`` and maybe ``tool_calls``) for ``messages``."""
        import httpx

        settings = self.settings
        payload: dict[str, Any] = {
            "model": settings.model_name,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
        }
        if tools:
            payload["tools"] = tools
        if tool_choice is not None:
            payload["tool_choice"] = tool_choice
        key = os.environ.get(settings.api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if self._http is None:
            self._http = httpx.Client(timeout=settings.timeout_seconds)
        try:
            response = self._http.post(self.url, json=payload, headers=headers)
        except httpx.TimeoutException:
            raise ChatTimeout(
                f"no reply from {self.url} within {settings.timeout_seconds:g} s"
            ) from None
        except httpx.HTTPError as error:
            raise ChatError(_masked(f"request to {self.url} failed: {error}", key)) from None
        body = _masked(response.text[:BODY_EXCERPT_CHARS], key)
        if response.is_error:
            raise ChatError(
                f"{self.url} answered HTTP {response.status_code}: {body}",
                status=response.status_code,
                body=body,
            )
        return _first_message(response, body)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None


def _first_message(response: httpx.Response, body: str) -> dict[str, Any]:
    try:
        message = response.json()["choices"][0]["message"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ChatError(
            f"no chat completion in the reply (HTTP {response.status_code}): {body}",
            status=response.status_code,
            body=body,
        ) from None
    if not isinstance(message, dict):
        raise ChatError(f"choices[0].message is not an object: {body}", body=body)
    return message


def _masked(text: str, key: str | None) -> str:
    """``text`` with the API key replaced, in case a server echoes the request back."""
    return text.replace(key, "***") if key else text
