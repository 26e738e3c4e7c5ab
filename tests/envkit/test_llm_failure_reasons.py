"""``ChatError.reason``: an endpoint's failure sorted for an episode's end status."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.llm import ChatClient, ChatError, ChatTimeout, LLMAgent, LLMSettings
from envkit.llm.client import FAILURE_REASONS, failure_reason

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, Disconnect, HttpError, Slow

TOO_LONG = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens. Please reduce the length of the messages."
)


def llm(server: ChatServer, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "name": "Seat",
        "model_name": "test-model",
        "base_url": server.base_url,
        "api_key_env": "POLYARENA_TEST_REASON_KEY",
        "timeout_seconds": 10.0,
        "endpoint_retries": 0,
        **overrides,
    }
    return LLMSettings(**values)


def reason_of(reply: Any, **overrides: Any) -> tuple[str, list[float]]:
    """The reason of the ``ChatError`` an endpoint answering ``reply`` every time causes."""
    sleeps: list[float] = []
    with ChatServer(lambda request: reply) as server:
        client = ChatClient(llm(server, **overrides), sleep=sleeps.append)
        with pytest.raises(ChatError) as raised:
            client.complete([{"role": "user", "content": "hello"}])
        client.close()
    return raised.value.reason, sleeps


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (HttpError(400, TOO_LONG), "context_limit"),
        (HttpError(400, "Unknown model: test-model"), "bad_request"),
        (HttpError(401, "no key"), "bad_request"),
        (HttpError(413, TOO_LONG), "bad_request"),  # only a 400 says the prompt is too long
        (HttpError(429, "slow down"), "rate_limited"),
        (HttpError(503, "overloaded"), "server_error"),
        (Disconnect(), "connection"),
    ],
)
def test_each_failure_of_a_real_endpoint_has_its_reason(reply: Any, reason: str) -> None:
    assert reason_of(reply)[0] == reason


def test_a_rate_limit_keeps_its_reason_after_the_retries() -> None:
    reason, sleeps = reason_of(
        HttpError(429, "slow down", {"Retry-After": "3"}), endpoint_retries=2
    )
    assert (reason, sleeps) == ("rate_limited", [3.0, 3.0])


def test_a_timeout_is_a_chat_timeout_with_its_reason() -> None:
    with ChatServer([Slow(30, "late")]) as server:
        client = ChatClient(llm(server, timeout_seconds=0.2))
        with pytest.raises(ChatTimeout) as raised:
            client.complete([{"role": "user", "content": "hello"}])
        client.close()
    assert raised.value.reason == "timeout"


def test_the_agent_records_the_context_limit_of_its_decision() -> None:
    with ChatServer([HttpError(400, TOO_LONG)]) as server:
        agent = LLMAgent(llm(server), signature="(move :string) -> :any")
        with pytest.raises(ChatError):
            agent.decide("a very long observation")
        agent.close()
    (step,) = agent.reasoning
    assert (step.failure_reason, step.from_cache, step.valid) == ("context_limit", False, False)


def test_the_error_code_counts_even_past_the_excerpt() -> None:
    body = json.dumps(
        {
            "error": {
                "message": "x" * 400,
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
    )
    assert failure_reason(400, body) == "context_limit"
    assert failure_reason(400, json.dumps({"error": {"code": "model_not_found"}})) == "bad_request"
    assert failure_reason(400, "not json at all") == "bad_request"
    assert failure_reason(400, '["error"]') == "bad_request"


def test_a_failure_crosses_a_process_boundary_whole() -> None:
    from envkit.llm import ReplayMiss

    failures = [
        ChatError("HTTP 400", status=400, body=TOO_LONG, reason="context_limit"),
        ChatTimeout("no reply within 1 s"),
        ReplayMiss("no answer", key="ab-0", scope="ep-1/A"),
    ]
    for failure in failures:
        copy = pickle.loads(pickle.dumps(failure))
        assert type(copy) is type(failure) and str(copy) == str(failure)
        assert vars(copy) == vars(failure)


def test_a_reason_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match="reason: must be one of context_limit"):
        ChatError("x", reason="cosmic_rays")


@settings(max_examples=500, deadline=None)
@given(status=st.none() | st.integers(100, 599), body=st.text(max_size=60))
def test_every_status_and_body_get_a_known_reason(status: int | None, body: str) -> None:
    reason = failure_reason(status, body)
    assert reason in FAILURE_REASONS
    if reason == "context_limit":
        assert status == 400
    if status is not None and (status == 429 or status >= 500):
        assert reason in ("rate_limited", "server_error")
