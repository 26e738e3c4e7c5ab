"""A disk that fails on demand, for tests of the game archive (``chess_env.serving.game_store``).

``faulty_archive(monkeypatch)`` routes the store's writes through a new ``Faults``: while a file
is named in ``failing``, an append to an export ("games.jsonl", "games.pgn") raises
``OSError(errno.ENOSPC)``, and each write to the database ("games.sqlite3": a change, an
archived record, a release) raises ``sqlite3.OperationalError`` as SQLite does on a full disk.
The other files are written as usual. Tests run as root here, where permissions stop nothing,
so a fault is simulated.

pytest runs with ``--import-mode=importlib``, so a test module puts ``tests/support`` on
``sys.path`` before importing this.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from chess_env.serving import game_store
from chess_env.serving.archive_db import DATABASE_FILE, ArchiveDatabase

__all__ = ["DISK_FULL", "Faults", "faulty_archive"]

DISK_FULL = "database or disk is full"  # SQLite's message for SQLITE_FULL


class Faults:
    """Fails the writes to the files named in ``failing``."""

    def __init__(
        self,
        append: Callable[[Path, str], None],
        begin: Callable[[ArchiveDatabase], None],
    ) -> None:
        self._append, self._begin = append, begin
        self.failing: set[str] = set()

    def append(self, path: Path, text: str) -> None:
        if path.name in self.failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        self._append(path, text)

    def begin(self, database: ArchiveDatabase) -> None:
        if DATABASE_FILE in self.failing:
            raise sqlite3.OperationalError(DISK_FULL)
        self._begin(database)


def faulty_archive(monkeypatch: pytest.MonkeyPatch) -> Faults:
    """Route the store's appends and database writes through a new ``Faults`` (none failing
    yet)."""
    faults = Faults(game_store._append, ArchiveDatabase._begin)
    monkeypatch.setattr(game_store, "_append", faults.append)
    monkeypatch.setattr(ArchiveDatabase, "_begin", lambda database: faults.begin(database))
    return faults
