"""``LLMAgent``: a ``PolicyBackend`` that asks a chat model for every action.

- ``LLMAgent(settings, *, signature=None, parse=None)``: one decision is one short conversation:
  the system prompt, the observation and how to answer; a reply that does not parse or validate
  against ``signature`` goes back to the model with the errors ("Your action was invalid: ...") up
  to ``settings.max_self_corrections`` times. Those corrections happen before the env sees an
  action, so they never spend the env's own retry budget (chess: illegal-move retries).
- ``ReasoningStep``: what one decision sent, got back and made of it, and what it cost (requests,
  tokens, the endpoint's retries); ``agent.reasoning`` holds one per decision, in order. The API
  key is never in it (it lives only in the request headers).
- ``extract_json``: the JSON value in a free-text reply.

Without a signature the reply text is the action (chess: the env parses UCI, SAN or a sentence).
With one, the action is a JSON value validated by ``envkit.schema`` (lenient: "10" for an int is
coerced, with a warning recorded), read from a tool call when ``settings.tool_calling`` is set, or
from the reply text otherwise. Worlds pass ``ObservationEnvelope.to_json()`` (or the envelope) as
the observation and their action signature (``multiagent.signatures``) as ``signature``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from envkit.dto import FrozenDTO
from envkit.llm.client import ChatClient, ChatError, ChatTimeout, TokenUsage
from envkit.llm.settings import LLMSettings

if TYPE_CHECKING:
    from envkit.schema import Schema

__all__ = ["ACTION_TOOL", "LLMAgent", "ReasoningStep", "extract_json"]

ACTION_TOOL = "act"  # the one tool offered in tool-calling mode
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ReasoningStep(FrozenDTO):
    """One decision: the conversation, the raw replies, the action and what was wrong on the way.

    Example:
        >>> step = ReasoningStep(
        ...     messages=[{"role": "user", "content": "Your move?"}],
        ...     replies=[{"role": "assistant", "content": "e2e4"}],
        ...     action="e2e4", valid=True, latency_seconds=0.8)
        >>> step.errors, ReasoningStep.model_validate_json(step.model_dump_json()) == step
        ([], True)
    """

    messages: list[dict[str, Any]] = Field(
        description="The whole conversation: prompt, replies and the feedback on invalid ones"
    )
    replies: list[dict[str, Any]] = Field(
        description="The assistant messages as the endpoint returned them, one per request"
    )
    action: Any = Field(
        default=None, description="The action returned (the last attempt's if none valid)"
    )
    valid: bool = Field(description="Whether the returned action parsed and validated")
    errors: list[str] = Field(
        default_factory=list, description="Parse, validation and endpoint errors, in order"
    )
    warnings: list[str] = Field(
        default_factory=list, description="Validation warnings, e.g. a quoted number coerced"
    )
    latency_seconds: float = Field(ge=0, description="Wall time of the whole decision (seconds)")
    timed_out: bool = Field(
        default=False, description="Whether the endpoint did not answer in time"
    )
    requests: int = Field(
        default=0, ge=0, description="Chat requests sent (self-corrections included, retries not)"
    )
    tokens_in: int | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens over the requests (None: a reply reported none)",
    )
    tokens_out: int | None = Field(
        default=None,
        ge=0,
        description="Completion tokens over the requests (None: a reply reported none)",
    )
    endpoint_retries: int = Field(
        default=0,
        ge=0,
        description="Requests sent again after HTTP 429, a 5xx or a lost connection",
    )
    from_cache: bool = Field(
        default=False,
        description="Whether every request was answered from the client's ReplayCache",
    )
    error_kinds: list[str] = Field(
        default_factory=list,
        description="One reason code per refused reply: no_json, unparseable, bad_tool_call, or "
        "the first schema issue's kind (missing, unexpected, enum, type, bound, size, pattern, "
        "invalid)",
    )
    failure_reason: str | None = Field(
        default=None,
        description="The ChatError.reason when the endpoint failed (e.g. 'context_limit')",
    )


class LLMAgent:
    """A chat model behind the ``PolicyBackend`` protocol.

    Args:
        settings: the model, endpoint, prompts, sampling and self-correction budget.
        signature: the action's schema (anything ``envkit.schema.parse`` takes): a function
            whose parameters are the action's fields, ``"(verb :string, amount :int) -> :any"``,
            or (text mode only) any schema the action must match; None: the reply text is the
            action.
        parse: turns a text reply into the action (default: the stripped text, or with a signature
            the JSON value in it); a ``ValueError`` it raises is fed back like a validation error.
        client: the ``ChatClient`` to use (default: one built from ``settings``).
        tool_name: the tool offered in tool-calling mode (default ``ACTION_TOOL``, "act"); a
            model trained on a tool env is offered the tool it learnt (chess's "move").

    ``decide`` raises ``ChatTimeout`` (a ``TimeoutError``) when the model does not answer within
    ``settings.timeout_seconds``, and ``ChatError`` when the endpoint fails (after the client's
    ``settings.endpoint_retries`` retries of HTTP 429, 5xx and lost connections); the decision is
    recorded in ``reasoning`` either way. After the last self-correction an invalid action is
    returned as it is, so the env applies its own rules to it.

    Example:
        >>> from unittest.mock import Mock
        >>> replies = ['{"mov": "e4"}', '{"move": "e4"}']  # the key wrong, then right
        >>> chat = Mock(spec=ChatClient)
        >>> chat.complete.side_effect = [{"content": text} for text in replies]
        >>> settings = LLMSettings(name="Alpha", model_name="gpt-4o-mini")
        >>> agent = LLMAgent(settings, signature="(move :string) -> :any", client=chat)
        >>> agent.decide("You play white. Your move?"), agent.reasoning[-1].errors
        ({'move': 'e4'}, ['move: missing required key'])
    """

    def __init__(
        self,
        settings: LLMSettings,
        *,
        signature: Schema | str | list | None = None,
        parse: Callable[[str], Any] | None = None,
        client: ChatClient | None = None,
        tool_name: str = ACTION_TOOL,
    ) -> None:
        self.settings = settings
        self.tool_name = tool_name
        self.name = settings.name
        self.client = client or ChatClient(settings)
        self.reasoning: list[ReasoningStep] = []
        self.schema: Schema | None = None
        self._instructions = ""
        self._tool_options: dict[str, Any] = {}
        if signature is None and settings.tool_calling:
            raise ValueError("tool_calling needs a signature: the tool's parameters come from it")
        if signature is not None:
            self._use_signature(signature)
        self.parse: Callable[[str], Any] = parse or (
            extract_json if self.schema is not None else str.strip
        )
        self._system = {"role": "system", "content": _system_prompt(settings)}

    def _use_signature(self, signature: Schema | str | list) -> None:
        from envkit.schema import parse, render, tool_definition  # text-only agents need none

        schema = parse(signature)
        if schema.kind == "=>" and not schema.params.entries:
            raise ValueError(
                f"the action signature {render(schema)!r} takes no parameters, so nothing would "
                "be checked; name the action's fields as parameters: '(move :string) -> :any'"
            )
        self.schema = schema
        if self.settings.tool_calling:
            tool = tool_definition(
                schema, self.tool_name, "Take your action for this turn.", flavor="openai-strict"
            )
            choice = {"type": "function", "function": {"name": self.tool_name}}
            self._tool_options = {"tools": [tool], "tool_choice": choice}
            self._instructions = f"Call the {self.tool_name} tool with your action."
        else:
            self._instructions = (
                "Reply with your action as one JSON value matching this signature:\n"
                + render(schema, name=ACTION_TOOL)
            )

    def decide(self, observation: Any) -> Any:
        """The model's action for ``observation`` (text, or a pydantic model sent as JSON)."""
        prompt = _observation_text(observation)
        if self._instructions:
            prompt = f"{prompt}\n\n{self._instructions}"
        messages: list[dict[str, Any]] = [self._system, {"role": "user", "content": prompt}]
        replies: list[dict[str, Any]] = []
        errors: list[str] = []
        warnings: list[str] = []
        problems: list[str] = []
        kinds: list[str] = []
        action, valid, timed_out, failure_reason = None, False, False, None
        cost = _Cost()
        start = time.perf_counter()
        try:
            for _ in range(self.settings.max_self_corrections + 1):
                if problems:
                    messages.append(_feedback(replies[-1], problems))
                reply = self._complete(messages, cost)
                replies.append(reply)
                messages.append(_assistant(reply))
                action, problems, noted, kind = self._read(reply)
                errors += problems
                warnings += noted
                kinds += [kind] if kind else []
                if not problems:
                    valid = True
                    break
        except ChatError as error:
            timed_out, failure_reason = isinstance(error, ChatTimeout), error.reason
            errors.append(str(error))
            raise
        finally:
            tokens_in, tokens_out = cost.tokens()
            self.reasoning.append(
                ReasoningStep(
                    messages=list(messages),
                    replies=replies,
                    action=action,
                    valid=valid,
                    errors=errors,
                    warnings=warnings,
                    latency_seconds=time.perf_counter() - start,
                    timed_out=timed_out,
                    requests=cost.requests,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    endpoint_retries=cost.retries,
                    from_cache=cost.all_cached(),
                    failure_reason=failure_reason,
                    error_kinds=kinds,
                )
            )
        return action

    def _complete(self, messages: list[dict[str, Any]], cost: _Cost) -> dict[str, Any]:
        """One request, its tokens and retries added to ``cost`` (also when it fails)."""
        usage, cached = None, False
        try:
            reply = self.client.complete(messages, **self._tool_options)
            usage = getattr(self.client, "last_usage", None)
            cached = getattr(self.client, "last_from_cache", False) is True
        finally:
            cost.add(usage, getattr(self.client, "last_retries", 0), cached)
        return reply

    def close(self) -> None:
        self.client.close()

    def _read(self, reply: dict[str, Any]) -> tuple[Any, list[str], list[str], str | None]:
        """The action in ``reply``, what is wrong with it (empty: valid), any warnings, and the
        reason code of the refusal (None: valid)."""
        calls = reply.get("tool_calls") or []
        read: Callable[[Any], Any]
        if self.settings.tool_calling and calls:
            raw, read, unread = (
                calls[0].get("function", {}).get("arguments"),
                _tool_arguments,
                "bad_tool_call",
            )
        else:
            unread = "no_json" if self.parse is extract_json else "unparseable"
            raw, read = reply.get("content") or "", self.parse
        try:
            data = read(raw)
        except ValueError as error:
            return raw, [str(error)], [], unread
        if self.schema is None:
            return data, [], [], None
        from envkit.schema import validate

        result = validate(self.schema, data, direction="input")
        noted = [str(warning) for warning in result.warnings]
        if result.ok:
            return result.value, [], noted, None
        return data, [str(issue) for issue in result.errors], noted, result.errors[0].kind


class _Cost:
    """What one decision's requests cost: the usage of each (None: not reported) and retries."""

    def __init__(self) -> None:
        self.usages: list[TokenUsage | None] = []
        self.retries = 0
        self.cached = 0

    @property
    def requests(self) -> int:
        return len(self.usages)

    def add(self, usage: object, retries: object, cached: bool) -> None:
        self.usages.append(usage if isinstance(usage, TokenUsage) else None)
        self.retries += retries if isinstance(retries, int) else 0
        self.cached += cached

    def all_cached(self) -> bool:
        """Whether there were requests and the replay cache answered every one."""
        return 0 < self.requests == self.cached

    def tokens(self) -> tuple[int | None, int | None]:
        """Prompt and completion tokens over the requests; None when any reported none."""
        if any(usage is None for usage in self.usages):
            return None, None
        usages = [usage for usage in self.usages if usage is not None]
        return sum(u.prompt_tokens for u in usages), sum(u.completion_tokens for u in usages)


def extract_json(text: str) -> Any:
    """The JSON value in a reply: all of it, a fenced code block, or the outermost ``{...}``.

    Example:
        >>> extract_json('I will buy. ```json\\n{"verb": "buy"}\\n```')
        {'verb': 'buy'}
    """
    candidates = [text, *_FENCED.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ValueError("the reply holds no JSON value; reply with exactly one JSON object")


def _tool_arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):  # some servers send the object itself
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError as error:
        raise ValueError(f"the tool call's arguments are not JSON ({error})") from None


def _feedback(reply: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The errors as the next message: a tool result when the reply was a tool call."""
    text = f"Your action was invalid: {'; '.join(problems)}. Reply again."
    calls = reply.get("tool_calls") or []
    if calls:
        return {"role": "tool", "tool_call_id": calls[0].get("id", ""), "content": text}
    return {"role": "user", "content": text}


def _assistant(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply as a history message; only the first tool call, the one that was answered."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = calls[:1]
    return message


def _system_prompt(settings: LLMSettings) -> str:
    if not settings.personality:
        return settings.system_prompt
    return f"{settings.system_prompt}\nYour personality: {settings.personality}."


def _observation_text(observation: Any) -> str:
    if isinstance(observation, str):
        return observation
    if isinstance(observation, BaseModel):
        return observation.model_dump_json()
    raise TypeError(
        f"an observation must be text or a pydantic model, got {type(observation).__name__}"
    )
