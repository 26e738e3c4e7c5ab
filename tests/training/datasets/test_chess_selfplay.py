"""``selfplay_positions``: seeded games labelled as they are played, the same for any number of
workers; every label agrees with python-chess's rules. Needs Stockfish."""

from __future__ import annotations

import itertools

import chess
import pytest

from chess_env.core.players import stockfish_installed
from training.datasets.chess_selfplay import (
    LabelledPosition,
    SelfPlayConfig,
    play_block,
    selfplay_positions,
    win_probability,
)
from training.datasets.uci import MATE_SCORE

pytestmark = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish not installed")

FAST = SelfPlayConfig(label_depth=3, soft_depth=1, max_plies=30)


@pytest.fixture(scope="module")
def rows() -> list[LabelledPosition]:
    positions, _ = selfplay_positions(120, seed=0, config=FAST, progress_bar=False)
    return positions


def test_every_label_is_legal_and_every_legal_move_is_scored(
    rows: list[LabelledPosition],
) -> None:
    assert len(rows) == 120
    for row in rows:
        board = chess.Board(row.fen)
        legal = sorted(move.uci() for move in board.legal_moves)
        assert sorted(row.moves) == legal, row.fen
        assert row.best in legal
        assert list(row.scores) == sorted(row.scores, reverse=True)


def test_games_continue_from_one_position_to_the_next(rows: list[LabelledPosition]) -> None:
    for before, after in itertools.pairwise(rows):
        if before.game != after.game:
            continue
        board = chess.Board(before.fen)
        assert any(_after(board, move).fen() == after.fen for move in before.moves), before.fen


def _after(board: chess.Board, move: str) -> chess.Board:
    child = board.copy(stack=False)
    child.push_uci(move)
    return child


def test_the_same_seed_gives_the_same_rows_for_any_number_of_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("training.datasets.chess_selfplay.BLOCK_POSITIONS", 25)
    one, _ = selfplay_positions(60, seed=3, config=FAST, progress_bar=False)
    again, _ = selfplay_positions(60, seed=3, config=FAST, progress_bar=False)
    assert one == again
    other, _ = selfplay_positions(60, seed=4, config=FAST, progress_bar=False)
    assert [row.fen for row in other] != [row.fen for row in one]
    blocks = [play_block(3, block, quota, FAST)[0] for block, quota in enumerate((25, 25, 10))]
    assert [row for block in blocks for row in block] == one  # a block alone, as a worker plays it


def test_the_cost_counts_this_process_and_the_engine() -> None:
    _, cost = selfplay_positions(10, seed=1, config=FAST, progress_bar=False)
    assert cost.python > 0 and cost.engine > 0


def test_win_probability_is_even_at_zero_and_certain_at_mate() -> None:
    assert win_probability(0) == 0.5
    assert win_probability(MATE_SCORE - 3) == 1.0 and win_probability(-(MATE_SCORE - 2)) == 0.0
    assert 0.5 < win_probability(100) < win_probability(300) < 1.0


def test_no_positions_is_refused() -> None:
    with pytest.raises(ValueError, match="positions must be at least 1"):
        selfplay_positions(0, seed=0)
