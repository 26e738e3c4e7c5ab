"""training.datasets.dataset: files round-trip and refuse tampering; splits keep games whole."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chess_env.core.encoding import (
    ACTION_SIZE,
    legal_action_mask,
)
from training.datasets import (
    BCDataset,
    DatasetError,
    load_dataset,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from bc_datasets import assert_same, synthetic

# -- files --------------------------------------------------------------------------------------


def test_save_and_load_round_trip(chess_data: BCDataset, tmp_path: Path) -> None:
    npz = chess_data.save(tmp_path / "sub" / "data")
    assert npz == tmp_path / "sub" / "data.npz"
    manifest = json.loads((tmp_path / "sub" / "data.json").read_text(encoding="utf-8"))
    assert manifest["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
    for name in ("data", "data.npz", "data.json"):
        assert_same(load_dataset(tmp_path / "sub" / name), chess_data)
    with np.load(npz) as stored:  # a plain npz: numpy reads it without this module
        np.testing.assert_array_equal(stored["actions"], chess_data.actions)


def test_world_datasets_round_trip_too(trade_data: BCDataset, tmp_path: Path) -> None:
    assert_same(load_dataset(trade_data.save(tmp_path / "trade.npz")), trade_data)


def test_a_changed_npz_is_refused_naming_it(chess_data: BCDataset, tmp_path: Path) -> None:
    npz = chess_data.save(tmp_path / "data")
    content = bytearray(npz.read_bytes())
    content[len(content) // 2] ^= 0xFF
    npz.write_bytes(bytes(content))
    with pytest.raises(DatasetError, match="SHA-256") as caught:
        load_dataset(npz)
    assert str(npz) in str(caught.value)


@pytest.mark.parametrize("missing", ["data.npz", "data.json"])
def test_a_missing_file_is_named(chess_data: BCDataset, tmp_path: Path, missing: str) -> None:
    chess_data.save(tmp_path / "data")
    (tmp_path / missing).unlink()
    with pytest.raises(DatasetError, match="no such") as caught:
        load_dataset(tmp_path / "data")
    assert str(tmp_path / missing) in str(caught.value)


def test_an_invalid_manifest_is_named(chess_data: BCDataset, tmp_path: Path) -> None:
    chess_data.save(tmp_path / "data")
    manifest = tmp_path / "data.json"
    payload = json.loads(manifest.read_text(encoding="utf-8"))
    payload["positions"] = 0
    manifest.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(DatasetError, match="positions") as caught:
        load_dataset(tmp_path / "data")
    assert str(manifest) in str(caught.value)


def test_arrays_that_do_not_fit_the_manifest_are_refused(
    chess_data: BCDataset, tmp_path: Path
) -> None:
    """A consistent hash over wrong arrays: the shapes are checked after the hash."""
    arrays = chess_data.arrays()
    arrays["actions"] = arrays["actions"][:-1]
    npz = tmp_path / "data.npz"
    np.savez_compressed(npz, **arrays)
    manifest = chess_data.manifest.model_copy(
        update={"sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}
    )
    (tmp_path / "data.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    with pytest.raises(DatasetError, match="rows") as caught:
        load_dataset(npz)
    assert str(npz) in str(caught.value)


def test_unpacked_masks_of_a_batch(chess_data: BCDataset) -> None:
    batch = chess_data.unpacked_masks(np.array([5, 0]))
    assert batch.shape == (2, ACTION_SIZE)
    np.testing.assert_array_equal(batch[1], legal_action_mask(chess.Board(chess_data.fens[0])))


# -- splits -------------------------------------------------------------------------------------


def test_split_keeps_games_whole_and_follows_the_seed() -> None:
    data = synthetic([10] * 10)
    train, val = data.split(0.2, seed=3)
    assert len(val) == 20 and len(train) == 80
    assert not set(train.episodes) & set(val.episodes)
    assert train.manifest.positions == 80 and val.manifest.positions == 20
    assert_same(data.split(0.2, seed=3)[1], val)
    others = {tuple(sorted(set(data.split(0.2, seed=seed)[1].episodes))) for seed in range(8)}
    assert len(others) > 1


def test_split_draws_rows_when_every_game_is_too_long() -> None:
    train, val = synthetic([50, 50]).split(0.1, seed=0)
    assert (len(train), len(val)) == (90, 10)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 30), min_size=1, max_size=12).filter(lambda s: sum(s) >= 2),
    val_fraction=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**32),
)
def test_split_is_a_partition_into_two_nonempty_parts(
    sizes: list[int], val_fraction: float, seed: int
) -> None:
    data = synthetic(sizes)
    train, val = data.split(val_fraction, seed)
    assert len(train) >= 1 and len(val) >= 1
    rows = sorted([*train.actions.tolist(), *val.actions.tolist()])
    assert rows == list(range(sum(sizes)))
    for part in (train, val):
        assert sum(part.manifest.sources.values()) == part.manifest.positions == len(part)


def test_split_rejects_a_bad_fraction_and_a_single_row() -> None:
    with pytest.raises(ValueError, match="val_fraction"):
        synthetic([5]).split(1.0, seed=0)
    with pytest.raises(DatasetError, match="cannot split"):
        synthetic([1]).split(0.5, seed=0)


def test_split_parts_carry_their_own_hash(chess_data: BCDataset, tmp_path: Path) -> None:
    train, _ = chess_data.split(0.2, seed=0)
    assert train.manifest.sha256 != chess_data.manifest.sha256
    assert_same(load_dataset(train.save(tmp_path / "train")), train)
