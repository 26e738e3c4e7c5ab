"""``ReplayCache``: a rerun answers from disk, exactly, in order, and damage is named."""

from __future__ import annotations

import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.llm import (
    ChatClient,
    ChatError,
    LLMAgent,
    LLMSettings,
    ReplayCache,
    ReplayCacheError,
    ReplayMiss,
)
from envkit.llm.client import TokenUsage
from envkit.llm.replay import entry_key, request_digest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, HttpError, ToolCall, WithUsage

SIGNATURE = "(move :string) -> :any"


def llm(server: ChatServer, name: str = "Seat", **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "name": name,
        "model_name": "test-model",
        "base_url": server.base_url,
        "api_key_env": "POLYARENA_TEST_REPLAY_KEY",
        "timeout_seconds": 10.0,
        "endpoint_retries": 0,
        **overrides,
    }
    return LLMSettings(**values)


def ask(client: ChatClient, text: str) -> dict[str, Any]:
    return client.complete([{"role": "user", "content": text}])


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*/*.json"))


def test_a_second_client_replays_the_whole_sequence_without_a_request(tmp_path: Path) -> None:
    script = [
        WithUsage("north", 12, 3),
        "south",  # no usage reported: replayed as None, never estimated
        WithUsage(ToolCall({"move": "stay"}), 20, 7),
    ]
    questions = ["where?", "and now?", "last one?"]
    with ChatServer(script) as first_server:
        first = ChatClient(llm(first_server), cache=ReplayCache(tmp_path))
        answered = []
        for question in questions:
            answered.append((ask(first, question), first.last_usage, first.last_from_cache))
        first.close()
    assert [from_cache for *_, from_cache in answered] == [False, False, False]
    assert len(entries(tmp_path)) == 3

    with ChatServer([]) as second_server:  # would answer HTTP 500 to any request
        second = ChatClient(
            llm(second_server, base_url=first_server.base_url),
            cache=ReplayCache(tmp_path, mode="replay-only"),
        )
        replayed = []
        for question in questions:
            replayed.append((ask(second, question), second.last_usage, second.last_from_cache))
            assert second.last_retries == 0
    assert second_server.requests == []
    assert [(message, usage) for message, usage, _ in replayed] == [
        (message, usage) for message, usage, _ in answered
    ]
    assert [from_cache for *_, from_cache in replayed] == [True, True, True]
    assert replayed[0][1] == TokenUsage(12, 3) and replayed[1][1] is None


def test_identical_requests_replay_in_the_order_first_answered(tmp_path: Path) -> None:
    with ChatServer(["one", "two", "three", "four"]) as server:
        first = ChatClient(llm(server), cache=ReplayCache(tmp_path))
        assert [ask(first, "same")["content"] for _ in range(3)] == ["one", "two", "three"]
        again = ChatClient(llm(server), cache=ReplayCache(tmp_path))
        contents = [ask(again, "same")["content"] for _ in range(4)]
        froms = again.last_from_cache
    assert contents == ["one", "two", "three", "four"]  # the fourth was never asked before
    assert froms is False and len(server.requests) == 4


def test_each_scope_keeps_its_own_answers(tmp_path: Path) -> None:
    with ChatServer(["for A", "for B"]) as server:
        client = ChatClient(llm(server), cache=ReplayCache(tmp_path))
        client.cache_scope = "ep-0/A"
        assert ask(client, "same")["content"] == "for A"
        client.cache_scope = "ep-0/B"
        assert ask(client, "same")["content"] == "for B"
        replay = ChatClient(llm(server), cache=ReplayCache(tmp_path, mode="replay-only"))
        replay.cache_scope = "ep-0/B"
        assert ask(replay, "same")["content"] == "for B"
        replay.cache_scope = "ep-0/A"
        assert ask(replay, "same")["content"] == "for A"
    assert len(server.requests) == 2


def test_replay_only_names_the_scope_and_the_key_of_a_miss(tmp_path: Path) -> None:
    with ChatServer(["never sent"]) as server:
        client = ChatClient(llm(server), cache=ReplayCache(tmp_path, mode="replay-only"))
        client.cache_scope = "ep-3/Forager_1"
        with pytest.raises(ReplayMiss) as raised:
            ask(client, "your move?")
    assert server.requests == []
    payload = {
        "model": "test-model",
        "messages": [{"role": "user", "content": "your move?"}],
        "temperature": 0.7,
        "max_tokens": 2048,
    }
    key = entry_key(request_digest("ep-3/Forager_1", client.url, payload), 0)
    miss = raised.value
    assert isinstance(miss, ChatError) and miss.reason == "replay_miss"
    assert (miss.key, miss.scope) == (key, "ep-3/Forager_1")
    assert key in str(miss) and "'ep-3/Forager_1'" in str(miss)


def test_a_failed_request_is_not_stored_and_a_rerun_sends_it_again(tmp_path: Path) -> None:
    with ChatServer([HttpError(400, "bad model"), "ok", "answered this time"]) as server:
        client = ChatClient(llm(server), cache=ReplayCache(tmp_path))
        with pytest.raises(ChatError) as raised:
            ask(client, "same")
        assert raised.value.reason == "bad_request" and entries(tmp_path) == []
        assert ask(client, "same")["content"] == "ok"
        assert len(entries(tmp_path)) == 1
        rerun = ChatClient(llm(server), cache=ReplayCache(tmp_path))
        assert ask(rerun, "same")["content"] == "answered this time"  # the failed one, sent
        assert not rerun.last_from_cache
        assert ask(rerun, "same")["content"] == "ok"  # the one after it keeps its place
        assert rerun.last_from_cache
    assert len(server.requests) == 3 and len(entries(tmp_path)) == 2


def test_an_agent_replays_its_decisions_and_marks_them_from_the_cache(tmp_path: Path) -> None:
    script = ['{"mov": "east"}', WithUsage('{"move": "east"}', 30, 5), '{"move": "stay"}']
    with ChatServer(script) as server:
        agent = LLMAgent(
            llm(server),
            signature=SIGNATURE,
            client=ChatClient(llm(server), cache=ReplayCache(tmp_path)),
        )
        first = [agent.decide("turn 1"), agent.decide("turn 2")]
        replayer = LLMAgent(
            llm(server),
            signature=SIGNATURE,
            client=ChatClient(llm(server), cache=ReplayCache(tmp_path, mode="replay-only")),
        )
        second = [replayer.decide("turn 1"), replayer.decide("turn 2")]
    assert first == second == [{"move": "east"}, {"move": "stay"}]
    assert len(server.requests) == 3
    assert [step.from_cache for step in agent.reasoning] == [False, False]
    assert [step.from_cache for step in replayer.reasoning] == [True, True]
    for original, replayed in zip(agent.reasoning, replayer.reasoning, strict=True):
        fields = ("messages", "replies", "action", "errors", "requests", "tokens_in", "tokens_out")
        assert [getattr(original, name) for name in fields] == [
            getattr(replayed, name) for name in fields
        ]


def test_seats_in_threads_share_one_cache(tmp_path: Path) -> None:
    def script(request: dict[str, Any]) -> str:
        return "echo " + request["messages"][-1]["content"]

    def play(server: ChatServer, cache: ReplayCache, seat: int) -> list[str]:
        client = ChatClient(llm(server, f"Seat_{seat}"), cache=cache)
        client.cache_scope = f"ep-0/Seat_{seat}"
        replies = [ask(client, f"turn {turn % 3}")["content"] for turn in range(6)]
        client.close()
        return replies

    with ChatServer(script) as server:
        cache = ReplayCache(tmp_path)
        with ThreadPoolExecutor(max_workers=8) as pool:
            first = list(pool.map(lambda seat: play(server, cache, seat), range(8)))
        replay = ReplayCache(tmp_path, mode="replay-only")
        with ThreadPoolExecutor(max_workers=8) as pool:
            second = list(pool.map(lambda seat: play(server, replay, seat), range(8)))
    assert first == second == [[f"echo turn {turn % 3}" for turn in range(6)]] * 8
    assert len(server.requests) == len(entries(tmp_path)) == 48
    assert not list(tmp_path.glob("*/.*.tmp"))  # no temporary file left behind


@pytest.mark.parametrize(
    ("damage", "fault"),
    [
        (lambda text: text[: len(text) // 2], "not JSON"),
        (lambda text: "[1, 2]", "not a JSON object"),
        (lambda text: text.replace('"key": "', '"key": "0'), "key: holds"),
        (lambda text: json.dumps({**json.loads(text), "message": "hi"}), "message: not an object"),
        (lambda text: json.dumps({**json.loads(text), "usage": {"prompt_tokens": 1}}), "usage:"),
        (
            lambda text: json.dumps(
                {**json.loads(text), "usage": {"prompt_tokens": "1", "completion_tokens": 2}}
            ),
            "usage: token counts must be integers",
        ),
    ],
)
def test_a_damaged_entry_is_a_clear_error_naming_its_file(
    tmp_path: Path, damage: Any, fault: str
) -> None:
    with ChatServer([WithUsage("north", 1, 1)]) as server:
        ask(ChatClient(llm(server), cache=ReplayCache(tmp_path)), "where?")
        (entry,) = entries(tmp_path)
        entry.write_text(damage(entry.read_text(encoding="utf-8")), encoding="utf-8")
        with pytest.raises(ReplayCacheError) as raised:
            ask(ChatClient(llm(server), cache=ReplayCache(tmp_path)), "where?")
    assert raised.value.path == entry
    assert str(entry) in str(raised.value) and fault in str(raised.value)
    assert len(server.requests) == 1  # the damage was reported, not papered over with a request


def test_a_bad_mode_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode: must be one of readwrite, replay-only"):
        ReplayCache(tmp_path, mode="write-only")  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    payload=st.dictionaries(st.text(max_size=6), json_values, max_size=5),
    scope=st.text(max_size=12),
)
def test_the_digest_ignores_key_order_and_separates_scopes(
    payload: dict[str, Any], scope: str
) -> None:
    reordered = dict(reversed(list(payload.items())))
    url = "http://model/v1/chat/completions"
    digest = request_digest(scope, url, payload)
    assert digest == request_digest(scope, url, reordered)
    assert digest != request_digest(scope + "/", url, payload)
    assert digest != request_digest(scope, url, {**payload, "extra key!": 1})


@settings(max_examples=200, deadline=None)
@given(
    message=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    usage=st.none() | st.builds(TokenUsage, st.integers(0, 10**9), st.integers(0, 10**9)),
    occurrence=st.integers(0, 10**6),
)
def test_an_entry_reads_back_what_was_stored(
    message: dict[str, Any], usage: TokenUsage | None, occurrence: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        cache = ReplayCache(directory)
        key = entry_key(request_digest("s", "u", {}), occurrence)
        cache.store(key, scope="s", url="u", payload={}, message=message, usage=usage)
        answer = cache.lookup(key, scope="s")
    assert answer is not None and (answer.message, answer.usage) == (message, usage)
