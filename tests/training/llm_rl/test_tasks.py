"""The shipped chess task set is ground truth; ``check_answer``, ``seed_dataset`` and the builder.

Mates are checked by python-chess alone, with a search written here independently of the one the
builder uses; material and blunder tasks by searching them again with the Stockfish that built them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import chess
import chess.engine
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stockfish_binary import needs_stockfish

from chess_env.text.prompt_conditions import PRESETS
from training.llm_rl.datasets import seed_dataset
from training.llm_rl.tasks import (
    BLUNDER_CP,
    META_FILE,
    MINOR_PIECE_CP,
    TASK_KINDS,
    WIN_MARGIN_CP,
    ChessTask,
    build_tasks,
    check_answer,
    load_tasks,
)

ROOT = Path(__file__).parents[3]
TASKS = load_tasks()
MATE_CP = 100_000


def _by_kind(kind: str) -> list[ChessTask]:
    return [task for task in TASKS if task.kind == kind]


def _mates_within(board: chess.Board, moves: int) -> bool:
    """Whether the side to move can force mate within ``moves`` of its moves (plain minimax)."""
    for move in list(board.legal_moves):
        if moves == 1 and not board.gives_check(move):
            continue
        board.push(move)
        try:
            if board.is_checkmate():
                return True
            replies = list(board.legal_moves)
            if (
                moves > 1
                and replies
                and all(_reply_loses(board, reply, moves - 1) for reply in replies)
            ):
                return True
        finally:
            board.pop()
    return False


def _reply_loses(board: chess.Board, reply: chess.Move, moves: int) -> bool:
    board.push(reply)
    try:
        return _mates_within(board, moves)
    finally:
        board.pop()


# -- the shipped set ---------------------------------------------------------------------------


def test_the_set_has_every_kind_and_unique_valid_positions() -> None:
    assert {task.kind for task in TASKS} == set(TASK_KINDS)
    positions = [chess.Board(task.fen).epd() for task in TASKS]
    assert len(set(positions)) == len(positions)
    assert len({task.task_id for task in TASKS}) == len(TASKS)
    for task in TASKS:
        board = chess.Board(task.fen)
        assert board.is_valid(), task.task_id
        assert board.fen() == task.fen, task.task_id
        assert not board.is_game_over(), task.task_id


def test_answers_are_legal_sorted_and_include_the_best_move() -> None:
    for task in TASKS:
        legal = {move.uci() for move in chess.Board(task.fen).legal_moves}
        assert task.answers, task.task_id
        assert set(task.answers) <= legal, task.task_id
        assert list(task.answers) == sorted(set(task.answers)), task.task_id
        assert task.best in task.answers, task.task_id
        assert (task.mate is None) != (task.eval_cp is None), task.task_id


def test_mate_in_one_answers_are_exactly_the_mating_moves() -> None:
    for task in _by_kind("mate_in_1"):
        board = task.board()
        for move in board.legal_moves:
            board.push(move)
            mates = board.is_checkmate()
            board.pop()
            assert mates == (move.uci() in task.answers), (task.task_id, move.uci())


def test_mate_in_two_answers_are_exactly_the_moves_that_force_mate_in_two() -> None:
    for task in _by_kind("mate_in_2"):
        board = task.board()
        assert not _mates_within(board, 1), task.task_id
        forcing = set()
        for move in board.legal_moves:
            board.push(move)
            replies = list(board.legal_moves)
            if replies and all(_reply_loses(board, reply, 1) for reply in replies):
                forcing.add(move.uci())
            board.pop()
        assert forcing == set(task.answers), task.task_id


def _meta() -> dict[str, Any]:
    text = resources.files("training.llm_rl").joinpath(META_FILE).read_text(encoding="utf-8")
    meta: dict[str, Any] = json.loads(text)
    return meta


def test_meta_file_describes_the_data() -> None:
    data = resources.files("training.llm_rl").joinpath("data")
    meta = _meta()
    assert meta["count"] == len(TASKS)
    assert meta["kinds"] == {kind: len(_by_kind(kind)) for kind in TASK_KINDS}
    assert meta["engine"].startswith("Stockfish")
    assert {"depth", "seed", "date", "openings"} <= set(meta)
    size = len(data.joinpath("chess_tasks.jsonl").read_bytes())
    assert size < 300_000


def test_pyproject_ships_the_data() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"training.llm_rl" = ["data/*"]' in text


@needs_stockfish
@pytest.mark.stockfish
def test_material_and_blunder_answers_are_what_stockfish_says_at_the_build_depth() -> None:
    """Every fourth such task searched again (every move, from a cleared hash, one thread: the
    search is deterministic) gives back the same answers by the kinds' rules, written out here."""
    meta = _meta()
    engine_path = shutil.which("stockfish") or "/usr/games/stockfish"
    with chess.engine.SimpleEngine.popen_uci(engine_path) as engine:
        if engine.id.get("name") != meta["engine"]:
            pytest.skip(f"the set was built with {meta['engine']}, not {engine.id.get('name')}")
        engine.configure({"Threads": 1, "Hash": 16})
        for task in (_by_kind("win_material") + _by_kind("avoid_blunder"))[::4]:
            board = task.board()
            limit = chess.engine.Limit(depth=meta["depth"])
            lines = engine.analyse(board, limit, multipv=board.legal_moves.count(), game=object())
            scores = {
                line["pv"][0].uci(): line["score"].pov(board.turn).score(mate_score=MATE_CP)
                for line in lines
            }
            best = max(scores.values())
            assert scores[task.best] == best == task.eval_cp, task.task_id
            if task.kind == "win_material":
                answers = {move for move, score in scores.items() if score >= best - WIN_MARGIN_CP}
                assert all(scores[m] <= best - BLUNDER_CP for m in set(scores) - answers)
                assert best - _material(board) >= MINOR_PIECE_CP, task.task_id
                assert board.is_capture(chess.Move.from_uci(task.best)), task.task_id
            else:
                answers = {move for move, score in scores.items() if score > best - BLUNDER_CP}
                assert 2 * len(answers) < len(scores), task.task_id
            assert answers == set(task.answers), task.task_id


def _material(board: chess.Board) -> int:
    values = {
        chess.PAWN: 100,
        chess.KNIGHT: 300,
        chess.BISHOP: 300,
        chess.ROOK: 500,
        chess.QUEEN: 900,
    }
    return sum(
        value * (len(board.pieces(piece, board.turn)) - len(board.pieces(piece, not board.turn)))
        for piece, value in values.items()
    )


# -- check_answer and load_tasks ----------------------------------------------------------------


def test_check_answer_takes_san_and_uci_and_refuses_everything_else() -> None:
    for task in TASKS[::4]:
        board = task.board()
        for move in board.legal_moves:
            expected = move.uci() in task.answers
            assert check_answer(task, move.uci()) is expected
            assert check_answer(task, board.san(move)) is expected
            assert check_answer(task, f"  {board.san(move)} ") is expected
    task = TASKS[0]
    for text in ("", "e9e4", "Zz9", "a1a1", "O-O-O-O"):
        assert check_answer(task, text) is False


def _reference_answer(task: ChessTask, text: str) -> str | None:
    """The move ``text`` names, parsed as SAN first (``check_answer`` tries UCI first)."""
    board = task.board()
    for parse in (board.parse_san, board.parse_uci):
        try:
            return parse(text.strip()).uci()
        except ValueError:
            continue
    return None


@settings(max_examples=300, deadline=None)
@given(
    index=st.integers(0, len(TASKS) - 1),
    text=st.text(alphabet="abcdefgh12345678NBRQKxO-+#=qrnb ", max_size=7),
)
def test_check_answer_agrees_with_parsing_san_first(index: int, text: str) -> None:
    task = TASKS[index]
    assert check_answer(task, text) is (_reference_answer(task, text) in task.answers)


def test_load_tasks_filters_by_kind_and_refuses_unknown_kinds() -> None:
    for kind in TASK_KINDS:
        assert load_tasks(kind) == _by_kind(kind)
    with pytest.raises(ValueError, match="kind must be one of"):
        load_tasks("mate_in_3")


def test_load_tasks_names_the_line_of_a_bad_file(tmp_path: Path) -> None:
    good = json.dumps(TASKS[0].to_row())
    path = tmp_path / "tasks.jsonl"
    path.write_text(f"{good}\n\n{{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tasks.jsonl:3: not a task row"):
        load_tasks(path=path)
    path.write_text(good.replace('"mate_in_1"', '"mate_in_9"', 1) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tasks.jsonl:1.kind: must be one of"):
        load_tasks(path=path)
    path.write_text(good + "\n", encoding="utf-8")
    assert load_tasks(path=path) == [TASKS[0]]


# -- seed_dataset -------------------------------------------------------------------------------


def test_seed_dataset_is_deterministic_and_has_the_trainer_columns() -> None:
    rows = seed_dataset(12, seed=5)
    assert rows.column_names == ["prompt", "fen", "answers", "kind", "task_id", "seed"]
    assert rows.to_list() == seed_dataset(12, seed=5).to_list()
    assert rows["task_id"] != seed_dataset(12, seed=6)["task_id"]
    assert len(set(rows["task_id"])) == 12
    by_id = {task.task_id: task for task in TASKS}
    for row in rows:
        task = by_id[row["task_id"]]
        assert (row["fen"], row["answers"], row["kind"]) == (
            task.fen,
            list(task.answers),
            task.kind,
        )
        assert [message["role"] for message in row["prompt"]] == ["user"]
        assert row["prompt"][0]["content"].endswith("\n\n")
        assert task.fen not in row["prompt"][0]["content"]


def test_seed_dataset_draws_again_once_the_kinds_run_out() -> None:
    count = len(_by_kind("mate_in_2"))
    rows = seed_dataset(count + 3, kinds=["mate_in_2"], seed=1)
    assert set(rows["kind"]) == {"mate_in_2"}
    assert set(rows["task_id"][:count]) == {task.task_id for task in _by_kind("mate_in_2")}


def test_seed_dataset_repeats_each_row_for_a_group() -> None:
    rows = seed_dataset(3, seed=2, group_size=4)
    assert len(rows) == 12
    single = seed_dataset(3, seed=2).to_list()
    assert rows.to_list() == [row for row in single for _ in range(4)]


def test_seed_dataset_can_show_the_position_in_the_prompt() -> None:
    rows = seed_dataset(4, seed=0, prompt_condition="default")
    for row in rows:
        assert f"FEN: {row['fen']}" in row["prompt"][0]["content"]
    blind = seed_dataset(4, seed=0, prompt_condition=PRESETS["textarena_blind"])
    assert all("FEN: " not in row["prompt"][0]["content"] for row in blind)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be a positive integer"),
        ({"n": 2, "kinds": ["mate_in_1", "checkers"]}, "kinds: 'checkers' is not one of"),
        ({"n": 2, "kinds": []}, "kinds: name at least one kind"),
        ({"n": 2, "prompt_condition": "fancy"}, "prompt_condition: 'fancy' is not one of"),
        ({"n": 2, "group_size": 0}, "group_size must be a positive integer"),
    ],
)
def test_seed_dataset_refuses_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        seed_dataset(**kwargs)  # type: ignore[arg-type]


# -- the builder --------------------------------------------------------------------------------


@needs_stockfish
@pytest.mark.stockfish
def test_build_writes_a_set_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    command = [sys.executable, "-m", "training.llm_rl.tasks", "build", "--out", str(out)]
    done = subprocess.run(
        [*command, "--count", "8", "--seed", "3", "--depth", "6"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote 8 tasks" in done.stderr
    tasks = load_tasks(path=out)
    assert [task.kind for task in tasks] == [kind for kind in TASK_KINDS for _ in range(2)]
    meta = json.loads((tmp_path / "tasks.meta.json").read_text(encoding="utf-8"))
    assert (meta["count"], meta["depth"], meta["seed"]) == (8, 6, 3)
    for task in tasks:
        assert set(task.answers) <= {move.uci() for move in task.board().legal_moves}


@needs_stockfish
@pytest.mark.stockfish
def test_build_is_deterministic() -> None:
    engine_path = shutil.which("stockfish") or "/usr/games/stockfish"
    with chess.engine.SimpleEngine.popen_uci(engine_path) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        first = build_tasks(4, engine, seed=11, depth=6, progress=False)
        second = build_tasks(4, engine, seed=11, depth=6, progress=False)
    assert first == second
    assert [task.kind for task in first] == list(TASK_KINDS)


def test_build_refuses_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="count must be a positive integer"):
        build_tasks(0, engine=None, seed=0)  # type: ignore[arg-type]
