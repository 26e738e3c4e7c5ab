"""Helpers shared by the tests of training.datasets."""

from __future__ import annotations

import numpy as np

from chess_env.core.encoding import ACTION_SIZE
from training.datasets import CHESS_SOURCES, MASK_BYTES, BCDataset
from training.dto import DatasetManifest


def assert_same(left: BCDataset, right: BCDataset) -> None:
    assert left.manifest == right.manifest
    assert left.arrays().keys() == right.arrays().keys()
    for name, array in left.arrays().items():
        np.testing.assert_array_equal(array, right.arrays()[name], err_msg=name)
        assert array.dtype == right.arrays()[name].dtype, name


def synthetic(sizes: list[int]) -> BCDataset:
    """A chess-shaped dataset with games of the given sizes (contents irrelevant)."""
    rows = sum(sizes)
    return BCDataset(
        observations=np.zeros((rows, 8, 8, 12), dtype=np.uint8),
        actions=np.arange(rows, dtype=np.int64),
        masks=np.zeros((rows, MASK_BYTES), dtype=np.uint8),
        episodes=np.repeat(np.arange(len(sizes), dtype=np.int32), sizes),
        source=(np.repeat(np.arange(len(sizes)), sizes) % 2).astype(np.uint8),
        fens=None,
        manifest=DatasetManifest(
            env="chess",
            expert="alphabeta:1",
            positions=rows,
            seed=0,
            sha256="0" * 64,
            observation_shape=(8, 8, 12),
            action_size=ACTION_SIZE,
            masked=True,
            sources={name: 0 for name in CHESS_SOURCES},
        ),
    )
