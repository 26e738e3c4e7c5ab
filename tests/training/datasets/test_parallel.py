"""training.datasets.parallel: seeded blocks make the rows independent of the number of workers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from training.datasets import (
    generate_chess_dataset,
    parallel,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))


def test_parallel_workers_label_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks are seeded on their own, so the pool's size changes nothing in the data."""
    monkeypatch.setattr(parallel, "BLOCK_POSITIONS", 7)  # several blocks per source
    alone = generate_chess_dataset("alphabeta:1", 30, seed=3, progress_bar=False)
    pooled = generate_chess_dataset("alphabeta:1", 30, seed=3, progress_bar=False, workers=2)
    assert alone.manifest == pooled.manifest
    assert np.array_equal(alone.observations, pooled.observations)
    assert np.array_equal(alone.actions, pooled.actions)
    assert np.array_equal(alone.episodes, pooled.episodes)
    # episodes are whole games: unique per block, increasing over the blocks
    assert np.all(np.diff(alone.episodes) >= 0) and alone.episodes[0] == 0
