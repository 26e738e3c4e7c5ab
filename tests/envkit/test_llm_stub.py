"""``envkit.llm.stub``: a local endpoint that ``ChatClient`` and ``LLMAgent`` treat as a model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from envkit.llm import ChatClient, ChatError, LLMAgent, LLMSettings
from envkit.llm.stub import StubEndpoint

ROOT = Path(__file__).parents[2]


def llm(stub: StubEndpoint) -> LLMSettings:
    return LLMSettings(name="Demo", model_name="stub-model", base_url=stub.base_url)


def test_an_agent_plays_against_a_fixed_reply() -> None:
    with StubEndpoint('{"move": "stay"}') as stub:
        agent = LLMAgent(llm(stub), signature="(move :string) -> :any")
        actions = [agent.decide(f"turn {turn}") for turn in range(3)]
        agent.close()
    assert actions == [{"move": "stay"}] * 3 and stub.requests == 3
    assert [step.tokens_in for step in agent.reasoning] == [None] * 3  # no usage, never invented


def test_a_reply_function_sees_each_request() -> None:
    def reply(request: dict[str, Any]) -> str:
        return f"{request['model']}: {request['messages'][-1]['content']}"

    with StubEndpoint(reply) as stub:
        client = ChatClient(llm(stub))
        answers = [client.complete([{"role": "user", "content": text}]) for text in ("a", "b")]
        client.close()
    assert [answer["content"] for answer in answers] == ["stub-model: a", "stub-model: b"]
    assert answers[0]["role"] == "assistant"


def test_a_failing_reply_function_is_a_server_error_and_the_stub_keeps_serving() -> None:
    def reply(request: dict[str, Any]) -> str:
        if request["messages"][-1]["content"] == "boom":
            raise RuntimeError("no answer for boom")
        return "fine"

    with StubEndpoint(reply) as stub:
        client = ChatClient(llm(stub).model_copy(update={"endpoint_retries": 0}))
        with pytest.raises(ChatError) as raised:
            client.complete([{"role": "user", "content": "boom"}])
        after = client.complete([{"role": "user", "content": "calm"}])
        client.close()
    assert raised.value.reason == "server_error" and "no answer for boom" in str(raised.value)
    assert after["content"] == "fine"


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/v1/chat/completions", b"{not json", 400, "not JSON"),
        ("/v1/chat/completions", b"[1, 2]", 400, "not a JSON object"),
        ("/v1/embeddings", b"{}", 404, "no route /v1/embeddings"),
    ],
)
def test_bad_requests_get_an_openai_style_error(
    path: str, body: bytes, status: int, says: str
) -> None:
    with StubEndpoint("unused") as stub:
        root = stub.base_url.removesuffix("/v1")
        response = httpx.post(root + path, content=body)
    assert response.status_code == status and says in response.json()["error"]["message"]
    assert stub.requests == 0


def test_a_negative_delay_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="delay_seconds: must be at least 0"):
        StubEndpoint("x", delay_seconds=-1)


def test_the_command_line_serves_its_reply_until_stopped() -> None:
    command = [
        sys.executable,
        "-m",
        "envkit.llm.stub",
        "--reply",
        '{"move": "stay"}',
        "--port",
        "0",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        base_url = banner.split(" at ")[1].split()[0]
        settings = LLMSettings(name="Demo", model_name="stub", base_url=base_url)
        client = ChatClient(settings)
        answer = client.complete([{"role": "user", "content": "Your move?"}])
        client.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert banner.startswith('serving \'{"move": "stay"}\' at http://127.0.0.1:')
    assert answer["content"] == '{"move": "stay"}'
