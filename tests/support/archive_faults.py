"""A disk that fails on demand, for tests of the game archive (``chess_env.serving.game_store``).

``Faults`` stands in for the store's ``_append`` (``faulty_archive(monkeypatch)`` puts it in
place): the files named in ``failing`` raise ``OSError(errno.ENOSPC)``, the others are appended
to as usual. Tests run as root here, where permissions stop nothing, so a fault is simulated.

pytest runs with ``--import-mode=importlib``, so a test module puts ``tests/support`` on
``sys.path`` before importing this.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from chess_env.serving import game_store

__all__ = ["Faults", "faulty_archive"]


class Faults:
    """Fails the appends to the files named in ``failing`` ("games.jsonl", "games.pgn")."""

    def __init__(self, append: Callable[[Path, str], None]) -> None:
        self.append = append
        self.failing: set[str] = set()

    def __call__(self, path: Path, text: str) -> None:
        if path.name in self.failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        self.append(path, text)


def faulty_archive(monkeypatch: pytest.MonkeyPatch) -> Faults:
    """Route the store's appends through a new ``Faults`` (none failing yet)."""
    faults = Faults(game_store._append)
    monkeypatch.setattr(game_store, "_append", faults)
    return faults
