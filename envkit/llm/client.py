"""``ChatClient``: one OpenAI-compatible ``/chat/completions`` request at a time, over httpx.

- ``ChatError``: the endpoint failed (HTTP status, unreadable JSON, no reply in it);
  ``status``, a short ``body`` excerpt and ``reason`` (one of ``FAILURE_REASONS``) say how.
- ``ChatTimeout``: no reply within ``settings.timeout_seconds`` (also a ``TimeoutError``, which is
  how an evaluation recognises it without importing this module).
- ``TokenUsage``: the tokens one reply reports (``usage.prompt_tokens``/``completion_tokens``).

A request answered with HTTP 429 or a 5xx, or whose connection fails, is sent again up to
``settings.endpoint_retries`` times: after ``Retry-After`` when the server gives one, else after
an exponential backoff (``backoff_seconds``), each wait at most ``MAX_WAIT_SECONDS``. Those are
the endpoint's passing troubles (rate limits, overload, restarts); any other 4xx is the request's
own fault, and a timeout has already waited long enough, so neither is retried.

``reason`` sorts a failure for an evaluation's end status, without parsing messages:

- ``"context_limit"``: HTTP 400 whose body has the OpenAI error code ``context_length_exceeded``
  or says "maximum context length" (OpenAI, vLLM): the conversation outgrew the model;
- ``"bad_request"``: any other 4xx but 429;
- ``"rate_limited"`` (429) and ``"server_error"`` (5xx), after the retries ran out;
- ``"connection"``: no response (refused, reset, dropped); ``"timeout"``: no reply in time
  (``ChatTimeout``);
- ``"bad_reply"``: a 2xx whose body holds no chat completion;
- ``"replay_miss"``: a ``ReplayCache`` in replay-only mode had no answer (``ReplayMiss``).

Two options serve an evaluation that asks many seats at once, one thread and client per seat:
``gate`` (an ``EndpointGate`` shared by the clients) bounds the requests in flight per endpoint,
held only while a request is on the wire, never during a retry's wait; ``cache`` (a
``ReplayCache``) answers a request asked before from disk, in the scope ``cache_scope`` names.

httpx is imported on the first request, so importing ``envkit.llm`` stays light.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from envkit.llm.settings import LLMSettings

if TYPE_CHECKING:
    import httpx

    from envkit.llm.gate import EndpointGate
    from envkit.llm.replay import ReplayCache

__all__ = [
    "BODY_EXCERPT_CHARS",
    "FAILURE_REASONS",
    "MAX_WAIT_SECONDS",
    "ChatClient",
    "ChatError",
    "ChatTimeout",
    "TokenUsage",
    "backoff_seconds",
    "failure_reason",
]

BODY_EXCERPT_CHARS = 300  # enough to read a server's error message, short enough for a log line
FIRST_BACKOFF_SECONDS = 0.5
MAX_WAIT_SECONDS = 30.0  # no retry waits longer, whatever a Retry-After header asks
FAILURE_REASONS = (
    "context_limit",
    "rate_limited",
    "server_error",
    "connection",
    "timeout",
    "bad_request",
    "bad_reply",
    "replay_miss",
)
_CONTEXT_LIMIT_CODE = "context_length_exceeded"
_CONTEXT_LIMIT_TEXT = "maximum context length"


class ChatError(Exception):
    """The chat endpoint failed; ``status`` is the HTTP status (None: no response or no reply).

    ``reason`` is one of ``FAILURE_REASONS`` (default: ``failure_reason(status, body)``).

    Example:
        >>> ChatError("HTTP 503", status=503).reason, ChatError("refused").reason
        ('server_error', 'connection')
    """

    def __init__(
        self, message: str, *, status: int | None = None, body: str = "", reason: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.body = status, body
        self.reason = failure_reason(status, body) if reason is None else reason
        if self.reason not in FAILURE_REASONS:
            raise ValueError(f"reason: must be one of {', '.join(FAILURE_REASONS)}, got {reason!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled whole (a worker process's failure keeps its status and reason)."""
        fields = {"status": self.status, "body": self.body, "reason": self.reason}
        return _rebuilt, (ChatError, str(self), fields)


class ChatTimeout(ChatError, TimeoutError):  # noqa: N818 (the name the callers know)
    """No reply within the configured timeout."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="timeout")

    def __reduce__(self) -> tuple[Any, ...]:
        return ChatTimeout, (str(self),)


def _rebuilt(kind: type[ChatError], message: str, fields: dict[str, Any]) -> ChatError:
    return kind(message, **fields)


def failure_reason(status: int | None, body: str = "") -> str:
    """The ``ChatError.reason`` of an HTTP ``status`` (None: no response) and its error body.

    Example:
        >>> too_long = '{"error": {"code": "context_length_exceeded", "message": "..."}}'
        >>> failure_reason(400, too_long), failure_reason(400, '{"error": "bad model"}')
        ('context_limit', 'bad_request')
        >>> failure_reason(429), failure_reason(502), failure_reason(None), failure_reason(200)
        ('rate_limited', 'server_error', 'connection', 'bad_reply')
    """
    if status is None:
        return "connection"
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    if status == 400 and _says_context_limit(body):
        return "context_limit"
    if status >= 400:
        return "bad_request"
    return "bad_reply"


def _says_context_limit(body: str) -> bool:
    """Whether an error body is the "prompt too long" refusal, by its code or its wording."""
    if _CONTEXT_LIMIT_TEXT in body.lower():
        return True
    try:
        error = json.loads(body).get("error")
    except (json.JSONDecodeError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("code") == _CONTEXT_LIMIT_CODE


class TokenUsage(NamedTuple):
    """The tokens one reply reports: the prompt's and the completion's."""

    prompt_tokens: int
    completion_tokens: int


class ChatClient:
    """Sends chat requests to ``settings.base_url`` and returns the first choice's message.

    The ``Authorization: Bearer`` header is read from ``os.environ[settings.api_key_env]`` on each
    request (none when the variable is unset), and the key is masked in every error message.
    After each ``complete`` (also one that raised), ``last_usage`` holds the reply's
    ``TokenUsage`` (None: no reply, or a reply without usage), ``last_retries`` the retries it
    made (0 for an answer from the cache) and ``last_from_cache`` whether ``cache`` answered it.

    Args:
        settings: the model, endpoint, sampling, timeout and retry budget.
        sleep: waits between retries (default ``time.sleep``; tests pass their own).
        gate: bounds the requests in flight per endpoint, shared with other clients (default:
            no bound). Held only while the request is on the wire.
        cache: stores every answer and answers a request asked before (default: none). Requests
            are keyed within ``cache_scope`` (default ``""``), which the caller sets, e.g. one per
            episode and seat; identical requests in one scope replay in the order first answered.
        http: an ``httpx.Client`` shared with other chat clients (thread-safe; its connections
            are reused), which ``close`` leaves open; default: one of its own, opened at the
            first request. Making an ``httpx.Client`` costs tens of milliseconds (its TLS
            context), so a harness that makes players per episode shares one.

    Example:
        >>> local = LLMSettings(name="Alpha", model_name="llama3.1", base_url="http://localhost:11434/v1/")
        >>> client = ChatClient(local)
        >>> client.url  # no connection until the first complete()
        'http://localhost:11434/v1/chat/completions'
        >>> client.close()
    """

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        gate: EndpointGate | None = None,
        cache: ReplayCache | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.gate, self.cache = gate, cache
        self.cache_scope = ""
        self.last_usage: TokenUsage | None = None
        self.last_retries = 0
        self.last_from_cache = False
        self._sleep = sleep
        self._http, self._shared_http = http, http is not None
        self._asked: dict[str, int] = {}  # request digest -> identical requests asked before

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> dict[str, Any]:
        """The assistant message (``content`` and maybe ``tool_calls``) for ``messages``."""
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
        self.last_usage, self.last_retries, self.last_from_cache = None, 0, False
        if self.cache is None:
            return self._request(payload)
        return self._cached(payload, self.cache)

    def _cached(self, payload: dict[str, Any], cache: ReplayCache) -> dict[str, Any]:
        """The answer from ``cache``, or from the endpoint and then stored (failures are not)."""
        from envkit.llm.replay import entry_key, request_digest

        scope = self.cache_scope
        digest = request_digest(scope, self.url, payload)
        occurrence = self._asked.get(digest, 0)
        self._asked[digest] = occurrence + 1
        key = entry_key(digest, occurrence)
        answer = cache.lookup(key, scope=scope)
        if answer is not None:
            self.last_usage, self.last_from_cache = answer.usage, True
            return answer.message
        reply = self._request(payload)
        cache.store(
            key, scope=scope, url=self.url, payload=payload, message=reply, usage=self.last_usage
        )
        return reply

    def _request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The endpoint's answer, after the retries that 429, 5xx and lost connections earn."""
        settings = self.settings
        key = os.environ.get(settings.api_key_env)
        while True:
            try:
                response = self._send(payload, key)
            except _PassingError as failure:
                retry = self.last_retries
                if retry == settings.endpoint_retries:
                    tries = f" (after {retry} {'retry' if retry == 1 else 'retries'})"
                    message = str(failure) + (tries if retry else "")
                    raise ChatError(
                        message, status=failure.status, body=failure.body, reason=failure.reason
                    ) from None
                wait = failure.retry_after
                self._sleep(backoff_seconds(retry) if wait is None else wait)
                self.last_retries += 1
                continue
            body = _masked(response.text[:BODY_EXCERPT_CHARS], key)
            reply, self.last_usage = _completion(response, body)
            return reply

    def _send(self, payload: dict[str, Any], key: str | None) -> httpx.Response:
        """One POST: the response, or ``_PassingError`` for what a retry may cure."""
        import httpx

        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if self._http is None:
            self._http = httpx.Client()
        timeout = self.settings.timeout_seconds
        try:
            if self.gate is None:
                response = self._http.post(self.url, json=payload, headers=headers, timeout=timeout)
            else:
                with self.gate.hold(self.settings.base_url):
                    response = self._http.post(
                        self.url, json=payload, headers=headers, timeout=timeout
                    )
        except httpx.TimeoutException:
            raise ChatTimeout(
                f"no reply from {self.url} within {self.settings.timeout_seconds:g} s"
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as error:
            raise _PassingError(_masked(f"request to {self.url} failed: {error}", key)) from None
        except httpx.HTTPError as error:
            raise ChatError(_masked(f"request to {self.url} failed: {error}", key)) from None
        if not response.is_error:
            return response
        status = response.status_code
        body = _masked(response.text[:BODY_EXCERPT_CHARS], key)
        message = f"{self.url} answered HTTP {status}: {body}"
        if status == 429 or status >= 500:
            wait = _retry_after(response.headers.get("retry-after"))
            raise _PassingError(message, status=status, body=body, retry_after=wait)
        reason = failure_reason(status, response.text)  # the whole body: the code may come late
        raise ChatError(message, status=status, body=body, reason=reason)

    def close(self) -> None:
        """Close the HTTP connection (the next request opens a new one); a shared one stays."""
        if self._http is not None and not self._shared_http:
            self._http.close()
            self._http = None


class _PassingError(ChatError):
    """A failure a later retry may not meet: 429, a 5xx, a lost connection."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


def backoff_seconds(retry: int) -> float:
    """The wait before retry number ``retry + 1`` when the server names none: 0.5 s, doubling.

    Example:
        >>> [backoff_seconds(retry) for retry in (0, 1, 2, 10)]
        [0.5, 1.0, 2.0, 30.0]
    """
    return min(FIRST_BACKOFF_SECONDS * 2**retry, MAX_WAIT_SECONDS)


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header's wait in seconds (a number or an HTTP date), within
    ``0..MAX_WAIT_SECONDS``; None when absent or unreadable."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, by RFC 5322
            when = when.replace(tzinfo=datetime.UTC)
        seconds = (when - datetime.datetime.now(datetime.UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_WAIT_SECONDS)


def _completion(response: httpx.Response, body: str) -> tuple[dict[str, Any], TokenUsage | None]:
    """The first choice's message and the reply's token usage (None when it reports none)."""
    try:
        data = response.json()
        message = data["choices"][0]["message"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ChatError(
            f"no chat completion in the reply (HTTP {response.status_code}): {body}",
            status=response.status_code,
            body=body,
        ) from None
    if not isinstance(message, dict):
        raise ChatError(
            f"choices[0].message is not an object: {body}", body=body, reason="bad_reply"
        )
    return message, _usage(data.get("usage"))


def _usage(usage: Any) -> TokenUsage | None:
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not (isinstance(prompt, int) and isinstance(completion, int)):
        return None
    return TokenUsage(prompt, completion)


def _masked(text: str, key: str | None) -> str:
    """``text`` with the API key replaced, in case a server echoes the request back."""
    return text.replace(key, "***") if key else text
