"""The arena's ratings: the anchored Bradley-Terry fit of ``envkit.ratings``, by the arena's name.

The model, its prior and its optimiser are shared with the world evaluation, which may not import
the arena, so they live in envkit (the Wilson interval in ``envkit.stats``). The arena anchors
them on its Stockfish ladder at fixed ``UCI_Elo`` values, and ``GameScore.white`` is the player of
the white pieces.

Example:
    >>> games = [GameScore("stockfish-1500", "x", 0.0), GameScore("x", "stockfish-1500", 0.5)] * 5
    >>> round(bradley_terry(games, ["stockfish-1500", "x"], {"stockfish-1500": 1500})["x"])
    1670
"""

from __future__ import annotations

from envkit.ratings import (
    GameScore,
    RatingFit,
    bradley_terry,
    expected_score,
    fit_ratings,
    score_matrix,
)
from envkit.stats import wilson_interval

__all__ = [
    "GameScore",
    "RatingFit",
    "bradley_terry",
    "expected_score",
    "fit_ratings",
    "score_matrix",
    "wilson_interval",
]
