"""``envkit.client.session`` waiting out a server's rate limit, driven by a script on a fake clock.

The session's generators ask for their I/O; ``Script`` answers each ``Receive`` with the next
frame it holds and each ``Sleep`` by moving its clock, so these tests need no socket and no time.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest

from envkit.client import ServerError
from envkit.client.session import (
    MIN_RATE_WAIT_S,
    RATE_WAIT_S,
    Open,
    Receive,
    Send,
    Session,
    Sleep,
    Steps,
    reply_digest,
)


class Script:
    """Performs a session's I/O: frames to receive, in order; sleeps on a fake clock."""

    def __init__(self, *frames: dict[str, Any]) -> None:
        self.frames = deque(frames)
        self.now = 0.0
        self.sent: list[str] = []
        self.slept: list[float] = []

    def run(self, steps: Steps) -> Any:
        reply: Any = None
        while True:
            try:
                io = steps.send(reply)
            except StopIteration as done:
                return done.value
            reply = self.perform(io)

    def perform(self, io: Any) -> Any:
        match io:
            case Open():
                return "connection"
            case Send(_, text):
                self.sent.append(text)
            case Receive():
                return json.dumps(self.frames.popleft())
            case Sleep(seconds):
                self.slept.append(seconds)
                self.now += seconds
        return None


def observation(count: int) -> dict[str, Any]:
    return {"type": "observation", "data": {"observation": {"count": count}, "done": False}}


def refusal(retry_after: Any = None, code: str = "RATE_LIMITED") -> dict[str, Any]:
    data = {"code": code, "message": "over the limit"}
    if retry_after is not None:
        data["retry_after"] = retry_after
    return {"type": "error", "data": data}


def session(**options: Any) -> Session:
    return Session("http://127.0.0.1:8000", timeout=1.0, backoff=None, **options)


RESET = Session.reset_message({"seed": 1})
STEP = {"type": "step", "data": {"delta": 1}}


def test_a_refused_message_is_sent_again_after_the_wait_and_remembered_once() -> None:
    client = session()
    script = Script(refusal(7), observation(0), refusal(2), refusal(3), observation(1))
    assert script.run(client.call(RESET))["observation"] == {"count": 0}
    assert script.run(client.call(STEP))["observation"] == {"count": 1}
    assert script.slept == [0.0, 7.0, 2.0, 3.0]  # 0.0: the first connection's try
    assert script.now == 12.0
    reset, step = json.dumps(RESET), json.dumps(STEP)
    assert script.sent == [reset, reset, step, step, step]
    assert client.episode is not None
    assert client.episode.sent == [
        (reset, reply_digest(observation(0)["data"])),
        (step, reply_digest(observation(1)["data"])),
    ]


def test_the_waits_of_one_message_are_bounded_in_all() -> None:
    client = session(rate_limit_wait=10)
    script = Script(observation(0), refusal(4), refusal(4), refusal(4))
    script.run(client.call(RESET))
    with pytest.raises(ServerError) as refused:
        script.run(client.call(STEP))
    assert refused.value.code == "RATE_LIMITED" and refused.value.retry_after == 4
    assert "the 4 s asked for would pass rate_limit_wait=10 s" in str(refused.value)
    assert "with 8 s waited already" in str(refused.value)
    assert script.slept == [0.0, 4.0, 4.0]  # the third wait was not begun
    assert client.episode is not None and len(client.episode.sent) == 1  # the step was not played
    with pytest.raises(ServerError, match="would pass rate_limit_wait=0 s"):
        Script(refusal(1)).run(session(rate_limit_wait=0).call(RESET))


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [(None, RATE_WAIT_S), (0, MIN_RATE_WAIT_S), ("soon", RATE_WAIT_S), (2.5, 2.5)],
)
def test_a_refusal_without_a_usable_wait_waits_a_default(retry_after: Any, wait: float) -> None:
    script = Script(refusal(retry_after), observation(0))
    script.run(session().call(RESET))
    assert script.slept == [0.0, wait]


def test_other_refusals_are_not_sent_again() -> None:
    script = Script(refusal(1, code="VALIDATION_ERROR"))
    with pytest.raises(ServerError, match="VALIDATION_ERROR"):
        script.run(session().call(RESET))
    assert script.slept == [0.0] and len(script.sent) == 1


def test_a_replay_waits_out_the_rate_limit_and_still_checks_every_reply() -> None:
    client = session()
    script = Script(observation(0), observation(1))
    script.run(client.call(RESET))
    script.run(client.call(STEP))
    client.connection = None  # dropped between calls: the next call replays on a new one
    script.frames.extend([refusal(5), observation(0), refusal(5), observation(1), observation(2)])
    assert script.run(client.call(STEP))["observation"] == {"count": 2}
    assert client.restored == 1 and script.slept[-2:] == [5.0, 5.0]
    assert client.episode is not None and len(client.episode.sent) == 3


def test_rate_limit_wait_must_be_seconds() -> None:
    for wrong in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="rate_limit_wait must be seconds >= 0"):
            session(rate_limit_wait=wrong)
