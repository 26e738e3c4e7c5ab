"""``LLMAgent`` over real HTTP: text and tool calls, self-correction, failures, the API key."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from envkit.llm import ChatClient, ChatError, ChatTimeout, LLMAgent, LLMSettings
from envkit.llm.client import TokenUsage, backoff_seconds

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, Disconnect, HttpError, Slow, ToolCall, WithUsage

KEY_ENV = "POLYARENA_TEST_LLM_KEY"
SECRET = "sk-test-3f9a1c0e-never-log-me"
SIGNATURE = "(verb :string, amount :int) -> :any"


def settings(server: ChatServer, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "name": "Tester",
        "personality": "cautious",
        "model_name": "test-model",
        "system_prompt": "You play a test game.",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "timeout_seconds": 5.0,
        "endpoint_retries": 0,  # the retry tests below ask for retries, with a recorded sleep
        **overrides,
    }
    return LLMSettings(**values)


class Sleeps(list):
    """A ``sleep`` for ``ChatClient`` that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def retrying_agent(
    server: ChatServer, retries: int = 3, **overrides: Any
) -> tuple[LLMAgent, Sleeps]:
    """An agent whose client retries ``retries`` times and records its waits."""
    sleeps = Sleeps()
    agent_settings = settings(server, endpoint_retries=retries, **overrides)
    return LLMAgent(agent_settings, client=ChatClient(agent_settings, sleep=sleeps)), sleeps


@pytest.fixture
def schema() -> Any:
    return pytest.importorskip("envkit.schema")


def test_text_mode_sends_the_prompt_and_returns_the_reply_text() -> None:
    with ChatServer(["  Nf3, developing.\n"]) as server:
        agent = LLMAgent(settings(server, temperature=0.2, max_tokens=64))
        assert agent.decide("Board: ...\nLegal moves: g1f3 e2e4") == "Nf3, developing."
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "test-model"
    assert (sent.json["temperature"], sent.json["max_tokens"]) == (0.2, 64)
    assert "tools" not in sent.json
    system, user = sent.json["messages"]
    assert system["role"] == "system" and "You play a test game." in system["content"]
    assert "cautious" in system["content"]
    assert user == {"role": "user", "content": "Board: ...\nLegal moves: g1f3 e2e4"}


def test_every_decision_records_its_reasoning_step() -> None:
    with ChatServer(["e2e4", "e7e5"]) as server:
        agent = LLMAgent(settings(server))
        agent.decide("first")
        agent.decide("second")
    first, second = agent.reasoning
    assert [m["content"] for m in first.messages[1:]] == ["first", "e2e4"]
    assert second.replies[0]["content"] == "e7e5" and second.action == "e7e5"
    assert first.valid and not first.errors and not first.timed_out
    assert first.latency_seconds >= 0


def test_the_api_key_is_sent_as_a_header_and_never_recorded(monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    script = ["e2e4", HttpError(500, f"bad key {SECRET}")]
    with ChatServer(script) as server:
        agent = LLMAgent(settings(server))
        agent.decide("observation")
        with pytest.raises(ChatError) as failure:
            agent.decide("observation")
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in json.dumps([request.json for request in server.requests])
    assert SECRET not in str(failure.value) and "***" in str(failure.value)
    recorded = json.dumps([step.model_dump(mode="json") for step in agent.reasoning])
    assert SECRET not in recorded
    assert SECRET not in agent.settings.model_dump_json() and SECRET not in repr(agent.settings)


def test_without_the_key_variable_no_authorization_header_is_sent(monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ChatServer(["e2e4"]) as server:
        LLMAgent(settings(server)).decide("observation")
    assert "authorization" not in server.requests[0].headers


def test_an_http_500_raises_chat_error_with_the_status_and_body() -> None:
    with ChatServer([HttpError(500, "model overloaded")]) as server:
        agent = LLMAgent(settings(server))
        with pytest.raises(ChatError, match="HTTP 500") as failure:
            agent.decide("observation")
    assert failure.value.status == 500 and "model overloaded" in failure.value.body
    assert not isinstance(failure.value, TimeoutError)
    step = agent.reasoning[-1]
    assert not step.valid and not step.timed_out and "HTTP 500" in step.errors[-1]


def test_a_slow_reply_is_a_timeout_and_recorded_as_one() -> None:
    with ChatServer([Slow(5.0, "e2e4")]) as server:
        agent = LLMAgent(settings(server, timeout_seconds=0.5))
        with pytest.raises(ChatTimeout) as failure:
            agent.decide("observation")
    assert isinstance(failure.value, TimeoutError)
    assert agent.reasoning[-1].timed_out and agent.reasoning[-1].action is None


def test_a_reply_without_a_completion_and_a_missing_server_are_chat_errors() -> None:
    with (
        ChatServer([HttpError(200, "an error object, but HTTP 200")]) as server,
        pytest.raises(ChatError, match="no chat completion in the reply"),
    ):
        LLMAgent(settings(server)).decide("observation")
    unreachable = LLMSettings(
        name="x", model_name="m", base_url="http://127.0.0.1:9/v1", endpoint_retries=0
    )
    with pytest.raises(ChatError, match=r"request to .* failed"):
        LLMAgent(unreachable).decide("nobody listens on port 9")


def test_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="at most 50 characters"):
        LLMSettings(name="x" * 51, model_name="m")
    with pytest.raises(ValidationError, match="less than or equal to 2"):
        LLMSettings(name="x", model_name="m", temperature=2.5)
    with pytest.raises(ValidationError, match="greater than 0"):
        LLMSettings(name="x", model_name="m", timeout_seconds=0)
    with pytest.raises(ValidationError, match="less than or equal to 10"):
        LLMSettings(name="x", model_name="m", endpoint_retries=11)
    assert LLMSettings(name="x", model_name="m").endpoint_retries == 3
    with pytest.raises(ValueError, match="tool_calling needs a signature"):
        LLMAgent(LLMSettings(name="x", model_name="m", tool_calling=True))


# -- token usage and endpoint retries ---------------------------------------------------------


def test_each_decision_records_its_requests_and_the_tokens_the_endpoint_reported(schema) -> None:
    script = [
        WithUsage(ToolCall({"verb": "buy", "amount": "lots"}), 120, 15),  # fed back, then right
        WithUsage(ToolCall({"verb": "buy", "amount": 2}), 150, 9),
        WithUsage("e2e4", 40, 2),
    ]
    with ChatServer(script) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        agent.decide("observation")
        assert agent.client.last_usage == TokenUsage(150, 9)
        text_agent = LLMAgent(settings(server))
        text_agent.decide("observation")
    step = agent.reasoning[-1]
    assert (step.requests, step.tokens_in, step.tokens_out) == (2, 270, 24)
    assert step.endpoint_retries == 0
    assert (text_agent.reasoning[-1].tokens_in, text_agent.reasoning[-1].tokens_out) == (40, 2)


def test_tokens_are_unknown_when_any_reply_reports_no_usage(schema) -> None:
    script = [ToolCall({"verb": "buy"}), WithUsage(ToolCall({"verb": "buy", "amount": 1}), 9, 3)]
    with ChatServer(script) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        agent.decide("observation")
    step = agent.reasoning[-1]
    assert step.requests == 2 and step.tokens_in is None and step.tokens_out is None


def test_a_429_is_retried_after_the_retry_after_header() -> None:
    script = [HttpError(429, "slow down", {"Retry-After": "2"}), WithUsage("e2e4", 30, 1)]
    with ChatServer(script) as server:
        agent, sleeps = retrying_agent(server)
        assert agent.decide("observation") == "e2e4"
    assert sleeps == [2.0] and len(server.requests) == 2
    assert agent.client.last_retries == 1
    step = agent.reasoning[-1]
    assert (step.requests, step.endpoint_retries, step.tokens_in, step.tokens_out) == (1, 1, 30, 1)


@pytest.mark.parametrize(
    ("retry_after", "waited"),
    [("120", 30.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("soon", 0.5), ("nan", 0.5)],
)
def test_retry_after_is_capped_and_an_unreadable_one_falls_back_to_backoff(
    retry_after: str, waited: float
) -> None:
    script = [HttpError(503, "busy", {"Retry-After": retry_after}), "e2e4"]
    with ChatServer(script) as server:
        agent, sleeps = retrying_agent(server)
        agent.decide("observation")
    assert sleeps == [waited]


def test_5xx_until_the_retries_run_out_is_a_chat_error_after_exponential_backoff() -> None:
    with ChatServer(lambda request: HttpError(502, "bad gateway")) as server:
        agent, sleeps = retrying_agent(server, retries=4)
        with pytest.raises(
            ChatError, match=r"HTTP 502: .*bad gateway.* \(after 4 retries\)"
        ) as failure:
            agent.decide("observation")
    assert failure.value.status == 502 and "bad gateway" in failure.value.body
    assert len(server.requests) == 5 and sleeps == [0.5, 1.0, 2.0, 4.0]
    assert [backoff_seconds(retry) for retry in range(8)][-1] == 30.0  # the cap
    step = agent.reasoning[-1]
    assert (step.requests, step.endpoint_retries, step.tokens_in) == (1, 4, None)
    assert not step.valid and "HTTP 502" in step.errors[-1]


def test_a_lost_connection_is_retried() -> None:
    with ChatServer([Disconnect(), "e2e4"]) as server:
        agent, sleeps = retrying_agent(server)
        assert agent.decide("observation") == "e2e4"
    assert sleeps == [0.5] and agent.reasoning[-1].endpoint_retries == 1


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_errors_are_not_retried(status: int) -> None:
    with ChatServer([HttpError(status, "your fault"), "e2e4"]) as server:
        agent, sleeps = retrying_agent(server)
        with pytest.raises(ChatError, match=f"HTTP {status}") as failure:
            agent.decide("observation")
    assert failure.value.status == status and "after" not in str(failure.value)
    assert sleeps == [] and len(server.requests) == 1


def test_a_timeout_is_not_retried() -> None:
    with ChatServer([Slow(5.0, "e2e4"), "e2e4"]) as server:
        agent, sleeps = retrying_agent(server, timeout_seconds=0.5)
        with pytest.raises(ChatTimeout):
            agent.decide("observation")
    assert sleeps == [] and len(server.requests) == 1
    assert agent.reasoning[-1].requests == 1 and agent.reasoning[-1].tokens_in is None


# -- with a signature (envkit.schema) --------------------------------------------------------


def test_tool_calling_offers_one_forced_tool_and_validates_the_arguments(schema) -> None:
    with ChatServer([ToolCall({"verb": "buy", "amount": 3})]) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "buy", "amount": 3}
    sent = server.requests[0].json
    expected = schema.tool_definition(
        schema.parse(SIGNATURE), "act", "Take your action for this turn.", flavor="openai-strict"
    )
    assert sent["tools"] == [expected]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "act"}}
    assert "Call the act tool" in sent["messages"][1]["content"]


def test_a_signature_without_parameters_is_refused(schema) -> None:
    with pytest.raises(ValueError, match="takes no parameters"):
        LLMAgent(LLMSettings(name="x", model_name="m"), signature="{verb :string}")
    assert LLMAgent(LLMSettings(name="x", model_name="m"), signature=[":map", ["verb", ":string"]])


def test_text_mode_shows_the_rendered_signature_and_reads_json_from_the_reply(schema) -> None:
    reply = 'I will rest.\n```json\n{"verb": "rest", "amount": 0}\n```'
    with ChatServer([reply]) as server:
        agent = LLMAgent(settings(server), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "rest", "amount": 0}
    prompt = server.messages()[1]["content"]
    assert schema.render(schema.parse(SIGNATURE), name="act") in prompt
    assert "tools" not in server.requests[0].json


def test_a_quoted_number_is_coerced_with_a_warning(schema) -> None:
    with ChatServer([ToolCall('{"verb": "sell", "amount": "10"}')]) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "sell", "amount": 10}
    step = agent.reasoning[-1]
    assert step.valid and not step.errors and "amount" in " ".join(step.warnings)
    assert len(server.requests) == 1


def test_an_invalid_action_is_fed_back_and_the_model_corrects_itself(schema) -> None:
    script = [ToolCall({"verb": "buy", "amount": "lots"}), ToolCall({"verb": "buy", "amount": 2})]
    with ChatServer(script) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "buy", "amount": 2}
    assert len(server.requests) == 2
    feedback = server.messages(1)[-1]
    assert feedback["role"] == "tool" and feedback["tool_call_id"] == "call_1"
    assert feedback["content"].startswith("Your action was invalid: amount")
    assert feedback["content"].endswith("Reply again.")
    assert server.messages(1)[-2]["tool_calls"][0]["function"]["name"] == "act"
    step = agent.reasoning[-1]
    assert step.valid and step.errors and step.errors[0].startswith("amount")
    assert len(step.replies) == 2
    assert step.error_kinds == ["type"]


def test_malformed_json_arguments_are_fed_back(schema) -> None:
    script = [ToolCall('{"verb": "buy", "amount": '), ToolCall({"verb": "buy", "amount": 1})]
    with ChatServer(script) as server:
        agent = LLMAgent(settings(server, tool_calling=True), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "buy", "amount": 1}
    assert "arguments are not JSON" in server.messages(1)[-1]["content"]
    assert agent.reasoning[-1].error_kinds == ["bad_tool_call"]


def test_a_text_reply_without_json_is_fed_back_as_a_user_message(schema) -> None:
    with ChatServer(["I would like to buy.", '{"verb": "buy", "amount": 1}']) as server:
        agent = LLMAgent(settings(server), signature=SIGNATURE)
        assert agent.decide("observation") == {"verb": "buy", "amount": 1}
    feedback = server.messages(1)[-1]
    assert feedback["role"] == "user" and "no JSON value" in feedback["content"]
    assert agent.reasoning[-1].error_kinds == ["no_json"]


def test_after_the_last_correction_the_invalid_action_goes_to_the_env(schema) -> None:
    bad = ToolCall({"verb": "buy"})
    with ChatServer([bad, bad, bad]) as server:
        agent = LLMAgent(
            settings(server, tool_calling=True, max_self_corrections=1), signature=SIGNATURE
        )
        assert agent.decide("observation") == {"verb": "buy"}
    assert len(server.requests) == 2  # one try and one correction
    assert not agent.reasoning[-1].valid and len(agent.reasoning[-1].errors) == 2
    assert agent.reasoning[-1].error_kinds == ["missing", "missing"]


def test_a_world_agent_reads_the_envelope_and_acts_within_the_world_rules(schema) -> None:
    signatures = pytest.importorskip("multiagent.signatures")
    from multiagent.dto import ObservationEnvelope
    from multiagent.env import WorldEnv
    from multiagent.worlds import load_world

    config = load_world("trade")
    envelope = ObservationEnvelope(turn=3, observer="Trader_1")
    action = {"verb": "buy", "good": "food", "target_town": "Farmstead", "amount": "2.5"}

    def reply(request: dict[str, Any]) -> ToolCall:
        assert request["messages"][1]["content"].startswith(envelope.to_json())
        return ToolCall(action)

    with ChatServer(reply) as server:
        agent = LLMAgent(
            settings(server, tool_calling=True),
            signature=signatures.action_signature(config.actions),
        )
        decided = agent.decide(envelope)
    assert decided == {**action, "amount": 2.5}
    assert WorldEnv(config).decode_action("Trader_1", decided)["amount"] == 2.5
