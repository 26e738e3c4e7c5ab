"""Move quality: centipawn loss from both sides, finished games, the thresholds, lichess's
accuracy, the summaries, the evaluation cache on disk, and Stockfish (one engine or a pool)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Mapping
from pathlib import Path

import chess
import pytest

from chess_env.arena.analysis import (
    BLUNDER_CP,
    CP_CAP,
    INACCURACY_CP,
    MISTAKE_CP,
    EvalCache,
    MoveEval,
    QualitySummary,
    StockfishEvaluator,
    analyse_game,
    analyse_games,
    move_accuracy,
)
from chess_env.errors import StockfishNotFoundError

sys.path.insert(0, str(Path(__file__).parents[2] / "support"))
from stockfish_binary import needs_stockfish

FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
KNIGHTS_OUT_AND_BACK = ["g1f3", "g8f6", "f3g1", "f6g8"]
QUEEN_HANGS_FEN = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"


class Counting:
    """A fake evaluator: scripted values by EPD (default 0), counting its calls; a finished
    game given to it is a test failure (those positions must never reach an engine)."""

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        self.values = dict(values or {})
        self.calls: list[str] = []

    def __call__(self, board: chess.Board) -> int:
        assert not board.is_game_over(claim_draw=False), f"finished game evaluated: {board.fen()}"
        self.calls.append(board.epd())
        return self.values.get(board.epd(), 0)


def epd_after(moves: list[str], start: chess.Board | None = None) -> str:
    board = (start or chess.Board()).copy()
    for uci in moves:
        board.push_uci(uci)
    return board.epd()


def move_eval(cp_loss: int, kind: str, accuracy: float = 90.0) -> MoveEval:
    return MoveEval(
        ply=0,
        uci="e2e4",
        color=chess.WHITE,
        cp_before=0,
        cp_after=-cp_loss,
        cp_loss=cp_loss,
        accuracy=accuracy,
        kind=kind,  # type: ignore[arg-type]
    )


# -- centipawn loss, points of view, finished games ----------------------------------------------


def test_each_side_is_judged_from_its_own_point_of_view() -> None:
    values = {
        chess.Board().epd(): 30,  # White to move, +30 for White
        epd_after(["e2e4"]): -25,  # Black to move, -25 for Black: White kept +25
        epd_after(["e2e4", "e7e5"]): 180,  # White to move, +180: Black's e5 lost 155
        epd_after(["e2e4", "e7e5", "d1h5"]): -300,  # Black to move: Qh5 gained, loss 0
    }
    evals = analyse_game(chess.Board(), ["e2e4", "e7e5", "d1h5"], Counting(values))
    rows = [(e.ply, e.uci, e.color, e.cp_before, e.cp_after, e.cp_loss) for e in evals]
    assert rows == [
        (0, "e2e4", chess.WHITE, 30, 25, 5),
        (1, "e7e5", chess.BLACK, -25, -180, 155),
        (2, "d1h5", chess.WHITE, 180, 300, 0),
    ]
    assert [e.kind for e in evals] == ["ok", "mistake", "ok"]


def test_a_start_with_black_to_move_starts_with_black() -> None:
    start = chess.Board(QUEEN_HANGS_FEN)
    evals = analyse_game(start, ["b8c6", "f1b5"], Counting())
    assert [e.color for e in evals] == [chess.BLACK, chess.WHITE]


def test_evaluations_are_clipped_to_the_cap() -> None:
    values = {chess.Board().epd(): 5000, epd_after(["e2e4"]): 99_000}
    [only] = analyse_game(chess.Board(), ["e2e4"], Counting(values))
    assert (only.cp_before, only.cp_after, only.cp_loss) == (CP_CAP, -CP_CAP, 2 * CP_CAP)


def test_checkmate_is_the_cap_for_the_mated_side_without_asking_the_evaluator() -> None:
    evaluator = Counting()
    evals = analyse_game(chess.Board(), FOOLS_MATE, evaluator)
    assert len(evaluator.calls) == 4  # the four positions before the mate, not the mate
    assert (evals[-1].color, evals[-1].cp_after, evals[-1].cp_loss) == (chess.BLACK, CP_CAP, 0)


@pytest.mark.parametrize(
    ("fen", "uci"),
    [
        ("k7/8/8/1Q6/8/8/8/7K w - - 0 1", "b5b6"),  # stalemate
        ("7k/8/8/8/8/8/1n6/K1B5 w - - 0 1", "a1b2"),  # king and bishop against king
    ],
)
def test_a_draw_by_rule_is_zero_without_asking_the_evaluator(fen: str, uci: str) -> None:
    evaluator = Counting({chess.Board(fen).epd(): 700})
    [only] = analyse_game(chess.Board(fen), [uci], evaluator)
    assert (only.cp_before, only.cp_after, only.cp_loss, only.kind) == (700, 0, 700, "blunder")
    assert len(evaluator.calls) == 1


def test_fivefold_repetition_is_a_draw_and_repeated_positions_are_evaluated_once() -> None:
    evaluator = Counting({chess.Board().epd(): 40})
    evals = analyse_game(chess.Board(), KNIGHTS_OUT_AND_BACK * 4, evaluator)
    assert len(evaluator.calls) == 4  # four distinct positions among the seventeen
    assert evals[3].cp_after == -40 and evals[-1].cp_after == 0  # the fifth time is a draw


def test_an_illegal_move_names_its_ply_and_nothing_is_evaluated() -> None:
    evaluator = Counting()
    with pytest.raises(ValueError, match=r"ply 2: illegal move 'e2e4'"):
        analyse_game(chess.Board(), ["e2e4", "e7e5", "e2e4"], evaluator)
    assert evaluator.calls == []


# -- thresholds and accuracy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loss", "kind"),
    [
        (0, "ok"),
        (INACCURACY_CP - 1, "ok"),
        (INACCURACY_CP, "inaccuracy"),
        (MISTAKE_CP - 1, "inaccuracy"),
        (MISTAKE_CP, "mistake"),
        (BLUNDER_CP - 1, "mistake"),
        (BLUNDER_CP, "blunder"),
        (CP_CAP, "blunder"),
    ],
)
def test_a_loss_at_a_threshold_is_of_that_kind(loss: int, kind: str) -> None:
    values = {chess.Board().epd(): 0, epd_after(["e2e4"]): loss}
    [only] = analyse_game(chess.Board(), ["e2e4"], Counting(values))
    assert (only.cp_loss, only.kind) == (loss, kind)


def test_accuracy_is_100_without_loss_and_falls_as_the_loss_grows() -> None:
    [only] = analyse_game(chess.Board(), ["e2e4"], Counting())
    assert only.accuracy == pytest.approx(100.0)
    accuracies = [move_accuracy(0, -loss) for loss in range(0, CP_CAP + 1, 10)]
    assert all(a >= b for a, b in itertools.pairwise(accuracies))
    below = [a for a in accuracies if a < 100]
    assert all(a > b for a, b in itertools.pairwise(below)) and len(below) == 100
    assert 0 <= accuracies[-1] < 15
    assert move_accuracy(-300, 200) == 100.0  # a move that gains is perfect


def test_accuracy_follows_the_win_chance_not_the_centipawns() -> None:
    even, winning = move_accuracy(150, -150), move_accuracy(900, 600)
    assert even < 40 < 70 < winning  # the same 300 cp weigh more when the game is balanced


# -- summaries -----------------------------------------------------------------------------------


def test_summarise_counts_each_move_once_by_its_kind() -> None:
    evals = [
        move_eval(0, "ok", 100.0),
        move_eval(60, "inaccuracy", 70.0),
        move_eval(100, "mistake", 50.0),
        move_eval(199, "mistake", 40.0),
        move_eval(250, "blunder", 20.0),
        move_eval(1200, "blunder", 0.0),
    ]
    summary = QualitySummary.summarise(iter(evals))
    assert (summary.moves, summary.blunders, summary.mistakes, summary.inaccuracies) == (6, 2, 2, 1)
    assert summary.acpl == pytest.approx(1809 / 6)
    assert summary.accuracy == pytest.approx(280 / 6)


def test_summarise_of_no_moves_has_no_averages() -> None:
    assert QualitySummary.summarise([]) == QualitySummary(0, None, 0, 0, 0, None)


# -- the cache -----------------------------------------------------------------------------------


def test_a_second_analysis_with_the_same_cache_evaluates_nothing() -> None:
    cache = EvalCache()
    first, second = Counting({chess.Board().epd(): 30}), Counting()
    evals = analyse_game(chess.Board(), FOOLS_MATE, first, cache=cache, depth=8)
    assert analyse_game(chess.Board(), FOOLS_MATE, second, cache=cache, depth=8) == evals
    assert (len(first.calls), second.calls, len(cache)) == (4, [], 4)
    analyse_game(chess.Board(), FOOLS_MATE, second, cache=cache, depth=9)  # depth is in the key
    assert len(second.calls) == 4


def test_a_cache_file_reloaded_gives_the_same_values(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "evals.jsonl"
    values = {epd_after(FOOLS_MATE[:n]): 10 * n - 15 for n in range(4)}
    evals = analyse_game(
        chess.Board(), FOOLS_MATE, Counting(values), cache=EvalCache(path), depth=8
    )
    assert len(path.read_text().splitlines()) == 4
    reloaded, evaluator = EvalCache(path), Counting()
    assert len(reloaded) == 4 and reloaded.get(chess.Board(), 8) == -15
    assert analyse_game(chess.Board(), FOOLS_MATE, evaluator, cache=reloaded, depth=8) == evals
    assert evaluator.calls == []


def test_a_torn_last_line_is_dropped_and_cut_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "evals.jsonl"
    whole = json.dumps({"epd": chess.Board().epd(), "depth": 8, "cp": 20}) + "\n"
    path.write_text(whole + '{"epd": "rnbqkbnr/pppp', encoding="utf-8")
    cache = EvalCache(path)
    assert len(cache) == 1 and path.read_text() == whole
    cache.put(chess.Board(epd_after(["e2e4"])), 8, -20)
    assert len(EvalCache(path)) == 2


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"epd": chess.Board().epd(), "depth": 8, "cp": 20}))
    EvalCache(path).put(chess.Board(epd_after(["e2e4"])), 8, -20)
    assert EvalCache(path).get(chess.Board(), 8) == 20 and len(EvalCache(path)) == 2


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        '{"epd": "8/8/8/8/8/8/8/K6k w - -", "depth": 8}',
        '{"epd": 1, "depth": 8, "cp": 1}',
    ],
)
def test_a_corrupt_line_before_the_last_names_the_file_and_the_line(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "evals.jsonl"
    good = json.dumps({"epd": chess.Board().epd(), "depth": 8, "cp": 20})
    path.write_text(f"{good}\n{bad}\n{good}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}, line 2: not an evaluation"):
        EvalCache(path)


# -- analyse_games without an engine -------------------------------------------------------------


def test_analyse_games_needs_no_engine_when_every_position_is_cached(tmp_path: Path) -> None:
    path = tmp_path / "evals.jsonl"
    cache = EvalCache(path)
    for n in range(4):
        cache.put(chess.Board(epd_after(FOOLS_MATE[:n])), 8, n)
    size = path.stat().st_size
    [evals] = analyse_games(
        [(chess.STARTING_FEN, FOOLS_MATE)], 8, cache_path=path, stockfish_path="/no/stockfish"
    )
    assert [e.cp_before for e in evals] == [0, 1, 2, 3] and evals[-1].cp_after == CP_CAP
    assert path.stat().st_size == size
    with pytest.raises(StockfishNotFoundError, match="/no/stockfish"):  # depth 9 is not cached
        analyse_games(
            [(chess.STARTING_FEN, FOOLS_MATE)], 9, cache_path=path, stockfish_path="/no/stockfish"
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depth": 0}, "depth must be in 1..30"),
        ({"depth": 31}, "depth must be in 1..30"),
        ({"workers": 0}, "workers must be at least 1"),
        (
            {"games": [(chess.STARTING_FEN, ["e2e4"]), (chess.STARTING_FEN, ["e2e5"])]},
            "game 1: ply 0",
        ),
    ],
)
def test_analyse_games_refuses_bad_arguments_before_any_work(
    kwargs: dict[str, object], message: str
) -> None:
    arguments: dict[str, object] = {"games": [(chess.STARTING_FEN, ["e2e4"])], "depth": 8}
    arguments.update(kwargs)
    games, depth = arguments.pop("games"), arguments.pop("depth")
    with pytest.raises(ValueError, match=message):
        analyse_games(games, depth, cache_path=None, stockfish_path="/no/stockfish", **arguments)  # type: ignore[arg-type]


# -- Stockfish -----------------------------------------------------------------------------------


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_calls_a_hung_queen_a_blunder_and_its_capture_fine() -> None:
    with StockfishEvaluator(8) as evaluator:
        hung, taken = analyse_game(chess.Board(QUEEN_HANGS_FEN), ["d8g5", "f3g5"], evaluator)
        only_move = chess.Board("rQ3b2/4kp2/p1p1p3/1p1p4/1P4bp/8/n2PPqBP/1RB2KNR w - - 0 23")
        assert [move.uci() for move in only_move.legal_moves] == ["f1f2"]
        [forced] = analyse_game(only_move, ["f1f2"], evaluator)
    assert hung.kind == "blunder" and hung.cp_loss >= 500 and hung.accuracy < 30
    assert taken.cp_loss < INACCURACY_CP and forced.cp_loss < INACCURACY_CP


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_values_do_not_depend_on_what_came_before() -> None:
    positions = [chess.Board(), chess.Board(QUEEN_HANGS_FEN), chess.Board(epd_after(["d2d4"]))]
    reached = chess.Board()
    for uci in ["g1f3", "b8c6", "f3g1", "c6b8", "d2d4"]:  # the last position, with a history
        reached.push_uci(uci)
    with StockfishEvaluator(8) as fresh:
        alone = fresh(positions[-1])
    with StockfishEvaluator(8) as used:
        in_order = [used(board) for board in positions]
        backwards = [used(board) for board in reversed(positions)][::-1]
        assert used(reached) == alone
    assert in_order == backwards and in_order[-1] == alone


@needs_stockfish
@pytest.mark.stockfish
def test_analyse_games_in_two_workers_equals_one_and_a_rerun_starts_no_engine(
    tmp_path: Path,
) -> None:
    games = [
        (chess.STARTING_FEN, ["e2e4", "e7e5", "g1f3", "d8g5", "f3g5"]),
        (QUEEN_HANGS_FEN, ["b8c6", "f1b5", "a7a6"]),
        (chess.STARTING_FEN, FOOLS_MATE),
    ]
    one = analyse_games(games, 8, cache_path=None, workers=1)
    path = tmp_path / "evals.jsonl"
    two = analyse_games(games, 8, cache_path=path, workers=2)
    assert two == one and [len(evals) for evals in two] == [5, 3, 4]
    entries = path.read_text()
    rerun = analyse_games(games, 8, cache_path=path, workers=2, stockfish_path="/no/stockfish")
    assert rerun == one and path.read_text() == entries
