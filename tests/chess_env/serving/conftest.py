"""Players and binaries the serving tests share.

- ``held``: registers the player kind "held" (``tests/support/held_player.Held``), a searching
  player that thinks until the test sets ``Held.release``.
- ``fake_stockfish``: a ``stockfish`` first on PATH that exits at once: found, but it never starts.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from chess_env.core.players import register_player, unregister_player

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from held_player import Held


@pytest.fixture
def held() -> Iterator[type[Held]]:
    Held.release = threading.Event()
    Held.thinking = Held.most = 0
    register_player("held", lambda spec: Held())
    try:
        yield Held
    finally:
        Held.release.set()
        unregister_player("held")


@pytest.fixture
def fake_stockfish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "stockfish"
    binary.write_text("#!/bin/sh\nexit 1\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return binary
