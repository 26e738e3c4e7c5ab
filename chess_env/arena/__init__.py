"""The arena: tournaments between any players, ratings on one anchored scale, scorecards.

``run(players, anchors=..., format=..., out=...)`` plays a round robin or a gauntlet (resumable
from ``OUT/games.jsonl``), fits Bradley-Terry ratings pinned to the anchors (by default a Stockfish
``UCI_Elo`` ladder) with bootstrap intervals, and writes ``result.json`` (``ArenaResult``),
``games.pgn`` and a leaderboard (markdown and HTML). ``python -m chess_env arena`` is its command
line. The modules:

- ``openings``: opening suites (the package's default, ``startpos``, FEN/EPD/PGN files);
- ``schedule``: pairings, colours and seeds; ``match``: one game; ``store``: ``OUT/`` and resuming;
- ``ratings``: the fit and its intervals; ``analysis``: move quality by Stockfish;
- ``scorecard``: the ``ArenaResult`` from the games; ``results``: the DTOs;
- ``report`` and ``pgn_export``: the leaderboard and the PGN; ``runner``: ``run``/``prepare``.

The heavy parts (scipy for the fit) load on first use, so ``python -m chess_env`` starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULT_LADDER",
    "ArenaConfig",
    "ArenaGame",
    "ArenaResult",
    "Tournament",
    "fit_ratings",
    "load_openings",
    "prepare",
    "run",
]

_HOMES = {
    "DEFAULT_LADDER": "schedule",
    "ArenaConfig": "results",
    "ArenaGame": "results",
    "ArenaResult": "results",
    "Tournament": "runner",
    "fit_ratings": "ratings",
    "load_openings": "openings",
    "prepare": "runner",
    "run": "runner",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'chess_env.arena' has no attribute {name!r}")
    return getattr(importlib.import_module(f"chess_env.arena.{_HOMES[name]}"), name)
