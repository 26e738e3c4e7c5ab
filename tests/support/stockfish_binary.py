"""``needs_stockfish``: skip a test, saying why, when no Stockfish binary is installed."""

from __future__ import annotations

import shutil

import pytest

STOCKFISH_FOUND = bool(shutil.which("stockfish") or shutil.which("/usr/games/stockfish"))
needs_stockfish = pytest.mark.skipif(
    not STOCKFISH_FOUND, reason="Stockfish binary not installed (apt-get install stockfish)"
)
