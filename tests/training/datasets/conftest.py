"""Datasets made once per test module: small, but every kind of row."""

from __future__ import annotations

import pytest

from training.datasets import BCDataset, generate_chess_dataset, generate_world_dataset


@pytest.fixture(scope="module")
def chess_data() -> BCDataset:
    return generate_chess_dataset("alphabeta:1", 90, seed=0, progress_bar=False)


@pytest.fixture(scope="module")
def trade_data() -> BCDataset:
    return generate_world_dataset("trade", 12, seed=0, progress_bar=False)
