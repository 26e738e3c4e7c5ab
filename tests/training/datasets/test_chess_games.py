"""training.datasets.chess_games: chess rows are the positions' own tensors, legal labels and
exact masks; a seed regenerates the same bytes; bad experts are refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import numpy as np
import pytest

import training.experts as experts_module
from chess_env.core.encoding import (
    ACTION_SIZE,
    board_to_tensor,
    decode_action,
    encode_move,
    legal_action_mask,
)
from training.datasets import (
    CHESS_SOURCES,
    MASK_BYTES,
    OPENING_PLIES,
    BCDataset,
    generate_chess_dataset,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from bc_datasets import assert_same
from stockfish_binary import needs_stockfish


def test_chess_rows_are_the_positions_with_legal_labels_and_exact_masks(
    chess_data: BCDataset,
) -> None:
    masks = chess_data.unpacked_masks(np.arange(len(chess_data)))
    assert masks.shape == (90, ACTION_SIZE) and masks.dtype == bool
    for index, fen in enumerate(chess_data.fens):
        board = chess.Board(str(fen))
        np.testing.assert_array_equal(chess_data.observations[index], board_to_tensor(board))
        action = int(chess_data.actions[index])
        assert decode_action(action, board) in board.legal_moves
        legal = {encode_move(move, board.turn) for move in board.legal_moves}
        assert set(np.flatnonzero(masks[index])) == legal
        np.testing.assert_array_equal(masks[index], legal_action_mask(board))


def test_chess_dataset_shapes_and_manifest(chess_data: BCDataset) -> None:
    manifest = chess_data.manifest
    assert chess_data.observations.shape == (90, 8, 8, 12)
    assert chess_data.observations.dtype == np.uint8
    assert chess_data.actions.dtype == np.int64 and chess_data.actions.shape == (90,)
    assert chess_data.masks.shape == (90, MASK_BYTES) and chess_data.masks.dtype == np.uint8
    assert manifest.env == "chess" and manifest.expert == "alphabeta:1"
    assert manifest.positions == 90 and manifest.seed == 0 and manifest.masked
    assert manifest.observation_shape == (8, 8, 12) and manifest.action_size == ACTION_SIZE
    assert manifest.sources == {"vs_random": 45, "self_play": 45}
    assert sum(manifest.sources.values()) == manifest.positions
    assert list(np.bincount(chess_data.source)) == [45, 45]


def test_both_colours_are_to_move_in_both_kinds_of_game(chess_data: BCDataset) -> None:
    for source in range(len(CHESS_SOURCES)):
        turns = {str(fen).split()[1] for fen in chess_data.fens[chess_data.source == source]}
        assert turns == {"w", "b"}, CHESS_SOURCES[source]


def test_the_expert_plays_its_labels_and_the_random_side_does_not_have_to(
    chess_data: BCDataset,
) -> None:
    """Consecutive rows of a game are one legal move apart; the expert's rows play their label
    (every row of self-play after the random opening)."""
    expert_plies, ply = 0, 0
    for index in range(len(chess_data) - 1):
        if chess_data.episodes[index] != chess_data.episodes[index + 1]:
            ply = 0
            continue
        board = chess.Board(str(chess_data.fens[index]))
        after = str(chess_data.fens[index + 1])
        played = [m for m in board.legal_moves if _fen_after(board, m) == after]
        assert played, f"row {index + 1} does not follow row {index}"
        label = decode_action(int(chess_data.actions[index]), board)
        episode = int(chess_data.episodes[index])
        if CHESS_SOURCES[chess_data.source[index]] == "vs_random":
            expert_colour = chess.WHITE if episode % 2 == 0 else chess.BLACK
            expert_turn = board.turn == expert_colour
        else:
            expert_turn = ply >= OPENING_PLIES[1]
        if expert_turn:
            assert played == [label], (index, board.fen())
            expert_plies += 1
        ply += 1
    assert expert_plies > 20


def _fen_after(board: chess.Board, move: chess.Move) -> str:
    board.push(move)
    fen = board.fen()
    board.pop()
    return fen


def test_a_seed_regenerates_the_same_bytes_and_another_seed_other_games() -> None:
    first = generate_chess_dataset("alphabeta:1", 30, seed=4, progress_bar=False)
    again = generate_chess_dataset("alphabeta:1", 30, seed=4, progress_bar=False)
    other = generate_chess_dataset("alphabeta:1", 30, seed=5, progress_bar=False)
    assert_same(first, again)
    assert first.manifest.sha256 == again.manifest.sha256
    assert other.manifest.sha256 != first.manifest.sha256
    assert not np.array_equal(other.observations, first.observations)


def test_alphabeta_two_labels_are_legal() -> None:
    data = generate_chess_dataset("alphabeta", 12, seed=1, progress_bar=False)
    assert data.manifest.expert == "alphabeta:2"
    for fen, action in zip(data.fens, data.actions, strict=True):
        decode_action(int(action), chess.Board(str(fen)))


def test_auto_records_the_expert_it_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experts_module, "stockfish_installed", lambda: False)
    data = generate_chess_dataset("auto", 4, seed=0, progress_bar=False)
    assert data.manifest.expert == "alphabeta:2"


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_datasets_are_legal_and_reproducible() -> None:
    first = generate_chess_dataset("auto", 40, seed=2, progress_bar=False)
    again = generate_chess_dataset("stockfish:1", 40, seed=2, progress_bar=False)
    assert first.manifest.expert == "stockfish:1"
    assert_same(first, again)
    for fen, action in zip(first.fens, first.actions, strict=True):
        decode_action(int(action), chess.Board(str(fen)))


@pytest.mark.parametrize("positions", [0, -3])
def test_a_dataset_needs_positions(positions: int) -> None:
    with pytest.raises(ValueError, match="positions"):
        generate_chess_dataset("alphabeta:1", positions, seed=0, progress_bar=False)


def test_a_bad_expert_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'minimax:2'"):
        generate_chess_dataset("minimax:2", 10, seed=0, progress_bar=False)
