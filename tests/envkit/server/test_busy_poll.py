"""``BusyPoll``: the loop polls (zero-timeout selects) for the window after a reply, then sleeps.

The window is measured on a fake clock, so whether the loop polls is decided by the test, not by
how fast this machine is; what the loop does is read off its selector's timeouts.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from chess_env.serving.app import ChessAdapter
from envkit.server import create_app
from envkit.server.busy_poll import DEFAULT_BUSY_POLL_S, BusyPoll

WINDOW = 0.5


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Records the timeout of every wait: 0 while the loop polls, > 0 or None while it sleeps."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        self.timeouts.append(timeout)
        return super().select(timeout)


def run_on_recorded_loop(
    main: Callable[[], Awaitable[None]], selector: RecordingSelector | None = None
) -> RecordingSelector:
    selector = selector or RecordingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return selector


async def replying(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "websocket.send", "text": "observation"})


async def connect_once(app: BusyPoll, scope_type: str = "websocket") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.receive", "text": "step"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": scope_type}, receive, send)
    return sent


async def rounds(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_the_loop_polls_for_the_window_after_a_reply_then_sleeps() -> None:
    clock = FakeClock()
    poll = BusyPoll(replying, window=WINDOW, clock=clock)
    seen: dict[str, Any] = {}
    selector = RecordingSelector()

    async def main() -> None:
        assert await connect_once(poll) == [{"type": "websocket.send", "text": "observation"}]
        await rounds(20)
        seen["polled"] = poll.polled_rounds
        clock.now = WINDOW + 1e-9  # the window runs out
        await rounds(5)
        seen["after"] = poll.polled_rounds
        seen["waits before"] = len(selector.timeouts)
        await asyncio.sleep(0.01)  # nothing to do: the loop sleeps through it

    run_on_recorded_loop(main, selector)
    assert seen["polled"] >= 20
    assert seen["after"] <= seen["polled"] + 1  # the last round sees the deadline passed
    assert selector.timeouts[seen["waits before"]] > 0


def test_while_polling_every_wait_is_a_zero_timeout_and_other_work_still_runs() -> None:
    clock = FakeClock()
    poll = BusyPoll(replying, window=WINDOW, clock=clock)
    woke: list[bool] = []

    async def main() -> None:
        await connect_once(poll)
        await asyncio.sleep(0.005)  # a timer elsewhere in the app fires while the loop polls
        woke.append(True)
        clock.now = WINDOW * 2

    selector = run_on_recorded_loop(main)
    assert woke == [True]
    waits_while_polling = [t for t in selector.timeouts if t != 0]
    assert selector.timeouts.count(0) > 10 and len(waits_while_polling) <= 2


def test_the_next_request_ends_the_window() -> None:
    clock = FakeClock()
    received: list[Message] = []

    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "websocket.send", "text": "first"})
        await rounds(5)
        received.append(await receive())  # the client's next message: no need to poll on
        await rounds(5)
        received.append({"type": "polled rounds", "count": poll.polled_rounds})
        await rounds(5)

    poll = BusyPoll(echo, window=WINDOW, clock=clock)
    run_on_recorded_loop(lambda: connect_once(poll))
    assert received[0]["text"] == "step"
    assert 3 <= received[1]["count"] == poll.polled_rounds  # no round after the request came


def test_a_slow_client_is_not_polled_for_until_it_is_quick_again() -> None:
    clock = FakeClock()
    polled: list[int] = []

    async def game(scope: Scope, receive: Receive, send: Send) -> None:
        for gap in (WINDOW / 10, WINDOW * 3, WINDOW / 10, WINDOW / 10):
            before = poll.polled_rounds
            await send({"type": "websocket.send", "text": "observation"})
            await rounds(5)
            polled.append(poll.polled_rounds - before)
            clock.now += gap  # the client takes this long to send its next request
            await receive()
            await rounds(2)

    poll = BusyPoll(game, window=WINDOW, clock=clock)
    run_on_recorded_loop(lambda: connect_once(poll))
    # Quick, so polled after the first reply; slow, so not after the second; quick again.
    assert [count > 0 for count in polled] == [True, True, False, True]


def test_a_stream_of_messages_with_no_request_between_polls_only_after_the_first() -> None:
    clock = FakeClock()
    polled: list[int] = []

    async def spectator(scope: Scope, receive: Receive, send: Send) -> None:
        for _ in range(3):  # events pushed to a client that sends nothing
            clock.now += WINDOW * 2  # the last event's window has run out
            before = poll.polled_rounds
            await send({"type": "websocket.send", "text": "event"})
            await rounds(5)
            polled.append(poll.polled_rounds - before)
        await receive()  # a request after all, right away: its reply polls again
        before = poll.polled_rounds
        await send({"type": "websocket.send", "text": "reply"})
        await rounds(5)
        polled.append(poll.polled_rounds - before)

    poll = BusyPoll(spectator, window=WINDOW, clock=clock)
    run_on_recorded_loop(lambda: connect_once(poll))
    assert [count > 0 for count in polled] == [True, False, False, True]


@pytest.mark.parametrize("scope_type", ["http", "lifespan"])
def test_only_websocket_replies_open_the_window(scope_type: str) -> None:
    poll = BusyPoll(replying, window=WINDOW, clock=FakeClock())

    async def main() -> None:
        await connect_once(poll, scope_type)
        await rounds(5)

    run_on_recorded_loop(main)
    assert poll.polled_rounds == 0


def test_no_polling_with_a_zero_window_or_off_the_main_thread() -> None:
    off = BusyPoll(replying, window=0, clock=FakeClock())

    async def main(app: BusyPoll) -> None:
        await connect_once(app)
        await rounds(5)

    run_on_recorded_loop(lambda: main(off))
    assert off.polled_rounds == 0

    threaded = BusyPoll(replying, window=WINDOW, clock=FakeClock())
    worker = threading.Thread(target=run_on_recorded_loop, args=(lambda: main(threaded),))
    worker.start()
    worker.join()
    assert threaded.polled_rounds == 0
    run_on_recorded_loop(lambda: main(threaded))  # the same app polls from the main thread
    assert threaded.polled_rounds >= 4


def test_polling_starts_again_on_a_new_loop_after_one_closed_mid_window() -> None:
    clock = FakeClock()  # never advances: the first loop closes while polling
    poll = BusyPoll(replying, window=WINDOW, clock=clock)

    async def main() -> None:
        await connect_once(poll)
        await rounds(5)

    run_on_recorded_loop(main)
    first = poll.polled_rounds
    run_on_recorded_loop(main)
    assert first >= 4 and poll.polled_rounds >= first + 4


@pytest.mark.parametrize("window", [-1e-3, float("inf"), float("nan")])
def test_a_bad_window_is_refused(window: float) -> None:
    with pytest.raises(ValueError, match="busy-poll window must be finite and >= 0"):
        BusyPoll(replying, window=window)


def busy_poll_windows(app: Any) -> list[float]:
    return [m.kwargs["window"] for m in app.user_middleware if m.cls is BusyPoll]


def test_create_app_polls_for_its_busy_poll_setting() -> None:
    assert busy_poll_windows(create_app(ChessAdapter)) == [DEFAULT_BUSY_POLL_S]
    assert busy_poll_windows(create_app(ChessAdapter, busy_poll=0.002)) == [0.002]
    with pytest.raises(
        ValueError, match="busy-poll window must be finite and >= 0 seconds, got -1"
    ):
        create_app(ChessAdapter, busy_poll=-1)  # at once, not when the server starts
