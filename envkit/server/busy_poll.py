"""``BusyPoll``: after a WebSocket reply, keep the event loop polling its sockets for a while.

An RL client steps in a tight loop: its next message comes a fraction of a millisecond after our
reply. A server process that goes to sleep in ``epoll_wait`` meanwhile pays to be woken (on a VM the
idle CPU halts and the wake-up is an interrupt through the hypervisor) and then runs the step on
cold caches, a sizeable part of a served step (``benchmarks/server_throughput`` measures it: the
envkit server with busy polling off). Polling for a while instead is the spin-then-block strategy of
Linux's ``busy_poll``, Seastar and Aeron.

The window opens when a reply is handed to the transport and closes at the next incoming message or
when it runs out, so the loop is never kept hot while it waits for a worker thread (which would then
wait for the GIL). A connection polls only while its client is quick: when its last request came
later than ``window`` after our reply (a policy network thinking, an LLM answering), it sleeps as
usual until a request comes quickly again; nor does a connection the server streams messages to (a
spectator's events), which sends no request to wait for. Polling for a client that thinks a
millisecond or more between steps would slow it (on a small machine the polling CPU is taken from
the client's processes) and burn CPU time on every step. While polling, the loop still serves
everything else: polling only means it checks its sockets with a zero timeout instead of sleeping
until one is ready.

Only WebSocket replies open a window: an HTTP client's own cost per request (about a millisecond for
httpx) is beyond any useful window, and ASGI gives no connection to learn a client's pace on. Only a
loop in the process's main thread polls, as in a server process of its own (``python -m chess_env
serve``, uvicorn's workers): a server in a thread of a bigger process (a notebook, a test's client,
``server_throughput --same-process``) would keep the GIL from that process's other threads while it
polls, and slow a client in that process.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DEFAULT_BUSY_POLL_S", "BusyPoll", "check_window"]

DEFAULT_BUSY_POLL_S = 0.5e-3


def check_window(window: float) -> None:
    """A ``ValueError`` naming the window unless it is finite and >= 0 seconds."""
    if not 0 <= window < float("inf"):
        raise ValueError(f"the busy-poll window must be finite and >= 0 seconds, got {window}")


class BusyPoll:
    """ASGI middleware: poll (do not sleep) for ``window`` seconds after a WebSocket reply to
    a client whose last request came within ``window`` of the reply before it.

    ``clock`` measures the window and the client's pace (tests pass a fake one).

    Example:
        >>> import asyncio
        >>> async def hello(scope, receive, send):
        ...     await send({"type": "websocket.send", "text": "hi"})
        >>> async def connect(app):
        ...     async def send(message):
        ...         pass
        ...     await app({"type": "websocket"}, None, send)
        ...     await asyncio.sleep(0.02)  # the window runs out meanwhile
        >>> poll = BusyPoll(hello, window=0.01)
        >>> asyncio.run(connect(poll))
        >>> poll.polled_rounds > 0
        True
    """

    def __init__(
        self,
        app: ASGIApp,
        window: float = DEFAULT_BUSY_POLL_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        check_window(window)
        self.app, self.window, self.clock = app, window, clock
        self.polled_rounds = 0  # loop iterations spent polling (tests read it)
        self._deadline = 0.0
        self._polling_on: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or not self.window:
            await self.app(scope, receive, send)
            return
        replied_at: float | None = None  # when our last message went out, if none came since
        quick = True  # whether the client's last request came within the window of our reply

        async def receive_and_learn() -> Message:
            nonlocal quick, replied_at
            message = await receive()
            if message["type"] == "websocket.receive":
                self._deadline = 0.0  # what the polling waited for came
                if replied_at is not None:
                    quick = self.clock() - replied_at < self.window
                replied_at = None
            return message

        async def send_and_poll(message: Message) -> None:
            nonlocal quick, replied_at
            await send(message)
            if message["type"] == "websocket.send":
                if replied_at is not None:  # a second message with no request between: a
                    quick = False  # stream (spectators' events), where no reply is awaited
                replied_at = self.clock()
                if quick:
                    self._poll_for_window()

        await self.app(scope, receive_and_learn, send_and_poll)

    def _poll_for_window(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self._deadline = self.clock() + self.window
        loop = asyncio.get_running_loop()
        if self._polling_on is not loop:  # not yet, or on a loop that has since closed
            self._polling_on = loop
            loop.call_soon(self._poll)

    def _poll(self) -> None:
        """A ready callback makes the loop's next poll use a zero timeout; so, until the
        deadline, this reschedules itself."""
        if self.clock() < self._deadline:
            self.polled_rounds += 1
            asyncio.get_running_loop().call_soon(self._poll)
        else:
            self._polling_on = None
