"""Games and sessions in memory for a server: ``StateManager``, bounded, thread-safe, archived.

- At most ``max_games`` games (100). ``create_game`` first cleans up idle games, then, when still
  full, evicts the least recently updated game, finished games before unfinished ones.
- Every game has its own ``GameSession`` from creation (``session_of``): each change of the game
  counts as activity on it, and it turns inactive when the game ends. ``create_session`` opens
  more sessions on a game (for clients), whose activity is only what ``touch`` records.
- ``cleanup_idle()`` drops the games not updated for ``idle_timeout``, and the sessions without
  activity for as long. A game's sessions go with it.
- With ``archive_dir``, no game leaves memory unrecorded: a game is appended to ``games.jsonl``
  (one ``Game`` per line) and ``games.pgn`` once, when it finishes, or unfinished when it is
  evicted, cleaned up or the manager closes. Each append is fsynced, or cut off again when it
  fails, so a file never holds half a record.
- Archive faults: a directory that cannot take a file is refused at once
  (``UnwritableArchiveError``, a ``ValueError``). A write that fails later (disk full) leaves
  its record waiting in memory, retried before each new game and each ``cleanup_idle``, each
  file's part written once. A game whose record cannot be written stays in memory, so
  ``create_game`` raises ``ArchiveError`` instead of making room. ``close()`` drops every game,
  then raises ``ArchiveError`` naming those it could not archive.
- Thread-safe: a move is checked outside the lock (it takes a millisecond or more), and checked
  again should its game have changed meanwhile, so no game's move waits for another's.
- ``UnknownGameError`` and ``SessionNotFoundError``: ``KeyError`` subclasses naming the id (the
  first is also the service's 404).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

from chess_env.core.game import AgentConfig, Color, Game, GameSession, GameStatus, ResignTermination

__all__ = [
    "ARCHIVE_FILES",
    "ArchiveError",
    "SessionNotFoundError",
    "StateManager",
    "UnknownGameError",
    "UnwritableArchiveError",
]

logger = logging.getLogger(__name__)

# Each archived game is one record in each file, written in this order.
ARCHIVE_FILES = ("games.jsonl", "games.pgn")


class UnknownGameError(KeyError):
    """No game with this id in memory (never created, or evicted or cleaned up since). The
    service answers it as a 404 ``unknown_game`` (``chess_env.serving.service.errors``)."""

    def __init__(self, game_id: str) -> None:
        super().__init__(game_id)
        self.game_id = game_id

    def __str__(self) -> str:  # KeyError would show only the quoted id
        return f"no game {self.game_id!r} in memory (unknown, or evicted or idle and cleaned up)"


class SessionNotFoundError(KeyError):
    """No session with this id (never created, idle and cleaned up, or its game is gone)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id

    def __str__(self) -> str:
        return f"no session {self.session_id!r} (unknown, idle and cleaned up, or its game is gone)"


class ArchiveError(OSError):
    """The archive directory did not take a write (disk full, permission revoked, ...).

    ``game_ids`` are the games whose records are not (wholly) written; ``reason`` is the OS's
    reason, e.g. "No space left on device" (unlike the path, fit to show a client).
    """

    def __init__(
        self, message: str, directory: Path, reason: str, game_ids: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.directory, self.reason, self.game_ids = directory, reason, tuple(game_ids)


class UnwritableArchiveError(ArchiveError, ValueError):
    """The archive directory cannot take a file at all: refused when the manager is made, not
    at the first eviction (a ``ValueError``: the directory given is unusable)."""


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class StateManager:
    """The games and sessions a server holds, safe to call from several threads.

    Args:
        max_games: the most games held at once (default 100).
        idle_timeout: a game not updated (or a session without activity) for longer is cleaned
            up; a ``timedelta`` or seconds (default 30 minutes).
        archive_dir: where ``games.jsonl`` and ``games.pgn`` are appended (created if missing;
            ``UnwritableArchiveError`` unless a file can be created in it); None keeps no
            archive.
        clock: returns the current time, timezone-aware (default: UTC now); tests pass a fake.

    Example:
        >>> agent = dict(personality="balanced", model_name="m", system_prompt="Play well.")
        >>> manager = StateManager(max_games=10)
        >>> game = manager.create_game(AgentConfig(agent_id="white", name="W", **agent),
        ...                            AgentConfig(agent_id="black", name="B", **agent))
        >>> manager.apply_move(game.game_id, "e4").board_state.fen
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1'
        >>> [g.game_id for g in manager.list_games("in_progress")] == [game.game_id]
        True
    """

    def __init__(
        self,
        max_games: int = 100,
        idle_timeout: timedelta | float = timedelta(minutes=30),
        archive_dir: str | os.PathLike[str] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games}")
        if not isinstance(idle_timeout, timedelta):
            idle_timeout = timedelta(seconds=idle_timeout)
        if idle_timeout <= timedelta(0):
            raise ValueError(f"idle_timeout must be positive, got {idle_timeout}")
        self.max_games = max_games
        self.idle_timeout = idle_timeout
        self.archive_dir = None if archive_dir is None else Path(archive_dir)
        if self.archive_dir is not None:
            _check_writable(self.archive_dir)  # a bad path fails now, not at the first eviction
        self._clock = clock
        self._games: dict[str, Game] = {}
        self._sessions: dict[str, GameSession] = {}
        self._session_of: dict[str, str] = {}  # game id -> the id of the game's own session
        self._recorded: set[str] = set()  # finished games in memory, their records written or due
        # Records not (wholly) written: game id -> file name -> text, oldest first.
        self._unwritten: dict[str, dict[str, str]] = {}
        self._lock = threading.RLock()
        self._closed = False

    # -- games ----------------------------------------------------------------------------------

    def create_game(self, white: AgentConfig, black: AgentConfig, fen: str | None = None) -> Game:
        """A new game (from ``fen``, or the standard start), making room for it when full."""
        with self._lock:
            now = self._now()
            game = Game.new(white, black, fen, at=now)  # first: a bad FEN evicts nothing
            self._retry_archive()
            self._drop_idle(now)
            while len(self._games) >= self.max_games:
                victim = min(self._games.values(), key=lambda g: (not g.is_over, g.last_updated))
                self._evict(victim.game_id)
            self._games[game.game_id] = game
            session = GameSession.new(game.game_id, at=now)
            self._sessions[session.session_id] = session
            self._session_of[game.game_id] = session.session_id
            return game

    def get_game(self, game_id: str) -> Game:
        with self._lock:
            self._check_open()
            try:
                return self._games[game_id]
            except KeyError:
                raise UnknownGameError(game_id) from None

    def list_games(self, status: GameStatus | None = None) -> list[Game]:
        """The games in memory, oldest first; only those with ``status`` when given."""
        with self._lock:
            self._check_open()
            return [g for g in self._games.values() if status is None or g.status == status]

    def apply_move(self, game_id: str, move: str, thinking_time: float = 0.0) -> Game:
        """The game after ``move`` (see ``Game.with_move``); an illegal move changes nothing."""
        return self._update(game_id, lambda game, now: game.with_move(move, thinking_time, at=now))

    def resign(
        self, game_id: str, color: Color, termination: ResignTermination = "resigned"
    ) -> Game:
        """``color`` gives up; with ``termination="agent_error"``, because its agent failed."""
        return self._update(
            game_id, lambda game, now: game.resign(color, termination=termination, at=now)
        )

    def timeout(self, game_id: str, color: Color) -> Game:
        return self._update(game_id, lambda game, now: game.timeout(color, at=now))

    def cleanup_idle(self) -> list[str]:
        """Drop the games and sessions idle longer than ``idle_timeout``; the games' ids. The
        records waiting for the archive are retried first."""
        with self._lock:
            now = self._now()
            self._retry_archive()
            return self._drop_idle(now)

    @property
    def unarchived(self) -> tuple[str, ...]:
        """The ids of the games whose records wait for the archive (after a failed write)."""
        with self._lock:
            return tuple(self._unwritten)

    # -- sessions -------------------------------------------------------------------------------

    def session_of(self, game_id: str) -> GameSession:
        """The game's own session, opened with it and gone with it."""
        with self._lock:
            self.get_game(game_id)
            return self._sessions[self._session_of[game_id]]

    def create_session(self, game_id: str) -> GameSession:
        with self._lock:
            self.get_game(game_id)
            session = GameSession.new(game_id, at=self._now())
            self._sessions[session.session_id] = session
            return session

    def get_session(self, session_id: str) -> GameSession:
        with self._lock:
            self._check_open()
            try:
                return self._sessions[session_id]
            except KeyError:
                raise SessionNotFoundError(session_id) from None

    def touch(self, session_id: str, spectators: int | None = None) -> GameSession:
        """Record activity on a session, and its number of spectators when given."""
        with self._lock:
            session = self.get_session(session_id)
            changes: dict[str, object] = {"last_activity": max(self._now(), session.last_activity)}
            if spectators is not None:
                changes["spectators"] = spectators
            return self._replace_session(session, changes)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Archive the games not archived yet and drop everything; other calls raise afterwards.

        Raises:
            ArchiveError: naming the games that could not be archived (dropped all the same).
        """
        with self._lock:
            for game_id, game in self._games.items():
                if self.archive_dir is not None and game_id not in self._recorded:
                    self._queue(game)
            try:
                self._flush()
            except ArchiveError as error:
                raise ArchiveError(
                    f"could not archive these games in {error.directory} at close "
                    f"({error.reason}): {', '.join(error.game_ids)}",
                    error.directory,
                    error.reason,
                    error.game_ids,
                ) from error
            finally:
                for store in (self._games, self._sessions, self._session_of, self._unwritten):
                    store.clear()
                self._recorded.clear()
                self._closed = True

    def __enter__(self) -> StateManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _update(self, game_id: str, change: Callable[[Game, datetime], Game]) -> Game:
        """Store ``change(game, now)``. The change (a move's validation takes a millisecond or
        more) runs outside the lock, so that other games and readers do not wait for it; should
        the game change meanwhile, it runs again on the new state, as if it had waited."""
        while True:
            with self._lock:
                now, before = self._now(), self.get_game(game_id)
            game = change(before, now)
            with self._lock:
                if self.get_game(game_id) is before:
                    return self._store(game, now)

    # -- inside the lock ------------------------------------------------------------------------

    def _now(self) -> datetime:
        self._check_open()
        now = self._clock()
        if now.tzinfo is None:
            raise ValueError(f"the clock must return timezone-aware times, got {now.isoformat()}")
        return now

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this StateManager is closed")

    def _store(self, game: Game, now: datetime) -> Game:
        """Keep ``game``, the next state of a game in memory, and record what follows from it."""
        game_id = game.game_id
        self._games[game_id] = game
        own = self._sessions[self._session_of[game_id]]
        self._replace_session(own, {"last_activity": max(now, own.last_activity)})
        if game.is_over:
            for session in list(self._sessions.values()):
                if session.game_id == game_id:
                    self._replace_session(session, {"is_active": False})
            self._archive_finished(game)
        return game

    def _replace_session(self, session: GameSession, changes: dict[str, object]) -> GameSession:
        session = GameSession.model_validate({**dict(session), **changes})
        self._sessions[session.session_id] = session
        return session

    def _archive_finished(self, game: Game) -> None:
        """Archive a game as it finishes; on failure log, and retry later (see ``_flush``)."""
        if self.archive_dir is None:
            return
        self._queue(game)
        self._recorded.add(game.game_id)
        try:
            self._flush()
        except ArchiveError as error:
            logger.warning(
                "could not archive finished game %s (%s); it stays in memory and is tried "
                "again before the next new game",
                game.game_id,
                error.reason,
            )

    def _drop_idle(self, now: datetime) -> list[str]:
        cutoff = now - self.idle_timeout
        idle = [game_id for game_id, game in self._games.items() if game.last_updated < cutoff]
        for game_id in idle:
            self._evict(game_id)
        for session_id, session in list(self._sessions.items()):
            if session.last_activity < cutoff:
                del self._sessions[session_id]
        return idle

    def _evict(self, game_id: str) -> None:
        """Archive the game unless it is already, then drop it; should the archive fail, the
        game stays (``ArchiveError``) unless its record is begun (see ``_stays``)."""
        game = self._games[game_id]
        if self.archive_dir is not None:
            if game_id not in self._recorded:
                self._queue(game)
            try:
                self._flush()
            except ArchiveError:
                if self._stays(game):
                    raise
        self._drop(game_id)

    def _stays(self, game: Game) -> bool:
        """Whether a game stays in memory after a failed write of the archive.

        A game leaves once its record is written, or begun by its eviction (its line in the
        first file: the rest waits and follows, never written twice). A finished game whose
        record waits stays with it, which bounds the waiting records by ``max_games`` (an
        eviction begins a record only when none waits before it). An unfinished game that
        stays has its record withdrawn: it plays on, and leaves with its later moves.
        """
        texts = self._unwritten.get(game.game_id)
        if texts is None:
            return False
        if game.is_over:
            return True
        if ARCHIVE_FILES[0] in texts:
            del self._unwritten[game.game_id]
            return True
        return False

    def _drop(self, game_id: str) -> None:
        self._recorded.discard(game_id)
        del self._games[game_id]
        del self._session_of[game_id]
        for session_id, session in list(self._sessions.items()):
            if session.game_id == game_id:
                del self._sessions[session_id]

    def _queue(self, game: Game) -> None:
        """Make the game's record the last to be written."""
        texts = (game.model_dump_json() + "\n", game.to_pgn() + "\n\n")
        self._unwritten[game.game_id] = dict(zip(ARCHIVE_FILES, texts, strict=True))

    def _flush(self) -> None:
        """Write the waiting records, oldest first, each file's part once; ``ArchiveError`` at
        the first failure, the rest waiting."""
        directory = self.archive_dir
        if directory is None:
            return
        for game_id, texts in list(self._unwritten.items()):
            for name, text in list(texts.items()):
                try:
                    _append(directory / name, text)
                except OSError as error:
                    reason = error.strerror or str(error)
                    raise ArchiveError(
                        f"cannot write the archive in {directory} ({reason}); "
                        f"games waiting for it: {len(self._unwritten)}",
                        directory,
                        reason,
                        list(self._unwritten),
                    ) from error
                del texts[name]
            del self._unwritten[game_id]

    def _retry_archive(self) -> None:
        """Write the records left waiting by a failure; if it fails again, they wait on (only
        a request that needs the archive, to make room, fails)."""
        with contextlib.suppress(ArchiveError):
            self._flush()


def _check_writable(directory: Path) -> None:
    """Create ``directory`` and a probe file in it, and open the archive files it has."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".probe-", dir=directory)
        os.close(handle)
        os.unlink(probe)
        for name in ARCHIVE_FILES:
            if (directory / name).exists():
                os.close(os.open(directory / name, os.O_WRONLY | os.O_APPEND))
    except OSError as error:
        reason = error.strerror or str(error)
        raise UnwritableArchiveError(
            f"archive directory {directory} cannot be written: {reason}", directory, reason
        ) from error


def _append(path: Path, text: str) -> None:
    """Append ``text`` durably (fsynced), or not at all: a failed write is cut off again, so
    that a retry never leaves half a record before the whole one."""
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(handle).st_size
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(handle, data) :]
            os.fsync(handle)
        except OSError:
            os.ftruncate(handle, start)
            raise
    finally:
        os.close(handle)
