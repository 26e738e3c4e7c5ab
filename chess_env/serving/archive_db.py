"""The game store's database: ``ARCHIVE_DIR/games.sqlite3``, each game a ``StateManager`` holds or
archived, kept up to date change by change, and read by the viewer through its indexes.

- ``ArchiveDatabase(path)``: the state manager's one connection. ``save`` writes a game's change
  (its row and its new moves), ``archive`` gives it its place in the archive (fsynced),
  ``release`` marks it gone from memory; at start, ``live_rows`` are the games a previous run
  held, ``load`` reads one back and ``unarchive`` puts resumed games back in play. ``size`` is
  what the archive's limit counts; ``import_jsonl`` fills a new database from an older archive's
  ``games.jsonl``.
- ``open_reader(path)``, ``latest_rows`` and ``archived_game``: the viewer's reads, on a read-only
  connection of its own.
- ``LiveRow``: a row a previous run left live; ``ListedRow``: one line of a listing.

Three tables, so that a move writes a kilobyte or so however long the agents' prompts are:
``games`` (a row per game: the listing's columns, indexed, and the game's state as JSON without
its agents and moves), ``setups`` (the agents and the service's data, written when the game is
first written) and ``moves`` (a row per ply). ``games.archived`` is a game's place in the archive
(the newest highest; NULL while it is in play), ``games.live`` whether a state manager holds it.

WAL mode, ``synchronous=NORMAL``: a change is committed without an fsync, so a process that is
killed loses nothing committed (a power cut may lose the last changes); an archived record is
committed with ``synchronous=FULL``, fsynced as the archive's other files are.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from chess_env.core.game import Game, GameStatus

__all__ = [
    "DATABASE_FILE",
    "SCHEMA_VERSION",
    "ArchiveDatabase",
    "ImportedArchive",
    "ListedRow",
    "LiveRow",
    "archived_game",
    "latest_rows",
    "open_reader",
]

DATABASE_FILE = "games.sqlite3"
SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 5000  # a reader's checkpoint may hold the file for a moment
_WAL_LIMIT = 4 * 1024 * 1024  # bytes the write-ahead log keeps after a checkpoint

# One script, so that the tables and the version are made together or not at all.
_SCHEMA = f"""
BEGIN;
CREATE TABLE games (
    game_id TEXT PRIMARY KEY,
    live INTEGER NOT NULL,
    aborted INTEGER NOT NULL,
    archived INTEGER,
    status TEXT NOT NULL,
    result TEXT,
    termination TEXT,
    plies INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT,
    white TEXT NOT NULL,
    black TEXT NOT NULL,
    white_player TEXT NOT NULL,
    black_player TEXT NOT NULL,
    state TEXT NOT NULL
);
CREATE TABLE setups (game_id TEXT PRIMARY KEY, agents TEXT NOT NULL, service_data TEXT);
CREATE TABLE moves (
    game_id TEXT NOT NULL, ply INTEGER NOT NULL, move TEXT NOT NULL, PRIMARY KEY (game_id, ply)
) WITHOUT ROWID;
CREATE UNIQUE INDEX games_by_archived ON games (archived) WHERE archived IS NOT NULL;
CREATE INDEX games_by_status ON games (status, archived) WHERE archived IS NOT NULL;
CREATE INDEX games_by_white_player ON games (white_player, archived) WHERE archived IS NOT NULL;
CREATE INDEX games_by_black_player ON games (black_player, archived) WHERE archived IS NOT NULL;
CREATE INDEX games_live ON games (live) WHERE live = 1;
PRAGMA user_version = {SCHEMA_VERSION};
COMMIT;
"""

# Every column but ``archived``, which only ``archive`` and ``unarchive`` set.
_UPSERT_GAME = """
INSERT INTO games (game_id, live, aborted, status, result, termination, plies, started_at,
    updated_at, ended_at, white, black, white_player, black_player, state)
VALUES (:game_id, 1, :aborted, :status, :result, :termination, :plies, :started_at,
    :updated_at, :ended_at, :white, :black, :white_player, :black_player, :state)
ON CONFLICT (game_id) DO UPDATE SET live = 1, aborted = excluded.aborted,
    status = excluded.status, result = excluded.result, termination = excluded.termination,
    plies = excluded.plies, updated_at = excluded.updated_at, ended_at = excluded.ended_at,
    state = excluded.state
"""
_UPSERT_SETUP = """
INSERT INTO setups (game_id, agents, service_data) VALUES (?, ?, ?)
ON CONFLICT (game_id) DO UPDATE SET agents = excluded.agents, service_data = excluded.service_data
"""
_NEWEST_ARCHIVED = """
UPDATE games SET archived = (SELECT COALESCE(MAX(archived), 0) + 1 FROM games), live = ?
WHERE game_id = ?
"""
_LISTED = (
    "game_id, white, black, white_player, black_player, status, result, termination, plies, "
    "started_at, ended_at"
)
_AGENTS = {"white", "black"}
_NOT_STATE = {"white", "black", "move_history"}


class LiveRow(NamedTuple):
    """A game a state manager held when it stopped (closed, or killed)."""

    game_id: str
    status: GameStatus
    aborted: bool
    archived: bool
    updated_at: str


class ListedRow(NamedTuple):
    """A listing's columns of an archived game (``ArchivedGame``'s fields)."""

    game_id: str
    white: str
    black: str
    white_player: str
    black_player: str
    status: str
    result: str | None
    termination: str | None
    plies: int
    started_at: str
    ended_at: str | None


@dataclass(frozen=True)
class ImportedArchive:
    """What ``import_jsonl`` read: games written, and lines that were no ``Game``."""

    games: int
    skipped: int


class ArchiveDatabase:
    """The state manager's connection to ``path`` (created with its tables if missing).

    Not thread-safe by itself: the state manager calls it under its lock.

    Raises:
        sqlite3.Error: the file cannot be opened or is no database of this schema version.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            self._set_up()
        except BaseException:
            self._connection.close()
            raise

    # -- writes -----------------------------------------------------------------------------

    def save(
        self,
        game: Game,
        *,
        aborted: bool,
        written: int | None,
        service_data: dict[str, Any] | None,
    ) -> None:
        """Write ``game``'s row and its moves after the first ``written`` (None: the game is not
        in the database yet, or not wholly: write it whole, with its agents and data)."""
        with self._transaction():
            self._write(game, aborted=aborted, written=written, service_data=service_data)

    def archive(
        self, game: Game, *, aborted: bool, service_data: dict[str, Any] | None, leaving: bool
    ) -> None:
        """Write ``game`` whole as the newest archived game, fsynced; ``leaving``: it leaves
        memory (no longer live)."""
        self._connection.execute("PRAGMA synchronous = FULL")
        try:
            with self._transaction():
                self._write(game, aborted=aborted, written=None, service_data=service_data)
                self._connection.execute(_NEWEST_ARCHIVED, (not leaving, game.game_id))
        finally:
            self._connection.execute("PRAGMA synchronous = NORMAL")

    def release(self, game_id: str) -> None:
        """The game left memory: a later start does not resume it."""
        with self._transaction():
            self._connection.execute("UPDATE games SET live = 0 WHERE game_id = ?", (game_id,))

    def unarchive(self, game_ids: Sequence[str]) -> None:
        """Resumed games are in play again: out of the archive until they leave it anew."""
        with self._transaction():
            self._connection.executemany(
                "UPDATE games SET archived = NULL WHERE game_id = ?", [(i,) for i in game_ids]
            )

    def import_jsonl(self, path: Path) -> ImportedArchive:
        """Archive the games of an older archive's ``games.jsonl`` (one ``Game`` a line, the
        last line of a game winning), in the file's order, as not live."""
        games = skipped = 0
        with self._transaction(), path.open("rb") as lines:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    game = Game.model_validate_json(line)
                except ValueError:  # a ValidationError too
                    skipped += 1
                    continue
                self._connection.execute("DELETE FROM moves WHERE game_id = ?", (game.game_id,))
                self._write(game, aborted=False, written=None, service_data=None)
                self._connection.execute(_NEWEST_ARCHIVED, (False, game.game_id))
                games += 1
        return ImportedArchive(games, skipped)

    # -- reads ------------------------------------------------------------------------------

    def live_rows(self) -> list[LiveRow]:
        """The games a previous state manager held when it stopped, least recently updated
        first."""
        rows = self._connection.execute(
            "SELECT game_id, status, aborted, archived IS NOT NULL, updated_at FROM games "
            "WHERE live = 1 ORDER BY updated_at, rowid"
        )
        return [LiveRow(i, s, bool(a), bool(r), u) for i, s, a, r, u in rows]

    def load(self, game_id: str) -> tuple[Game, dict[str, Any] | None]:
        """A game as written, and the service's data attached to it."""
        text = _game_json(self._connection, game_id, archived_only=False)
        if text is None:
            raise KeyError(game_id)
        (data,) = self._connection.execute(
            "SELECT service_data FROM setups WHERE game_id = ?", (game_id,)
        ).fetchone()
        return Game.model_validate_json(text), None if data is None else json.loads(data)

    def is_empty(self) -> bool:
        """Whether no game was ever written (a new database)."""
        return self._connection.execute("SELECT 1 FROM games LIMIT 1").fetchone() is None

    def size(self) -> int:
        """The bytes of the database's pages, free ones too (the file's size once its
        write-ahead log is checkpointed; the log itself is kept under 4 MB)."""
        return self._pragma("page_count") * self._pragma("page_size")

    def close(self) -> None:
        self._connection.close()

    # -- inside -----------------------------------------------------------------------------

    def _set_up(self) -> None:
        connection = self._connection
        version = self._pragma("user_version")
        if version not in (0, SCHEMA_VERSION):
            raise sqlite3.DatabaseError(
                f"{self.path.name} is at schema version {version}; this version of polyarena "
                f"reads version {SCHEMA_VERSION}"
            )
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT}")
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        if version == 0:
            connection.executescript(_SCHEMA)

    def _pragma(self, name: str) -> int:
        (value,) = self._connection.execute(f"PRAGMA {name}").fetchone()
        return int(value)

    def _begin(self) -> None:
        """Open a write transaction (a test's failing disk fails it here)."""
        self._connection.execute("BEGIN IMMEDIATE")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, rolled back on any failure, its commit's too (a full disk
        fails there), so that the next one can begin."""
        self._begin()
        try:
            yield
            self._connection.execute("COMMIT")
        except BaseException:
            if self._connection.in_transaction:  # SQLite may have rolled it back itself
                self._connection.execute("ROLLBACK")
            raise

    def _write(
        self,
        game: Game,
        *,
        aborted: bool,
        written: int | None,
        service_data: dict[str, Any] | None,
    ) -> None:
        execute = self._connection.execute
        execute(_UPSERT_GAME, _columns(game, aborted))
        if written is None:
            data = None if service_data is None else json.dumps(service_data)
            execute(_UPSERT_SETUP, (game.game_id, game.model_dump_json(include=_AGENTS), data))
        moves = game.move_history[written or 0 :]
        self._connection.executemany(
            "INSERT OR REPLACE INTO moves (game_id, ply, move) VALUES (?, ?, ?)",
            [
                (game.game_id, ply, move.model_dump_json())
                for ply, move in enumerate(moves, start=(written or 0) + 1)
            ],
        )


def open_reader(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to the database at ``path`` (None: there is none yet)."""
    if not path.is_file():
        return None
    connection = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None
    )
    connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    return connection


def latest_rows(
    connection: sqlite3.Connection,
    limit: int,
    *,
    status: str | None = None,
    player: str | None = None,
) -> list[ListedRow]:
    """The last ``limit`` games archived, newest first; only those with ``status``, or with
    ``player`` on either side, when given (each filter has its index)."""
    where, parameters = ["archived IS NOT NULL"], []
    if status is not None:
        where.append("status = ?")
        parameters.append(status)
    if player is not None:
        where.append("(white_player = ? OR black_player = ?)")
        parameters += [player, player]
    rows = connection.execute(
        f"SELECT {_LISTED} FROM games WHERE {' AND '.join(where)} ORDER BY archived DESC LIMIT ?",
        (*parameters, limit),
    )
    return [ListedRow(*row) for row in rows]


def archived_game(connection: sqlite3.Connection, game_id: str) -> str | None:
    """The archived ``game_id`` as ``Game`` JSON (None: not in the archive)."""
    return _game_json(connection, game_id, archived_only=True)


def _game_json(connection: sqlite3.Connection, game_id: str, *, archived_only: bool) -> str | None:
    """The game's three parts put back together as one ``Game`` JSON object.

    The parts are JSON objects that pydantic wrote (the agents, the state) and the moves' JSON
    objects, so joining their members gives the whole object without parsing any of them.
    """
    archived = " AND g.archived IS NOT NULL" if archived_only else ""
    with _snapshot(connection):  # the game and its moves as of one commit
        row = connection.execute(
            "SELECT s.agents, g.state FROM games AS g JOIN setups AS s USING (game_id) "
            f"WHERE g.game_id = ?{archived}",
            (game_id,),
        ).fetchone()
        if row is None:
            return None
        moves = connection.execute(
            "SELECT move FROM moves WHERE game_id = ? ORDER BY ply", (game_id,)
        ).fetchall()
    agents, state = row
    history = ",".join(move for (move,) in moves)
    return f'{{{agents[1:-1]},{state[1:-1]},"move_history":[{history}]}}'


@contextlib.contextmanager
def _snapshot(connection: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, unless the caller is already in one."""
    if connection.in_transaction:
        yield
        return
    connection.execute("BEGIN")
    try:
        yield
    finally:
        connection.execute("COMMIT")


def _columns(game: Game, aborted: bool) -> dict[str, Any]:
    """The ``games`` row of ``game``."""
    return {
        "game_id": game.game_id,
        "aborted": int(aborted),
        "status": game.status,
        "result": game.result,
        "termination": game.termination,
        "plies": len(game.move_history),
        "started_at": _utc(game.started_at),
        "updated_at": _utc(game.last_updated),
        "ended_at": None if game.ended_at is None else _utc(game.ended_at),
        "white": game.white.name,
        "black": game.black.name,
        "white_player": game.white.model_name,
        "black_player": game.black.model_name,
        "state": game.model_dump_json(exclude=_NOT_STATE),
    }


def _utc(moment: datetime) -> str:
    """``moment`` in UTC, ISO 8601: such strings sort as their times do."""
    return moment.astimezone(timezone.utc).isoformat()
