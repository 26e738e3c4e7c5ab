"""``SessionStore``: the live env instances, by UUID4 id, with a cap and an idle expiry.

OpenEnv's HTTP routes build a fresh env per call, which cannot play a game; here ``/reset`` opens
a session and later calls name it. A WebSocket connection holds one session for its lifetime
(``pinned``: it never expires): its own, or an HTTP session it ``attach``-es to (OpenEnv's
``/ws?session_id=``, so that its MCP client's HTTP tool calls and WebSocket resets reach one env).
Idle sessions are swept whenever a session is opened or used, so no background task is needed.

Env calls run in worker threads: ``use`` holds the session's lock for the whole call, so two
requests on one session never interleave, while other sessions go on in parallel.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from envkit.server.adapter import EnvAdapter
from envkit.server.errors import CapacityError, UnknownSessionError

__all__ = ["Session", "SessionStore"]

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Session:
    """One env instance and the episode bookkeeping OpenEnv's state reports."""

    adapter: EnvAdapter
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    pinned: bool = False
    episode_id: str | None = None
    step_count: int = 0
    last_used: float = 0.0
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class SessionStore:
    """At most ``max_sessions`` sessions; unpinned ones close after ``idle_timeout`` seconds idle.

    Example:
        >>> from unittest.mock import Mock
        >>> store = SessionStore(Mock, max_sessions=1)
        >>> session = store.create()
        >>> with store.use(session.id) as same:
        ...     same is session
        True
        >>> store.create()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        envkit.server.errors.CapacityError: all 1 sessions are in use; close one ...
    """

    def __init__(
        self,
        factory: Callable[[], EnvAdapter],
        *,
        max_sessions: int = 64,
        idle_timeout: float | None = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive or None, got {idle_timeout}")
        self.factory, self.max_sessions, self.idle_timeout = factory, max_sessions, idle_timeout
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, *, pinned: bool = False) -> Session:
        """A new session with a fresh env, or ``CapacityError`` when every slot is taken."""
        self.expire_idle()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise CapacityError(
                    f"all {self.max_sessions} sessions are in use; close one (DELETE "
                    "/sessions/{id}, or close a WebSocket) or wait for idle ones to expire"
                    + (f" after {self.idle_timeout:g} s" if self.idle_timeout else "")
                )
            session = Session(self.factory(), pinned=pinned, last_used=self.clock())
            self._sessions[session.id] = session
        return session

    def attach(self, session_id: str) -> Session:
        """Pin an open session to one WebSocket until ``detach``; a second one is refused."""
        self.expire_idle()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise UnknownSessionError(f"no session {session_id} to attach to")
            if session.pinned:
                raise UnknownSessionError(
                    f"session {session_id} already has a WebSocket", reason="already_attached"
                )
            session.pinned = True
        return session

    def detach(self, session: Session) -> None:
        """The WebSocket left: the session idles (and may expire) again, but stays open."""
        with self._lock:
            session.pinned, session.last_used = False, self.clock()

    @contextmanager
    def use(self, session_id: str) -> Iterator[Session]:
        """The session, locked for the caller and marked as used."""
        self.expire_idle()
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSessionError(
                f"no session {session_id}: it was never opened, was closed, or expired after "
                "idling; POST /reset opens a new one"
            )
        with session.lock:
            if session.closed:
                raise UnknownSessionError(f"session {session_id} was closed")
            session.last_used = self.clock()
            try:
                yield session
            finally:
                session.last_used = self.clock()

    def close(self, session_id: str) -> bool:
        """Close the session once its current call is done; False if there was none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        with session.lock:
            self._shut(session)
        return True

    def close_all(self) -> None:
        """Close every session (the server is stopping)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            with session.lock:
                self._shut(session)

    def expire_idle(self) -> list[str]:
        """Close the unpinned sessions idle for longer than ``idle_timeout``; their ids."""
        if self.idle_timeout is None:
            return []
        deadline = self.clock() - self.idle_timeout
        expired = []
        with self._lock:
            for session in list(self._sessions.values()):
                # A session in use is not idle: skip it rather than wait for its lock.
                if session.pinned or session.last_used > deadline:
                    continue
                if session.lock.acquire(blocking=False):
                    del self._sessions[session.id]
                    expired.append(session)
        for session in expired:
            self._shut(session)
            session.lock.release()
        return [session.id for session in expired]

    @staticmethod
    def _shut(session: Session) -> None:
        session.closed = True
        try:
            session.adapter.close()
        except Exception:  # one env failing to close must not keep the others open
            logger.exception("closing session %s failed", session.id)
