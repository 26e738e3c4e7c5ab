"""``Held``: a searching player that thinks until a test lets it go (``Held.release``), standing
for a long engine search whatever the machine's speed, and counts how many of it think at once.
Every wait is bounded by ``GUARD``, so a bug fails a test, never hangs it. Register it with the
``held`` fixture of ``tests/chess_env/serving/conftest.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import chess

from chess_env.core.opponents import Opponent

__all__ = ["GUARD", "Held"]

GUARD = 20.0  # seconds a held player waits at most: a hang guard, not a measurement


class Held(Opponent):
    """Thinks until ``release`` is set, then plays its first legal move."""

    name = "held"
    release = threading.Event()
    lock = threading.Lock()
    thinking = 0
    most = 0

    def choose_move(self, board: chess.Board, legal_moves: Sequence[chess.Move]) -> chess.Move:
        with Held.lock:
            Held.thinking += 1
            Held.most = max(Held.most, Held.thinking)
        try:
            Held.release.wait(GUARD)
            return legal_moves[0]
        finally:
            with Held.lock:
                Held.thinking -= 1
