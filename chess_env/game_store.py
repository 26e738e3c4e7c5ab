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
  evicted, cleaned up or the manager closes. Each append is flushed and fsynced.
- Thread-safe: a move is checked outside the lock (it takes a millisecond or more), and checked
  again should its game have changed meanwhile, so no game's move waits for another's.
- ``GameNotFoundError`` and ``SessionNotFoundError``: ``KeyError`` subclasses naming the id.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from chess_env.game import AgentConfig, Color, Game, GameSession, GameStatus, ResignTermination

__all__ = ["GameNotFoundError", "SessionNotFoundError", "StateManager"]


class GameNotFoundError(KeyError):
    """No game with this id in memory (never created, or evicted or cleaned up since)."""

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


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class StateManager:
    """The games and sessions a server holds, safe to call from several threads.

    Args:
        max_games: the most games held at once (default 100).
        idle_timeout: a game not updated (or a session without activity) for longer is cleaned
            up; a ``timedelta`` or seconds (default 30 minutes).
        archive_dir: where ``games.jsonl`` and ``games.pgn`` are appended (created if missing);
            None keeps no archive.
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
            self.archive_dir.mkdir(parents=True, exist_ok=True)  # a bad path fails now, not later
        self._clock = clock
        self._games: dict[str, Game] = {}
        self._sessions: dict[str, GameSession] = {}
        self._session_of: dict[str, str] = {}  # game id -> the id of the game's own session
        self._archived: set[str] = set()  # games in memory whose final state is in the archive
        self._lock = threading.RLock()
        self._closed = False

    # -- games ----------------------------------------------------------------------------------

    def create_game(self, white: AgentConfig, black: AgentConfig, fen: str | None = None) -> Game:
        """A new game (from ``fen``, or the standard start), making room for it when full."""
        with self._lock:
            now = self._now()
            game = Game.new(white, black, fen, at=now)  # first: a bad FEN evicts nothing
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
                raise GameNotFoundError(game_id) from None

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
        """Drop the games and sessions idle longer than ``idle_timeout``; the games' ids."""
        with self._lock:
            return self._drop_idle(self._now())

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
        """Archive the games not archived yet and drop everything; other calls raise afterwards."""
        with self._lock:
            for game_id in list(self._games):
                self._evict(game_id)
            self._sessions.clear()
            self._session_of.clear()
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
        """Archive a game as it finishes; on failure warn, and retry when it leaves memory."""
        try:
            self._archive(game)
        except OSError as error:
            warnings.warn(
                f"could not archive finished game {game.game_id} ({error}); "
                "it is tried again when it leaves memory",
                RuntimeWarning,
                stacklevel=5,  # the caller of apply_move, resign or timeout
            )
            return
        self._archived.add(game.game_id)

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
        """Archive the game unless it is already (a failure keeps it in memory), then drop it."""
        if game_id not in self._archived:
            self._archive(self._games[game_id])
        self._archived.discard(game_id)
        del self._games[game_id]
        del self._session_of[game_id]
        for session_id, session in list(self._sessions.items()):
            if session.game_id == game_id:
                del self._sessions[session_id]

    def _archive(self, game: Game) -> None:
        if self.archive_dir is None:
            return
        line, pgn = game.model_dump_json() + "\n", game.to_pgn() + "\n\n"
        _append(self.archive_dir / "games.jsonl", line)
        _append(self.archive_dir / "games.pgn", pgn)


def _append(path: Path, text: str) -> None:
    """Append ``text`` and make it durable before returning: flushed, then fsynced."""
    with open(path, "a", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
