"""``StallWatch``: notices when this process stopped running for a while, so that a timeout it
caused is not blamed on a player.

A process stopped by ``kill -STOP``, in a suspended VM or on a badly starved machine finds, when
it runs again, every deadline passed at once: an engine that answered long ago (it is a process of
its own, and was not stopped) is then "late". A thread that wakes every ``tick`` seconds sees such
a stop as one wake that came ``stall`` seconds or more too late, and remembers when the last one
ended.

Example:
    >>> watch = StallWatch(tick=0.05, stall=0.5)
    >>> started = time.monotonic()
    >>> watch.stalled_since(started)  # nothing stopped this process since
    False
"""

from __future__ import annotations

import threading
import time

__all__ = ["STALLS", "StallWatch"]


class StallWatch:
    """A daemon thread, started on first use, that records the end of each stall of the process.

    Args:
        tick: seconds between two wakes of the watching thread.
        stall: how late a wake must be to count as a stall.
    """

    def __init__(self, tick: float = 0.2, stall: float = 1.0) -> None:
        self.tick, self.stall = tick, stall
        self._changed = threading.Condition()
        self._last_wake = time.monotonic()
        self._last_stall_end = float("-inf")
        self._thread: threading.Thread | None = None

    def stalled_since(self, since: float) -> bool:
        """Whether the process stalled after ``since`` (a ``time.monotonic()`` reading).

        Waits for the watching thread's next wake first (at most a few ticks), so that a stall
        that has just ended, which woke both the caller and the watcher, is already recorded.
        """
        self.watch()
        asked = time.monotonic()
        with self._changed:
            self._changed.wait_for(lambda: self._last_wake >= asked, timeout=4 * self.tick)
            return self._last_stall_end >= since

    def watch(self) -> None:
        """Start watching (once; later calls cost a lock): a stall is seen only if the thread
        ran before it, so call this before what a stall could make late."""
        with self._changed:
            if self._thread is None:
                self._last_wake = time.monotonic()
                self._thread = threading.Thread(target=self._watch, name="stall-watch", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while True:
            before = time.monotonic()
            time.sleep(self.tick)
            now = time.monotonic()
            with self._changed:
                if now - before - self.tick >= self.stall:
                    self._last_stall_end = now
                self._last_wake = now
                self._changed.notify_all()


STALLS = StallWatch()  # the process's own: one thread, started by the first caller
