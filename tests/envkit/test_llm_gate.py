"""``EndpointGate``: at most K requests in flight per endpoint, and never held through a backoff."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from envkit.llm import ChatClient, EndpointGate, LLMAgent, LLMSettings

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from chat_server import ChatServer, HttpError, Slow

JOIN_SECONDS = 30.0  # a deadlock guard only: a healthy run finishes long before


def settings(server: ChatServer, name: str = "Seat", **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "name": name,
        "model_name": "test-model",
        "base_url": server.base_url,
        "api_key_env": "POLYARENA_TEST_GATE_KEY",
        "timeout_seconds": 10.0,
        "endpoint_retries": 0,
        **overrides,
    }
    return LLMSettings(**values)


class CountingGate(EndpointGate):
    """A gate that counts a request as done before it frees the slot, so a server that counts
    arrivals minus done requests never counts a request that has left the gate."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.done = 0
        self._done_lock = threading.Lock()

    @contextmanager
    def hold(self, endpoint: str) -> Iterator[None]:
        with super().hold(endpoint):
            try:
                yield
            finally:
                with self._done_lock:
                    self.done += 1


class OverlapCounter:
    """A server script: answers every request slowly and records how many were in the gate."""

    def __init__(self, gate: CountingGate) -> None:
        self.gate, self.arrived, self.peak = gate, 0, 0

    def __call__(self, request: dict[str, Any]) -> Slow:
        self.arrived += 1  # the server calls its script under its own lock
        self.peak = max(self.peak, self.arrived - self.gate.done)
        return Slow(0.05, '{"move": "stay"}')


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_seats_in_threads_never_have_more_than_the_limit_in_flight(limit: int) -> None:
    gate = CountingGate(limit)
    counter = OverlapCounter(gate)
    with ChatServer(counter) as server:
        agents = [
            LLMAgent(
                settings(server, f"Seat_{seat}"),
                signature="(move :string) -> :any",
                client=ChatClient(settings(server, f"Seat_{seat}"), gate=gate),
            )
            for seat in range(6)
        ]
        with ThreadPoolExecutor(max_workers=6) as pool:
            turns = [pool.submit(agent.decide, "Your move?") for agent in agents for _ in range(3)]
            actions = [turn.result(timeout=JOIN_SECONDS) for turn in turns]
    assert actions == [{"move": "stay"}] * 18
    assert len(server.requests) == counter.arrived == gate.done == 18
    assert 1 <= counter.peak <= limit
    assert gate.in_flight(server.base_url) == 0


def test_the_limit_is_reached_when_that_many_ask_at_once() -> None:
    gate = EndpointGate(3)
    all_inside = threading.Barrier(3, timeout=JOIN_SECONDS)  # breaks if fewer can enter

    def enter() -> int:
        with gate.hold("http://model/v1"):
            all_inside.wait()
            seen = gate.in_flight("http://model/v1/")
            all_inside.wait()  # nobody leaves before all have looked
            return seen

    with ThreadPoolExecutor(max_workers=3) as pool:
        seen = list(pool.map(lambda _: enter(), range(3)))
    assert seen == [3, 3, 3]


def test_endpoints_have_their_own_slots_and_a_trailing_slash_is_the_same_endpoint() -> None:
    gate = EndpointGate(1)
    with gate.hold("http://a/v1/"), gate.hold("http://b/v1"):
        assert (gate.in_flight("http://a/v1"), gate.in_flight("http://b/v1/")) == (1, 1)
        assert gate.in_flight("http://c/v1") == 0


def test_a_slot_is_freed_when_the_request_raises() -> None:
    gate = EndpointGate(1)
    with pytest.raises(RuntimeError), gate.hold("http://a/v1"):
        raise RuntimeError("the request failed")
    assert gate.in_flight("http://a/v1") == 0
    with gate.hold("http://a/v1"):  # would block forever had the slot leaked
        assert gate.in_flight("http://a/v1") == 1


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "2"])
def test_a_bad_limit_is_refused_by_name(limit: Any) -> None:
    with pytest.raises(ValueError, match="limit: must be an int of at least 1"):
        EndpointGate(limit)


def test_a_retry_backoff_does_not_hold_the_gate() -> None:
    """Seat A meets a 429 and sleeps; while it sleeps, seat B gets the only slot and its answer."""
    first_of_a = threading.Event()

    def script(request: dict[str, Any]) -> Any:
        content = request["messages"][-1]["content"]
        if content == "A" and not first_of_a.is_set():
            first_of_a.set()
            return HttpError(429, "slow down", {"Retry-After": "7"})
        return f"answer to {content}"

    gate = EndpointGate(1)
    during_backoff: list[Any] = []
    with ChatServer(script) as server:
        client_b = ChatClient(settings(server, "B"), gate=gate)

        def sleep_while_b_asks(seconds: float) -> None:
            during_backoff.append((seconds, gate.in_flight(server.base_url)))
            seat_b = ThreadPoolExecutor(max_workers=1)
            answer = seat_b.submit(client_b.complete, [{"role": "user", "content": "B"}])
            during_backoff.append(answer.result(timeout=JOIN_SECONDS)["content"])
            seat_b.shutdown()

        client_a = ChatClient(
            settings(server, "A", endpoint_retries=2), sleep=sleep_while_b_asks, gate=gate
        )
        reply = client_a.complete([{"role": "user", "content": "A"}])
        client_a.close()
        client_b.close()
    assert during_backoff == [(7.0, 0), "answer to B"]
    assert reply["content"] == "answer to A"
    assert client_a.last_retries == 1
    contents = [request.json["messages"][-1]["content"] for request in server.requests]
    assert contents == ["A", "B", "A"]
