"""``UciEngine``, the raw UCI pipe: its lines agree with python-chess's rules and engine wrapper.

Needs Stockfish (``apt-get install stockfish``); skipped with that reason without it."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from chess_env.core.opponents import find_stockfish
from chess_env.core.players import stockfish_installed
from chess_env.errors import StockfishNotFoundError
from training.datasets.uci import MATE_SCORE, Line, UciEngine

pytestmark = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish not installed")

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#
HANGING_QUEEN = "rnb1kbnr/pppp1ppp/8/4p1q1/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 1"  # Bxg5 wins it
MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1B1PPP/R2QKB1R w KQ - 0 8"


@pytest.fixture(scope="module")
def engine() -> UciEngine:
    with UciEngine() as uci:
        yield uci


def test_a_mate_in_one_is_found_and_scored_as_mate(engine: UciEngine) -> None:
    (line,) = engine.analyse(MATE_IN_ONE, depth=4)
    assert line == Line("a1a8", MATE_SCORE - 1)
    board = chess.Board(MATE_IN_ONE)
    board.push_uci(line.move)
    assert board.is_checkmate()


def test_the_side_being_mated_scores_below_every_material_score(engine: UciEngine) -> None:
    board = chess.Board("k7/8/1K6/8/8/8/8/7R b - - 0 1")  # Kb8, the only move, then Rh8#
    lines = engine.analyse(board.fen(), depth=6, multipv=board.legal_moves.count())
    assert all(line.score == -(MATE_SCORE - 2) for line in lines)


def test_a_hanging_queen_is_taken(engine: UciEngine) -> None:
    (line,) = engine.analyse(HANGING_QUEEN, depth=6)
    assert line.move == "c1g5" and line.score > 600


def test_multipv_scores_every_legal_move_best_first(engine: UciEngine) -> None:
    board = chess.Board(MIDDLEGAME)
    lines = engine.analyse(MIDDLEGAME, depth=3, multipv=board.legal_moves.count())
    assert sorted(line.move for line in lines) == sorted(m.uci() for m in board.legal_moves)
    scores = [line.score for line in lines]
    assert scores == sorted(scores, reverse=True)


def test_a_position_without_moves_has_no_lines(engine: UciEngine) -> None:
    mated = chess.Board(MATE_IN_ONE)
    mated.push_uci("a1a8")
    assert engine.analyse(mated.fen(), depth=4) == []


def test_the_same_position_after_new_game_gives_the_same_lines(engine: UciEngine) -> None:
    engine.new_game()
    first = engine.analyse(MIDDLEGAME, depth=7, multipv=3)
    engine.analyse(HANGING_QUEEN, depth=7)  # fills the hash with something else
    engine.new_game()
    assert engine.analyse(MIDDLEGAME, depth=7, multipv=3) == first


def test_the_best_line_agrees_with_python_chess_engine_wrapper(engine: UciEngine) -> None:
    engine.new_game()
    ours = engine.analyse(MIDDLEGAME, depth=8)[0]
    with chess.engine.SimpleEngine.popen_uci(find_stockfish()) as wrapped:
        wrapped.configure({"Threads": 1, "Hash": 16})
        info = wrapped.analyse(chess.Board(MIDDLEGAME), chess.engine.Limit(depth=8))
    assert ours.move == info["pv"][0].uci()
    assert ours.score == info["score"].relative.score()


def test_the_engines_cpu_time_is_counted(engine: UciEngine) -> None:
    before = engine.cpu_seconds()
    engine.analyse(MIDDLEGAME, depth=12)
    assert engine.cpu_seconds() > before


def test_a_missing_binary_is_named() -> None:
    with pytest.raises(StockfishNotFoundError, match="no Stockfish binary found at '/no/sf'"):
        UciEngine("/no/sf")
