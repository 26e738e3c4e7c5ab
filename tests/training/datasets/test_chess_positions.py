"""training.datasets.chess_positions: DAgger's positions labelled, with the moves that mate and
draw their game there."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import numpy as np
import pytest

from chess_env.core.encoding import (
    decode_action,
)
from chess_env.core.rules import ChessGame
from training.datasets import (
    BCDataset,
    DatasetError,
    combine,
    label_positions,
    load_dataset,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from bc_datasets import assert_same

# -- moves to avoid (DAgger's drawn games) ------------------------------------------------------

STALEMATE_FEN = "k7/8/8/2Q5/8/8/8/7K w - - 0 1"  # Qb6 and Qc7 stalemate
MATE_FEN = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8 mates


def endings_data() -> BCDataset:
    fens = [chess.STARTING_FEN, STALEMATE_FEN, MATE_FEN]
    endings = [ChessGame(chess.Board(fen)).ending_actions() for fen in fens]
    return label_positions(
        "alphabeta:1", fens, np.array([0, 1, 2]), seed=0, endings=endings, progress_bar=False
    )


def ucis(data: BCDataset, name: str, row: int) -> set[str]:
    board = chess.Board(str(data.fens[row]))
    return {decode_action(int(a), board).uci() for a in np.flatnonzero(data.unpacked(name, [row]))}


def test_mates_and_avoid_mark_the_ending_moves_and_round_trip(tmp_path: Path) -> None:
    data = endings_data()
    assert [ucis(data, "mates", row) for row in range(3)] == [set(), set(), {"a1a8"}]
    assert [ucis(data, "avoid", row) for row in range(3)] == [set(), {"c5b6", "c5c7"}, set()]
    data.save(tmp_path / "data")
    assert_same(load_dataset(tmp_path / "data"), data)
    assert ucis(data.subset(np.array([1])), "avoid", 0) == {"c5b6", "c5c7"}


def test_combine_keeps_the_move_sets_and_marks_nothing_where_they_were_unknown(
    chess_data: BCDataset,
) -> None:
    both = combine([chess_data, endings_data()])
    assert len(both) == len(chess_data) + 3
    for name in ("mates", "avoid"):
        assert not both.unpacked(name, np.arange(len(chess_data))).any()
        np.testing.assert_array_equal(getattr(both, name)[-3:], getattr(endings_data(), name))
    plain = combine([chess_data, chess_data])
    assert plain.mates is None and plain.avoid is None
    with pytest.raises(DatasetError, match="has no moves to avoid"):
        plain.unpacked("avoid", [0])


def test_move_sets_must_fit_the_positions_and_the_mask_shape(chess_data: BCDataset) -> None:
    with pytest.raises(ValueError, match="endings has 1 entries for 2 positions"):
        label_positions(
            "alphabeta:1", [chess.STARTING_FEN] * 2, np.array([0, 0]), 0,
            endings=[ChessGame().ending_actions()], progress_bar=False,
        )  # fmt: skip
    for name in ("mates", "avoid"):
        with pytest.raises(DatasetError, match=f"{name} must be"):
            BCDataset(**{**vars(chess_data), name: np.zeros((len(chess_data), 3), np.uint8)})
