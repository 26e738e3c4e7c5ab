"""``SessionStore``: the live env instances, by UUID4 id, with a cap and an idle expiry.

OpenEnv's HTTP routes build a fresh env per call, which cannot play a game; here ``/reset`` opens
a session and later calls name it. A WebSocket connection holds one session for its lifetime
(``pinned``: it never expires): its own, or an HTTP session it ``attach``-es to (OpenEnv's
``/ws?session_id=``, so that its MCP client's HTTP tool calls and WebSocket resets reach one env).
Idle sessions are swept when a session is opened or used, at most once per ``sweep_interval``
(a sweep walks every session; per WebSocket message that would grow with the sessions open), so
no background task is needed. Between sweeps an expired session is still refused when looked up.
A sweep closes envs, and closing one can take milliseconds (quitting a Stockfish process),
so the event loop's entry, ``use(..., wait=False)``, never sweeps: calls on worker threads do.

A client (its address, as ``current_client`` holds it for the request or WebSocket in hand)
holds at most ``max_sessions_per_client`` of the sessions, so one flood of resets cannot take
every slot; over it ``create`` raises ``ClientSessionLimitError``. Closing, or expiry, frees a
client's slot as it frees the store's.

A session id is a capability: whoever has it may use the session. With ``owner_check`` (for a
server several users share) each new session also gets a secret ``token``, which only the reply
that opened it carries; every later ``use``, ``attach`` and ``close`` of it must present that
token (``current_token``, from the request's ``X-Session-Token`` header, or passed as
``token=``), compared in constant time; else ``SessionTokenError`` (403). A WebSocket's own
session is used by that connection only, which presents its token.

Env calls run in worker threads: ``use`` holds the session's lock for the whole call, so two
requests on one session never interleave, while other sessions go on in parallel. A step of an
env that never blocks may run on the event loop instead: ``use(..., wait=False)`` then takes the
lock only if it is free (``SessionBusyError`` if not), so the loop never waits on a worker.
"""

from __future__ import annotations

import hmac
import logging
import math
import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from envkit.server.adapter import EnvAdapter
from envkit.server.errors import CapacityError, ErrorCode, ServiceError, UnknownSessionError

__all__ = [
    "ClientSessionLimitError",
    "Session",
    "SessionBusyError",
    "SessionStore",
    "SessionTokenError",
    "current_client",
    "current_token",
]

logger = logging.getLogger(__name__)

CLIENT_SESSION_LIMIT = "client_session_limit"

current_client: ContextVar[str | None] = ContextVar("current_client", default=None)
"""The address of the client whose request or WebSocket is being served; set by
``envkit.server.access.ClientAddress`` and copied into the worker threads the routes use, so that
``SessionStore.create`` knows whose session it opens without every route passing it on."""

current_token: ContextVar[str | None] = ContextVar("current_token", default=None)
"""The owner token the request or WebSocket presents (its ``X-Session-Token`` header), set by
``envkit.server.access.SessionTokens`` and checked by a store with ``owner_check``."""


class ClientSessionLimitError(CapacityError):
    """One client holds its share of the sessions: 503 CAPACITY_REACHED, with ``reason``
    ``client_session_limit`` (a subclass, so that every route and client that handles a full
    store handles this too: the WebSocket closes 1013, MCP answers its server error)."""


class SessionTokenError(ServiceError):
    """A session used without its owner's token (``SessionStore(owner_check=True)``): 403
    SESSION_ERROR, reason ``session_token``; the message names the header, never the token."""

    code = ErrorCode.SESSION_ERROR
    status = 403

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} is not yours to use: send the session_token the reply that "
            "opened it carried, in the X-Session-Token header",
            reason="session_token",
        )


class SessionBusyError(Exception):
    """``use(..., wait=False)``: another call holds the session; run this one where it can wait."""


@dataclass(eq=False)
class Session:
    """One env instance and the episode bookkeeping OpenEnv's state reports.

    Example:
        >>> from chess_env.serving.app import ChessAdapter
        >>> session = SessionStore(ChessAdapter).create()
        >>> type(session.adapter).__name__, uuid.UUID(session.id).version, session.step_count
        ('ChessAdapter', 4, 0)
    """

    adapter: EnvAdapter
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    pinned: bool = False
    owner: str | None = None
    token: str | None = field(default=None, repr=False)
    episode_id: str | None = None
    step_count: int = 0
    last_used: float = 0.0
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class SessionLease:
    """``SessionStore.use``'s context manager; a class because ``contextlib.contextmanager``'s
    generator was most of what it took to lock a session for each WebSocket step."""

    __slots__ = ("_session", "_session_id", "_store", "_token", "_wait")

    def __init__(self, store: SessionStore, session_id: str, wait: bool, token: str | None) -> None:
        self._store, self._session_id, self._wait = store, session_id, wait
        self._token = token
        self._session: Session | None = None

    def __enter__(self) -> Session:
        self._session = self._store._lock_for_use(self._session_id, self._wait, self._token)
        return self._session

    def __exit__(self, *_: object) -> None:
        session = self._session
        assert session is not None
        session.last_used = self._store.clock()
        session.lock.release()


class SessionStore:
    """At most ``max_sessions`` sessions; unpinned ones close after ``idle_timeout`` seconds idle.

    Args:
        factory: makes the env of a new session.
        max_sessions: open sessions at most (default 64).
        max_sessions_per_client: open sessions at most per client address (None: no cap of
            its own, the default; ``serve`` sets half of ``max_sessions``). Sessions opened with
            no client known (``current_client`` unset) are not counted against any client.
        idle_timeout: seconds after which an unused, unpinned session closes (None: never;
            default 600).
        clock: seconds, for idle time (default ``time.monotonic``; tests pass a fake one).
        sweep_interval: seconds between two sweeps for idle sessions (default: a tenth of
            ``idle_timeout``, at most 1 s). A session idle too long is refused when looked up
            even before the sweep that closes it, and a full store sweeps before refusing.
        owner_check: give each new session a secret ``token`` that every later use, attach
            and close must present (default False: the id alone is enough, as OpenEnv's
            clients expect).

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
        max_sessions_per_client: int | None = None,
        idle_timeout: float | None = 600.0,
        clock: Callable[[], float] = time.monotonic,
        sweep_interval: float | None = None,
        owner_check: bool = False,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if max_sessions_per_client is not None and max_sessions_per_client < 1:
            raise ValueError(
                f"max_sessions_per_client must be at least 1 or None, got {max_sessions_per_client}"
            )
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive or None, got {idle_timeout}")
        if sweep_interval is not None and sweep_interval <= 0:
            raise ValueError(f"sweep_interval must be positive or None, got {sweep_interval}")
        self.factory, self.max_sessions, self.idle_timeout = factory, max_sessions, idle_timeout
        self.max_sessions_per_client = max_sessions_per_client
        self.clock, self.owner_check = clock, owner_check
        if sweep_interval is None and idle_timeout is not None:
            sweep_interval = min(idle_timeout / 10, 1.0)
        self.sweep_interval = sweep_interval
        self._next_sweep = -math.inf
        self._sessions: dict[str, Session] = {}
        self._owned: Counter[str] = Counter()  # open sessions per client address
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def owned(self, client: str) -> int:
        """How many open sessions ``client`` holds."""
        return self._owned[client]

    def create(self, *, pinned: bool = False, owner: str | None = None) -> Session:
        """A new session with a fresh env, or ``CapacityError`` when every slot is taken
        (``ClientSessionLimitError`` when ``owner``, by default ``current_client``, holds its
        share)."""
        owner = owner if owner is not None else current_client.get()
        self._sweep_if_due()
        if len(self._sessions) >= self.max_sessions or self._over_share(owner):
            self.expire_idle()  # an expired session must not hold the slot until the next sweep
        with self._lock:
            self._check_room(owner)
            token = secrets.token_urlsafe(32) if self.owner_check else None
            session = Session(
                self.factory(), pinned=pinned, owner=owner, token=token, last_used=self.clock()
            )
            self._sessions[session.id] = session
            if owner is not None:
                self._owned[owner] += 1
        return session

    def _over_share(self, owner: str | None) -> bool:
        cap = self.max_sessions_per_client
        return owner is not None and cap is not None and self._owned[owner] >= cap

    def _check_room(self, owner: str | None) -> None:
        """Raise why no session can open now (the caller holds ``_lock``)."""
        wait = "close one (DELETE /sessions/{id}, or close a WebSocket) or wait for idle ones"
        wait += f" to expire after {self.idle_timeout:g} s" if self.idle_timeout else " to expire"
        if self._over_share(owner):
            raise ClientSessionLimitError(
                f"this client ({owner}) holds {self.max_sessions_per_client} sessions, the most "
                f"one client may (--max-sessions-per-client); {wait}",
                reason=CLIENT_SESSION_LIMIT,
            )
        if len(self._sessions) >= self.max_sessions:
            raise CapacityError(f"all {self.max_sessions} sessions are in use; {wait}")

    def attach(self, session_id: str) -> Session:
        """Pin an open session to one WebSocket until ``detach``; a second one is refused."""
        self._sweep_if_due()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or self._expired(session, self.clock()):
                raise UnknownSessionError(f"no session {session_id} to attach to")
            _check_token(session, current_token.get())
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

    def use(self, session_id: str, *, wait: bool = True, token: str | None = None) -> SessionLease:
        """The session, locked for the caller and marked as used: ``with store.use(id) as s``.

        With ``wait=False`` (for the event loop), ``SessionBusyError`` instead of waiting for
        another call to end, and no sweep. ``token``: the owner token presented (default
        ``current_token``'s).
        """
        return SessionLease(self, session_id, wait, token)

    def _lock_for_use(self, session_id: str, wait: bool, token: str | None) -> Session:
        """``use``'s entry: the session, locked and marked as used, or why not (unlocked)."""
        if wait:  # not on the event loop, where closing the swept envs would stall every client
            self._sweep_if_due()
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSessionError(
                f"no session {session_id}: it was never opened, was closed, or expired after "
                "idling; POST /reset opens a new one"
            )
        _check_token(session, token if token is not None else current_token.get())
        if not session.lock.acquire(blocking=wait):
            raise SessionBusyError(session_id)
        try:
            if session.closed:
                raise UnknownSessionError(f"session {session_id} was closed")
            now = self.clock()
            if self._expired(session, now):  # idle too long, not swept yet: it is gone now
                if wait:  # (the loop leaves the closing to a worker's sweep, as above)
                    self._expire(session)
                raise UnknownSessionError(
                    f"session {session_id} expired after idling for over {self.idle_timeout:g} s; "
                    "POST /reset opens a new one"
                )
        except BaseException:
            session.lock.release()
            raise
        session.last_used = now
        return session

    def close(self, session_id: str, *, token: str | None = None) -> bool:
        """Close the session once its current call is done; False if there was none.
        ``token``: the owner token presented (default ``current_token``'s)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                _check_token(session, token if token is not None else current_token.get())
                del self._sessions[session_id]
                self._disown(session)
        if session is None:
            return False
        with session.lock:
            self._shut(session)
        return True

    def close_all(self) -> None:
        """Close every session (the server is stopping)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
            self._owned.clear()
        for session in sessions:
            with session.lock:
                self._shut(session)

    def expire_idle(self) -> list[str]:
        """Close the unpinned sessions idle for longer than ``idle_timeout``; their ids."""
        if self.idle_timeout is None:
            return []
        now = self.clock()
        expired = []
        with self._lock:
            for session in list(self._sessions.values()):
                # A session in use is not idle: skip it rather than wait for its lock.
                if not self._expired(session, now):
                    continue
                if session.lock.acquire(blocking=False):
                    del self._sessions[session.id]
                    self._disown(session)
                    expired.append(session)
        for session in expired:
            self._shut(session)
            session.lock.release()
        return [session.id for session in expired]

    def _sweep_if_due(self) -> None:
        if self.sweep_interval is None:
            return
        now = self.clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_interval
            self.expire_idle()

    def _expired(self, session: Session, now: float) -> bool:
        return (
            self.idle_timeout is not None
            and not session.pinned
            and session.last_used <= now - self.idle_timeout
        )

    def _expire(self, session: Session) -> None:
        """Close ``session``, whose lock the caller holds, as a sweep would have."""
        with self._lock:
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]
                self._disown(session)
        self._shut(session)

    def _disown(self, session: Session) -> None:
        """Free the owner's slot of a session just taken out of the store (under ``_lock``)."""
        if session.owner is None:
            return
        self._owned[session.owner] -= 1
        if not self._owned[session.owner]:
            del self._owned[session.owner]  # forget clients with nothing open: bounded memory

    @staticmethod
    def _shut(session: Session) -> None:
        session.closed = True
        try:
            session.adapter.close()
        except Exception:  # one env failing to close must not keep the others open
            logger.exception("closing session %s failed", session.id)


def _check_token(session: Session, presented: str | None) -> None:
    """``SessionTokenError`` unless ``session`` has no token or ``presented`` is it (compared in
    constant time, as bytes: a header may hold what ASCII has not)."""
    if session.token is None:
        return
    given = (presented or "").encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(given, session.token.encode()):
        raise SessionTokenError(session.id)
