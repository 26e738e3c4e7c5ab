"""Games and sessions in memory for a server: ``StateManager``, bounded, thread-safe, persisted.

- At most ``max_games`` games (100). When full, ``create_game`` first cleans up idle games,
  then makes room by dropping the least recently updated finished (or aborted:
  ``mark_aborted``) game. It never drops a live game (unfinished, not aborted, not idle) for a
  newcomer: when every place holds one, it raises ``GamesFullError``, whose ``retry_after`` is
  the seconds until the least recently updated of them would go idle (at most
  ``MAX_RETRY_AFTER``; a game that ends frees its place sooner).
- Every game has its own ``GameSession`` from creation (``session_of``): each change of the game
  counts as activity on it, and it turns inactive when the game ends. ``create_session`` opens
  more sessions on a game (for clients), whose activity is only what ``touch`` records.
- ``cleanup_idle()`` drops the games not updated for ``idle_timeout``, and the sessions without
  activity for as long. A game's sessions go with it.
- With ``archive_dir``, the games are kept in its database, ``games.sqlite3``
  (``chess_env.serving.archive_db``), as they change: every change writes its game's row and new
  moves before it returns, so a server that is killed loses no move it answered (a power cut
  may lose the last ones). A new manager on the directory
  resumes the unfinished, non-aborted games the last one held, ids unchanged, with new sessions
  (``resumed_games``, with what the service attached: ``attach_service_data``); ``resume=False``
  archives them instead.
- No game leaves memory unarchived: a game is archived once, when it finishes, or unfinished
  when it is evicted, cleaned up or the manager closes. Its record is its database row taking
  its place in the archive (fsynced), then its line in ``games.jsonl`` (one ``Game`` per line)
  and its game in ``games.pgn``, the exports for other tools, each append fsynced or cut off
  again when it fails, so a file never holds half a record. A game resumed and archived again
  appears twice in the exports; the last record is the game's.
- ``max_archive_bytes`` (1 GiB) bounds the archive (``archive_size``: the database's pages and
  the two exports): a record whose exports would take it past the limit is refused
  (``ArchiveFullError``) and waits in memory, as a record on a full disk does. The rows of the
  games in memory (at most ``max_games``) are written as they change, and may take the archive
  past the limit by their size, never by another record.
- Archive faults: a directory that cannot take a file is refused at once
  (``UnwritableArchiveError``, a ``ValueError``). A write that fails later (disk full, archive
  full) leaves its record waiting in memory, retried before each new game and each
  ``cleanup_idle``, each part written once. A game whose record cannot be written stays in
  memory, so ``create_game`` raises ``ArchiveError`` instead of making room. ``close()`` drops
  every game, then raises ``ArchiveError`` naming those it could not archive (their rows stay
  in the database: the next start resumes or archives them). A change that cannot be written to
  the database is logged; the game plays on, and its next change written adds what it missed.
- Thread-safe: a move is checked outside the lock (it takes a millisecond or more), and checked
  again should its game have changed meanwhile, so no game's move waits for another's.
- ``UnknownGameError`` and ``SessionNotFoundError``: ``KeyError`` subclasses naming the id (the
  first is also the service's 404).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from chess_env.core.game import AgentConfig, Color, Game, GameSession, GameStatus, ResignTermination
from chess_env.serving.archive_db import DATABASE_FILE, ArchiveDatabase, LiveRow

__all__ = [
    "ARCHIVE_FILES",
    "DEFAULT_MAX_ARCHIVE_BYTES",
    "DEFAULT_MAX_PLIES",
    "EXPORT_FILES",
    "MAX_RETRY_AFTER",
    "ArchiveError",
    "ArchiveFullError",
    "GamesFullError",
    "ResumedGame",
    "SessionNotFoundError",
    "StateManager",
    "UnknownGameError",
    "UnwritableArchiveError",
]

logger = logging.getLogger(__name__)

EXPORT_FILES = ("games.jsonl", "games.pgn")
# Each archived game is one record in each file, written in this order: the database first, so
# that a record is begun (and its game may leave memory) once the archive of record has it.
ARCHIVE_FILES = (DATABASE_FILE, *EXPORT_FILES)
DEFAULT_MAX_ARCHIVE_BYTES = 1 << 30
DEFAULT_MAX_PLIES = 1_000  # a server's cap on a game (the longest tournament game had 538)
MAX_RETRY_AFTER = 60  # seconds: a game may end and free its place any moment before going idle


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


class GamesFullError(Exception):
    """Every place holds a live game (unfinished, not aborted, not idle), and none is dropped
    for a newcomer. ``retry_after``: whole seconds until the least recently updated of them
    would go idle, at most ``MAX_RETRY_AFTER``. The service answers it as a 503 with
    ``Retry-After`` (``chess_env.serving.service.errors``)."""

    def __init__(self, max_games: int, retry_after: int) -> None:
        super().__init__(
            f"all {max_games} games in memory are live (unfinished, not aborted, not idle): "
            f"none leaves to make room for a new game; try again in {retry_after} s"
        )
        self.max_games, self.retry_after = max_games, retry_after


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


class ArchiveFullError(ArchiveError):
    """The next record would take the archive past ``max_archive_bytes`` (``limit``): it waits,
    as on a full disk (a restart with a higher limit, or on a new directory, archives it)."""

    def __init__(self, directory: Path, size: int, limit: int, game_ids: Sequence[str]) -> None:
        reason = f"the archive is full (max_archive_bytes = {limit})"
        super().__init__(
            f"cannot archive in {directory}: it holds {size} bytes and the next record would "
            f"pass max_archive_bytes ({limit}); games waiting for it: {len(game_ids)}",
            directory,
            reason,
            game_ids,
        )
        self.size, self.limit = size, limit


class UnwritableArchiveError(ArchiveError, ValueError):
    """The archive directory cannot take a file at all: refused when the manager is made, not
    at the first eviction (a ``ValueError``: the directory given is unusable)."""


@dataclass(frozen=True)
class ResumedGame:
    """A game the last manager on the archive held unfinished, in memory again, and the
    service's data attached to it (None: none was)."""

    game: Game
    service_data: dict[str, Any] | None


@dataclass
class _Record:
    """A game's archive record: the parts of ``ARCHIVE_FILES`` still to be written, in order,
    each once; ``texts`` are the exports' parts."""

    game: Game
    leaving: bool  # the game leaves memory: its row is no longer live
    aborted: bool
    service_data: dict[str, Any] | None
    texts: dict[str, str]
    waiting: list[str] = field(default_factory=lambda: list(ARCHIVE_FILES))


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class StateManager:
    """The games and sessions a server holds, safe to call from several threads.

    Args:
        max_games: the most games held at once (default 100).
        idle_timeout: a game not updated (or a session without activity) for longer is cleaned
            up; a ``timedelta`` or seconds (default 30 minutes).
        archive_dir: where ``games.sqlite3``, ``games.jsonl`` and ``games.pgn`` are kept
            (created if missing; ``UnwritableArchiveError`` unless they can be written); None
            keeps no archive, and nothing survives the process.
        clock: returns the current time, timezone-aware (default: UTC now); tests pass a fake.
        max_archive_bytes: the most bytes the archive may take (default 1 GiB; None: no
            limit); see ``archive_size``.
        resume: whether the unfinished, non-aborted games the last manager on ``archive_dir``
            held are resumed (default) or archived as they are.
        max_plies: every new game ends as a draw at this many plies (termination "max_plies";
            ``Game.new``); None (the default): no cap.

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
        *,
        max_archive_bytes: int | None = DEFAULT_MAX_ARCHIVE_BYTES,
        resume: bool = True,
        max_plies: int | None = None,
    ) -> None:
        if max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games}")
        if not isinstance(idle_timeout, timedelta):
            idle_timeout = timedelta(seconds=idle_timeout)
        if idle_timeout <= timedelta(0):
            raise ValueError(f"idle_timeout must be positive, got {idle_timeout}")
        if max_archive_bytes is not None and max_archive_bytes < 1:
            raise ValueError(f"max_archive_bytes must be positive or None, got {max_archive_bytes}")
        if max_plies is not None and max_plies < 1:
            raise ValueError(f"max_plies must be positive or None, got {max_plies}")
        self.max_games = max_games
        self.idle_timeout = idle_timeout
        self.archive_dir = None if archive_dir is None else Path(archive_dir)
        self.max_archive_bytes = max_archive_bytes
        self.resume = resume
        self.max_plies = max_plies
        self._clock = clock
        self._games: dict[str, Game] = {}
        self._sessions: dict[str, GameSession] = {}
        self._session_of: dict[str, str] = {}  # game id -> the id of the game's own session
        self._recorded: set[str] = set()  # finished games in memory, their records written or due
        self._unwritten: dict[str, _Record] = {}  # records not (wholly) written, oldest first
        self._aborted: set[str] = set()
        self._service_data: dict[str, dict[str, Any]] = {}
        self._written: dict[str, int] = {}  # game id -> its plies in the database, if it is there
        self._unsaved: set[str] = set()  # games whose last change is not in the database (logged)
        self._resumed: list[str] = []
        self._lock = threading.RLock()
        self._closed = False
        self._database: ArchiveDatabase | None = None
        if self.archive_dir is not None:  # a bad path fails now, not at the first eviction
            self._database = _open_database(self.archive_dir)
            try:
                self._resume_last_run()
            except BaseException:
                self._database.close()
                raise

    # -- games ----------------------------------------------------------------------------------

    def create_game(self, white: AgentConfig, black: AgentConfig, fen: str | None = None) -> Game:
        """A new game (from ``fen``, or the standard start), making room for it when full.

        Raises:
            GamesFullError: every place holds a live game.
            ArchiveError: the game that would leave cannot be archived.
        """
        with self._lock:
            now = self._now()
            # First: a bad FEN evicts nothing.
            game = Game.new(white, black, fen, at=now, max_plies=self.max_plies)
            self._retry_archive()
            self._drop_idle(now)
            while len(self._games) >= self.max_games:
                leavable = [g for g in self._games.values() if not self._is_live(g)]
                if not leavable:
                    raise GamesFullError(self.max_games, self._retry_after(now))
                self._evict(min(leavable, key=lambda g: g.last_updated).game_id)
            self._hold(game, now)
            self._save(game)
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

    def mark_aborted(self, game_id: str) -> None:
        """Nobody will move in the game again (its creator stopped it): it may leave to make
        room as a finished game does, and is not resumed after a restart."""
        with self._lock:
            game = self.get_game(game_id)
            self._aborted.add(game_id)
            self._save(game)

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

    @property
    def archive_size(self) -> int:
        """The bytes ``max_archive_bytes`` counts: the database's pages (with the rows of the
        games in memory, at most ``max_games``) and the exports; 0 without an archive."""
        with self._lock:
            self._check_open()
            return self._archive_size()

    # -- what the service keeps across a restart ------------------------------------------------

    def attach_service_data(self, game_id: str, data: dict[str, Any]) -> None:
        """Keep ``data`` (JSON: e.g. the hashes of the seats' tokens, the seats' players) with
        the game, written at once, for ``resumed_games`` after a restart; replaces any before.

        Raises:
            UnknownGameError: no such game in memory.
            TypeError: ``data`` is not a JSON object.
        """
        with self._lock:
            game = self.get_game(game_id)
            try:
                kept = json.loads(json.dumps(data, allow_nan=False))  # also a copy of it
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"the service data of game {game_id} is not JSON: {error}"
                ) from None
            if not isinstance(kept, dict):
                raise TypeError(
                    f"the service data of game {game_id} must be a JSON object, got "
                    f"{type(data).__name__}"
                )
            self._service_data[game_id] = kept
            self._written.pop(game_id, None)  # its next write is whole, the data with it
            self._save(game)

    def resumed_games(self) -> list[ResumedGame]:
        """The games this manager resumed when it was made that are still in memory, as they
        are now, with their service data; oldest first."""
        with self._lock:
            self._check_open()
            return [
                ResumedGame(self._games[game_id], copy.deepcopy(self._service_data.get(game_id)))
                for game_id in self._resumed
                if game_id in self._games
            ]

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
        The unfinished games stay live in the database: the next manager resumes them.

        Raises:
            ArchiveError: naming the games that could not be archived (dropped all the same).
        """
        with self._lock:
            for game_id, game in self._games.items():
                if self.archive_dir is not None and game_id not in self._recorded:
                    self._queue(game, leaving=False)
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
                for kept in (self._service_data, self._written):
                    kept.clear()
                for ids in (self._recorded, self._aborted, self._unsaved):
                    ids.clear()
                self._resumed.clear()
                if self._database is not None:
                    self._database.close()
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

    def _is_live(self, game: Game) -> bool:
        """Whether someone may still move in the game (idle games are dropped before this)."""
        return not game.is_over and game.game_id not in self._aborted

    def _retry_after(self, now: datetime) -> int:
        """Whole seconds until the least recently updated game goes idle, within 1 and
        ``MAX_RETRY_AFTER``."""
        oldest = min(game.last_updated for game in self._games.values())
        idle_in = (oldest + self.idle_timeout - now).total_seconds()
        return max(1, min(MAX_RETRY_AFTER, math.floor(idle_in) + 1))

    def _hold(self, game: Game, now: datetime) -> None:
        """Keep ``game`` in memory, with its own session opened ``now``."""
        self._games[game.game_id] = game
        session = GameSession.new(game.game_id, at=now)
        self._sessions[session.session_id] = session
        self._session_of[game.game_id] = session.session_id

    def _store(self, game: Game, now: datetime) -> Game:
        """Keep ``game``, the next state of a game in memory, and record what follows from it."""
        game_id = game.game_id
        self._games[game_id] = game
        self._save(game)
        own = self._sessions[self._session_of[game_id]]
        self._replace_session(own, {"last_activity": max(now, own.last_activity)})
        if game.is_over:
            for session in list(self._sessions.values()):
                if session.game_id == game_id:
                    self._replace_session(session, {"is_active": False})
            self._archive_finished(game)
        return game

    def _save(self, game: Game) -> None:
        """Write the game's change to the database. A failure is logged (once until a write of
        the game succeeds), not raised: the game plays on in memory, and the next write of it
        adds what this one missed."""
        if self._database is None:
            return
        game_id = game.game_id
        try:
            self._database.save(
                game,
                aborted=game_id in self._aborted,
                written=self._written.get(game_id),
                service_data=self._service_data.get(game_id),
            )
        except (sqlite3.Error, OSError) as error:
            if game_id not in self._unsaved:
                self._unsaved.add(game_id)
                logger.warning(
                    "could not write game %s to %s (%s); it plays on in memory, and a restart "
                    "would resume it as last written",
                    game_id,
                    self._database.path,
                    error,
                )
            return
        self._written[game_id] = len(game.move_history)
        self._unsaved.discard(game_id)

    def _replace_session(self, session: GameSession, changes: dict[str, object]) -> GameSession:
        session = GameSession.model_validate({**dict(session), **changes})
        self._sessions[session.session_id] = session
        return session

    def _archive_finished(self, game: Game) -> None:
        """Archive a game as it finishes; on failure log, and retry later (see ``_flush``)."""
        if self.archive_dir is None:
            return
        self._queue(game, leaving=False)
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
                self._queue(game, leaving=True)
            try:
                self._flush()
            except ArchiveError:
                if self._stays(game):
                    raise
        self._drop(game_id)

    def _stays(self, game: Game) -> bool:
        """Whether a game stays in memory after a failed write of the archive.

        A game leaves once its record is written, or begun by its eviction (its row archived
        in the database: the rest waits and follows, never written twice). A finished game
        whose record waits stays with it, which bounds the waiting records by ``max_games``
        (an eviction begins a record only when none waits before it). An unfinished game that
        stays has its record withdrawn: it plays on, and leaves with its later moves.
        """
        record = self._unwritten.get(game.game_id)
        if record is None:
            return False
        if game.is_over:
            return True
        if ARCHIVE_FILES[0] in record.waiting:
            del self._unwritten[game.game_id]
            return True
        return False

    def _drop(self, game_id: str) -> None:
        del self._games[game_id]
        del self._session_of[game_id]
        for session_id, session in list(self._sessions.items()):
            if session.game_id == game_id:
                del self._sessions[session_id]
        for kept in (self._recorded, self._aborted, self._unsaved):
            kept.discard(game_id)
        self._service_data.pop(game_id, None)
        self._written.pop(game_id, None)
        if self._database is not None:
            try:
                self._database.release(game_id)
            except sqlite3.Error as error:  # the next start finds it archived, and releases it
                logger.warning("could not mark game %s gone from memory (%s)", game_id, error)

    def _queue(self, game: Game, *, leaving: bool) -> None:
        """Make the game's record, as it is in memory, the last to be written."""
        game_id = game.game_id
        self._unwritten.pop(game_id, None)
        self._unwritten[game_id] = _record_of(
            game,
            leaving=leaving,
            aborted=game_id in self._aborted,
            service_data=self._service_data.get(game_id),
        )

    def _flush(self) -> None:
        """Write the waiting records, oldest first, each part once; ``ArchiveError`` at the
        first failure, the rest waiting."""
        directory, database = self.archive_dir, self._database
        if directory is None or database is None:
            return
        for game_id, record in list(self._unwritten.items()):
            while record.waiting:
                name = record.waiting[0]
                try:
                    if name == DATABASE_FILE:
                        self._check_room(record)
                        database.archive(
                            record.game,
                            aborted=record.aborted,
                            service_data=record.service_data,
                            leaving=record.leaving,
                        )
                    else:
                        _append(directory / name, record.texts[name])
                except ArchiveFullError:
                    raise
                except (OSError, sqlite3.Error) as error:
                    reason = getattr(error, "strerror", None) or str(error)
                    raise ArchiveError(
                        f"cannot write the archive in {directory} ({reason}); "
                        f"games waiting for it: {len(self._unwritten)}",
                        directory,
                        reason,
                        list(self._unwritten),
                    ) from error
                record.waiting.pop(0)
            del self._unwritten[game_id]

    def _check_room(self, record: _Record) -> None:
        """``ArchiveFullError`` if ``record``'s exports would take the archive past
        ``max_archive_bytes`` (its row is in the database already, but for its last change)."""
        limit, directory = self.max_archive_bytes, self.archive_dir
        if limit is None or directory is None:
            return
        size = self._archive_size()
        if size + sum(len(text.encode()) for text in record.texts.values()) > limit:
            raise ArchiveFullError(directory, size, limit, list(self._unwritten))

    def _archive_size(self) -> int:
        directory, database = self.archive_dir, self._database
        if directory is None or database is None:
            return 0
        size = database.size()
        for name in EXPORT_FILES:
            with contextlib.suppress(FileNotFoundError):
                size += (directory / name).stat().st_size
        return size

    def _retry_archive(self) -> None:
        """Write the records left waiting by a failure; if it fails again, they wait on (only
        a request that needs the archive, to make room, fails)."""
        with contextlib.suppress(ArchiveError):
            self._flush()

    def _resume_last_run(self) -> None:
        """Take up the games the last manager on the archive held: resume the unfinished,
        non-aborted ones (the most recently updated ``max_games``, if ``resume``), and archive
        the others, which a killed server could not."""
        database = self._database
        assert database is not None and self.archive_dir is not None
        with self._lock:
            now = self._now()
            try:
                rows = database.live_rows()
                resumable = [row.game_id for row in rows if self._resumable(row)]
                chosen = set(resumable[-self.max_games :])  # the most recently updated
                resumed = [
                    taken
                    for row in rows
                    if (taken := self._take_up(database, row, resume=row.game_id in chosen))
                ]
                database.unarchive([game.game_id for game, _ in resumed])
            except sqlite3.Error as error:
                raise _unwritable(self.archive_dir, error) from error
            for game, data in resumed:
                self._hold(game, now)
                self._written[game.game_id] = len(game.move_history)
                if data is not None:
                    self._service_data[game.game_id] = data
                self._resumed.append(game.game_id)
            self._retry_archive()
            if resumed:
                logger.info("resumed %d unfinished games from %s", len(resumed), database.path)

    def _resumable(self, row: LiveRow) -> bool:
        return self.resume and row.status == "in_progress" and not row.aborted

    def _take_up(
        self, database: ArchiveDatabase, row: LiveRow, *, resume: bool
    ) -> tuple[Game, dict[str, Any] | None] | None:
        """The game of ``row`` and its service data to resume, or None: then the game is
        archived (unless it is) and released."""
        if not resume and row.archived:
            database.release(row.game_id)
            return None
        try:
            game, data = database.load(row.game_id)
        except ValueError as error:  # a record this version cannot read: left as it is
            logger.error("cannot resume or archive game %s: %s", row.game_id, error)
            return None
        if resume:
            return game, data
        self._unwritten[game.game_id] = _record_of(
            game, leaving=True, aborted=row.aborted, service_data=data
        )
        return None


def _record_of(
    game: Game, *, leaving: bool, aborted: bool, service_data: dict[str, Any] | None
) -> _Record:
    texts = (game.model_dump_json() + "\n", game.to_pgn() + "\n\n")
    return _Record(
        game, leaving, aborted, service_data, dict(zip(EXPORT_FILES, texts, strict=True))
    )


def _open_database(directory: Path) -> ArchiveDatabase:
    """The archive's database, after checking the directory takes files; an older archive's
    ``games.jsonl`` is imported into a database that holds no game yet."""
    _check_writable(directory)
    try:
        database = ArchiveDatabase(directory / DATABASE_FILE)
    except sqlite3.Error as error:
        raise _unwritable(directory, error) from error
    try:
        exported = directory / EXPORT_FILES[0]
        if database.is_empty() and exported.exists():
            imported = database.import_jsonl(exported)
            logger.info(
                "imported %d games of %s into %s (%d lines were no game)",
                imported.games,
                exported,
                database.path,
                imported.skipped,
            )
    except (sqlite3.Error, OSError) as error:
        database.close()
        raise _unwritable(directory, error) from error
    return database


def _unwritable(directory: Path, error: Exception) -> UnwritableArchiveError:
    reason = getattr(error, "strerror", None) or str(error)
    return UnwritableArchiveError(
        f"archive directory {directory} cannot be written: {reason}", directory, reason
    )


def _check_writable(directory: Path) -> None:
    """Create ``directory`` and a probe file in it, and open the exports it has."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".probe-", dir=directory)
        os.close(handle)
        os.unlink(probe)
        for name in EXPORT_FILES:
            if (directory / name).exists():
                os.close(os.open(directory / name, os.O_WRONLY | os.O_APPEND))
    except OSError as error:
        raise _unwritable(directory, error) from error


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
